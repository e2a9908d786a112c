//! `dev.cuhandle.NativeApi`: handle entry points. The Java `Handle` owns the pointer and
//! guarantees no call is in flight when it calls `handleDestroy`.

use crate::core::context::{Context, Ownership};
use crate::core::handle::Handle;
use crate::jni::raw::{self, convert};
use crate::jni::throw::entry;
use jni::sys::{jclass, jint, jlong, jobject};
use jni::EnvUnowned;

fn create(ctx: Context) -> crate::jni::throw::JniResult<jlong> {
    Ok(raw::give(Handle::new(ctx)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_handleCreateCurrent<'l>(mut env: EnvUnowned<'l>, _c: jclass, default_device: jint) -> jlong {
    entry!(env, |_e| create(Context::current_or_primary(default_device)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_handleCreateDevice<'l>(mut env: EnvUnowned<'l>, _c: jclass, device: jint) -> jlong {
    entry!(env, |_e| create(Context::primary(device)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_handleWrap<'l>(mut env: EnvUnowned<'l>, _c: jclass, raw_context: jlong) -> jlong {
    // SAFETY: `Handle.wrap` documents that the caller passes a CUcontext it keeps alive (rule H3);
    // values no context can have are refused by `wrap` before the driver sees them.
    entry!(env, |_e| create(unsafe { Context::wrap(raw_context as _)? }))
}

/// [raw context, context id, device ordinal, 1 if the primary context is retained]
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_handleInfo<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong) -> jobject {
    entry!(env, |e| {
        // SAFETY: `h` is a live handle pointer held by a Java Handle (see module doc).
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        let ctx = handle.context();
        let values = [ctx.raw() as i64, ctx.id() as i64, handle.device().ordinal as i64, (ctx.ownership() == Ownership::RetainedPrimary) as i64];
        convert::long_array(e.get_raw(), &values)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_handleDestroy<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong) {
    entry!(env, |_e| {
        // SAFETY: the Java Handle calls this once, after the last call in flight has returned.
        if let Some(handle) = unsafe { raw::take::<Handle>(h) } {
            handle.destroy();
        }
        Ok(())
    })
}

macro_rules! handle_call {
    ($name:ident, |$h:ident $(, $arg:ident : $ty:ty)*| -> $ret:ty $body:block) => {
        #[unsafe(no_mangle)]
        pub extern "system" fn $name<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong $(, $arg: $ty)*) -> $ret {
            entry!(env, |_e| {
                // SAFETY: `h` is a live handle pointer held by a Java Handle (see module doc).
                let $h = unsafe { raw::borrow::<Handle>(h, "handle")? };
                $body
            })
        }
    };
}

handle_call!(Java_dev_cuhandle_NativeApi_handleSynchronize, |h| -> () { Ok(h.synchronize()?) });
handle_call!(Java_dev_cuhandle_NativeApi_handleMakeCurrent, |h| -> () { Ok(h.make_current()?) });
handle_call!(Java_dev_cuhandle_NativeApi_handleSetStream, |h, stream: jlong| -> () { Ok(h.set_stream(stream as usize)?) });
handle_call!(Java_dev_cuhandle_NativeApi_handleResetStream, |h| -> () { Ok(h.reset_stream()?) });
handle_call!(Java_dev_cuhandle_NativeApi_handleStream, |h| -> jlong { Ok(h.raw_stream()? as jlong) });
handle_call!(Java_dev_cuhandle_NativeApi_handleFreeMemory, |h| -> jlong { Ok(h.free_memory()? as jlong) });
handle_call!(Java_dev_cuhandle_NativeApi_handleValidate, |h| -> () { Ok(h.context().validate()?) });

/// [bytes handed out by the pool, bytes the pool holds, pinned bytes cached, 1 if stream-ordered]
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_handleMemoryStats<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong) -> jobject {
    entry!(env, |e| {
        // SAFETY: `h` is a live handle pointer held by a Java Handle (see module doc).
        let stats = unsafe { raw::borrow::<Handle>(h, "handle")? }.memory_stats()?;
        let clamp = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        convert::long_array(e.get_raw(), &[clamp(stats.pool.used), clamp(stats.pool.reserved), clamp(stats.pinned_cached), stats.stream_ordered as i64])
    })
}

handle_call!(Java_dev_cuhandle_NativeApi_handleTrimMemory, |h| -> () { Ok(h.trim_memory()?) });
