//! `dev.cuhandle.NativeApi`: handle entry points. The Java `Handle` owns the pointer and
//! guarantees no call is in flight when it calls `handleDestroy`. Every entry whose body needs no
//! `Env` runs through `entry_without_env!`, which spares it jni's attach guard (25-40 ns a call,
//! docs/performance-notes.md, "Activation").

use crate::core::context::{Context, Ownership};
use crate::core::handle::Handle;
use crate::jni::entry::{entry, entry_without_env};
use crate::jni::native_entry::native;
use crate::jni::native_ptr::HandlePtr;
use crate::jni::raw::convert;
use crate::jni::throw::JniResult;
use jni::objects::{JClass, JLongArray};
use jni::sys::{jint, jlong, jlongArray, JNIEnv};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn handle_create_current(default_device: jint, created: jlong[])),
    native!(static raw fn handle_create_device(device: jint, created: jlong[])),
    native!(static raw fn handle_wrap(raw_context: jlong, created: jlong[])),
    native!(static raw fn handle_destroy(h: HandlePtr)),
    native!(static raw fn handle_synchronize(h: HandlePtr)),
    native!(static raw fn handle_make_current(h: HandlePtr)),
    native!(static raw fn handle_set_stream(h: HandlePtr, stream: jlong)),
    native!(static raw fn handle_reset_stream(h: HandlePtr)),
    native!(static raw fn handle_stream(h: HandlePtr) -> jlong),
    native!(static raw fn handle_validate(h: HandlePtr)),
    native!(static raw fn handle_free_memory(h: HandlePtr) -> jlong),
    native!(static raw fn handle_memory_stats(h: HandlePtr) -> jlong[]),
    native!(static raw fn handle_trim_memory(h: HandlePtr)),
];

/// How many values a create writes into the `long[]` the Java `Handle` passes it: [native pointer,
/// raw context, context id, device ordinal, 1 if the primary context is retained, the SMs of the
/// handle's SM partition (0: not a partition)].
const CREATED_VALUES: usize = 6;

/// A new handle on `ctx`, written into `created` (a `long[CREATED_VALUES]` the Java `Handle` made)
/// in one call: a second call for the properties cost a JNI transition per create. The body needs no
/// `Env`, so the creates run through `entry_without_env!`, and the only JNI functions they call are
/// the region write and its check, where a `long[]` made by `NewLongArray` under jni's attach guard
/// cost more (issue 35, docs/performance-notes.md). If the write fails, the handle is destroyed here
/// and the JVM's exception thrown.
pub(crate) fn create_into(env: *mut JNIEnv, created: jlongArray, ctx: Context) -> JniResult<()> {
    let handle = Handle::new(ctx)?;
    let ctx = handle.context();
    let properties = [
        ctx.raw() as i64,
        ctx.id() as i64,
        handle.device().ordinal as i64,
        (ctx.ownership() == Ownership::RetainedPrimary) as i64,
        ctx.partition_sms().unwrap_or(0) as i64,
    ];
    let address = HandlePtr::give(handle).into_address();
    let mut values = [address; CREATED_VALUES];
    values[1..].copy_from_slice(&properties);
    // SAFETY: `env` is the JNIEnv the entry received, on this thread, and `created` its long[]
    // argument (a local reference, or null, which is refused).
    unsafe { convert::write_longs(env, created, &values) }.inspect_err(|_| {
        // SAFETY: the address `give` made just now, which never reached Java: this is its one release.
        let never_given = unsafe { HandlePtr::from_address(address) };
        let _ = never_given.release_with(Handle::destroy);
    })
}

fn handle_create_current(env: EnvUnowned<'_>, _: JClass<'_>, default_device: jint, created: JLongArray<'_>) {
    let raw = env.as_raw();
    entry_without_env!(env, || create_into(raw, created.as_raw(), Context::current_or_primary(default_device)?))
}

fn handle_create_device(env: EnvUnowned<'_>, _: JClass<'_>, device: jint, created: JLongArray<'_>) {
    let raw = env.as_raw();
    entry_without_env!(env, || create_into(raw, created.as_raw(), Context::primary(device)?))
}

fn handle_wrap(env: EnvUnowned<'_>, _: JClass<'_>, raw_context: jlong, created: JLongArray<'_>) {
    let raw = env.as_raw();
    // SAFETY: `Handle.wrap` documents that the caller passes a CUcontext it keeps alive (rule H3);
    // values no context can have are refused by `wrap` before the driver sees them.
    entry_without_env!(env, || create_into(raw, created.as_raw(), unsafe { Context::wrap(raw_context as _)? }))
}

/// Called once by the Java Handle, after the last call in flight has returned.
fn handle_destroy(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry_without_env!(env, || h.release_with(Handle::destroy))
}

fn handle_synchronize(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry_without_env!(env, || Ok(h.get()?.synchronize()?))
}

fn handle_make_current(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry_without_env!(env, || Ok(h.get()?.make_current()?))
}

fn handle_set_stream(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, stream: jlong) {
    entry_without_env!(env, || Ok(h.get()?.set_stream(stream as usize)?))
}

fn handle_reset_stream(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry_without_env!(env, || Ok(h.get()?.reset_stream()?))
}

fn handle_stream(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) -> jlong {
    entry_without_env!(env, || Ok(h.get()?.raw_stream()? as jlong))
}

fn handle_validate(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry_without_env!(env, || Ok(h.get()?.context().validate()?))
}

fn handle_free_memory(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) -> jlong {
    entry_without_env!(env, || Ok(h.get()?.free_memory()? as jlong))
}

/// [bytes handed out by the pool, bytes the pool holds, pinned bytes cached, 1 if stream-ordered]
fn handle_memory_stats<'l>(env: EnvUnowned<'l>, _: JClass<'l>, h: HandlePtr) -> JLongArray<'l> {
    entry!(env, |e| {
        let stats = h.get()?.memory_stats()?;
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        convert::long_array(
            e,
            &[clamp(stats.pool.used), clamp(stats.pool.reserved), clamp(stats.pinned_cached), stats.stream_ordered as i64],
        )
    })
}

fn handle_trim_memory(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry_without_env!(env, || Ok(h.get()?.trim_memory()?))
}
