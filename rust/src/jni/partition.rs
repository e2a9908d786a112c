//! `dev.cuhandle.NativeApi`: SM partitions (green contexts). The Java `SmPartitions` owns the
//! partition pointers and releases each once; a handle created on one holds the partition itself.

use crate::core::error::Error;
use crate::core::green_context::SplitRequest;
use crate::core::partition::{self, Partitions};
use crate::jni::entry::{entry, entry_without_env};
use crate::jni::java_arrays;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::PartitionPtr;
use crate::jni::raw::convert;
use crate::jni::throw::JniResult;
use jni::objects::{JClass, JIntArray, JLongArray, JString};
use jni::sys::jint;
use jni::{Env, EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn partition_support(ordinal: jint) -> JString),
    native!(static raw fn partition_split_parts(ordinal: jint, parts: jint) -> jlong[]),
    native!(static raw fn partition_split_counts(ordinal: jint, counts: jint[]) -> jlong[]),
    native!(static raw fn partition_release(p: PartitionPtr)),
    native!(static raw fn handle_create_partition(p: PartitionPtr, created: jlong[])),
];

/// "" when device `ordinal` can be split into SM partitions, else why not.
fn partition_support<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint) -> JString<'l> {
    entry!(env, |e| {
        let reason = match partition::support(ordinal) {
            Ok(()) => String::new(),
            Err(e) => e.to_string(),
        };
        convert::new_string(e, &reason)
    })
}

/// [device SMs, smallest partition, SMs left over, partition count, then per partition: pointer,
/// SMs, context id]
fn split_result<'l>(e: &Env<'l>, split: Partitions) -> JniResult<JLongArray<'l>> {
    let mut values = vec![split.device_sms as i64, split.min_sms as i64, split.remainder_sms as i64, split.parts.len() as i64];
    for part in split.parts {
        let (sms, id) = (part.sms() as i64, part.own_context().id() as i64);
        values.extend([PartitionPtr::give(part).into_address(), sms, id]);
    }
    convert::long_array(e, &values)
}

fn partition_split_parts<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint, parts: jint) -> JLongArray<'l> {
    entry!(env, |e| {
        let parts =
            u32::try_from(parts).map_err(|_| Error::invalid_argument(format!("{parts} SM partitions asked for; expected at least 1")))?;
        split_result(e, partition::split(ordinal, SplitRequest::Parts(parts))?)
    })
}

fn partition_split_counts<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint, counts: JIntArray<'l>) -> JLongArray<'l> {
    entry!(env, |e| {
        let counts = java_arrays::ints(e, &counts, "the SM counts")?;
        let counts = counts
            .iter()
            .map(|&c| u32::try_from(c).map_err(|_| Error::invalid_argument(format!("SM count {c} is negative; expected at least 1"))))
            .collect::<Result<Vec<u32>, Error>>()?;
        split_result(e, partition::split(ordinal, SplitRequest::Counts(&counts))?)
    })
}

/// Called once by the Java SmPartitions per partition; handles made on it keep it alive.
fn partition_release(env: EnvUnowned<'_>, _: JClass<'_>, p: PartitionPtr) {
    entry!(env, |_e| p.release())
}

/// A handle on the partition, written into `created` as `handle::create_into` writes it.
fn handle_create_partition(env: EnvUnowned<'_>, _: JClass<'_>, p: PartitionPtr, created: JLongArray<'_>) {
    let raw = env.as_raw();
    entry_without_env!(env, || crate::jni::handle::create_into(raw, created.as_raw(), p.get()?.context()?))
}
