//! `dev.cuhandle.NativeApi`: completion markers for `Handle.whenDone()` and the async copies.
//! The Java `Completions` thread owns every marker pointer and releases each exactly once.

use crate::core::completion::{self, Marker};
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{HandlePtr, MarkerPtr};
use crate::jni::raw::convert;
use jni::objects::{JClass, JLongArray};
use jni::sys::{jboolean, jlong};
use jni::{EnvUnowned, NativeMethod};
use std::time::Duration;

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn marker_record(h: HandlePtr, id: jlong) -> MarkerPtr),
    native!(static raw fn marker_query(m: MarkerPtr) -> jboolean),
    native!(static raw fn marker_release(m: MarkerPtr)),
    native!(static raw fn marker_await(timeout_nanos: jlong) -> jlong[]),
    native!(static raw fn marker_wake()),
];

fn marker_record(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, id: jlong) -> MarkerPtr {
    entry!(env, |_e| Ok(MarkerPtr::give(Marker::record(h.get()?, id as u64)?)))
}

/// True when the marked work is done; throws CudaException when it failed.
fn marker_query(env: EnvUnowned<'_>, _: JClass<'_>, m: MarkerPtr) -> jboolean {
    entry!(env, |_e| Ok(m.get()?.query()?))
}

/// Called once per marker, after its last query.
fn marker_release(env: EnvUnowned<'_>, _: JClass<'_>, m: MarkerPtr) {
    entry!(env, |_e| m.release())
}

/// Blocks up to `timeout_nanos` (no lock or array of Java held: rule L4) and returns the ids of
/// the markers whose host function ran meanwhile.
fn marker_await<'l>(env: EnvUnowned<'l>, _: JClass<'l>, timeout_nanos: jlong) -> JLongArray<'l> {
    entry!(env, |e| {
        let ids = completion::await_signals(Duration::from_nanos(timeout_nanos.max(0) as u64));
        let values: Vec<i64> = ids.into_iter().map(|id| id as i64).collect();
        convert::long_array(e, &values)
    })
}

fn marker_wake(env: EnvUnowned<'_>, _: JClass<'_>) {
    entry!(env, |_e| {
        completion::wake();
        Ok(())
    })
}
