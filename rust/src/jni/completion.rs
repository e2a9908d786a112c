//! `dev.cuhandle.NativeApi`: completion markers for `Handle.whenDone()` and the async copies.
//! The Java `Completions` thread owns every marker pointer and releases each exactly once.

use crate::core::completion::{self, Marker};
use crate::core::handle::Handle;
use crate::jni::raw::{self, convert};
use crate::jni::throw::entry;
use jni::sys::{jboolean, jclass, jlong, jobject};
use jni::EnvUnowned;
use std::time::Duration;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_markerRecord<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, id: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held (entered) by a Java Handle.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        Ok(raw::give(Marker::record(handle, id as u64)?))
    })
}

/// True when the marked work is done; throws CudaException when it failed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_markerQuery<'l>(mut env: EnvUnowned<'l>, _c: jclass, m: jlong) -> jboolean {
    // SAFETY: live marker pointer owned by the Java completion registry.
    entry!(env, |_e| Ok(unsafe { raw::borrow::<Marker>(m, "completion marker")? }.query()?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_markerRelease<'l>(mut env: EnvUnowned<'l>, _c: jclass, m: jlong) {
    entry!(env, |_e| {
        // SAFETY: the Java registry releases each marker once, after its last query.
        drop(unsafe { raw::take::<Marker>(m) });
        Ok(())
    })
}

/// Blocks up to `timeout_nanos` (no lock or array of Java held: rule L4) and returns the ids of
/// the markers whose host function ran meanwhile.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_markerAwait<'l>(mut env: EnvUnowned<'l>, _c: jclass, timeout_nanos: jlong) -> jobject {
    entry!(env, |e| {
        let ids = completion::await_signals(Duration::from_nanos(timeout_nanos.max(0) as u64));
        let values: Vec<i64> = ids.into_iter().map(|id| id as i64).collect();
        convert::long_array(e.get_raw(), &values)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_markerWake<'l>(mut env: EnvUnowned<'l>, _c: jclass) {
    entry!(env, |_e| {
        completion::wake();
        Ok(())
    })
}
