//! `dev.cuhandle.NativeApi`: page-locking a direct ByteBuffer's memory on request
//! (`dev.cuhandle.HostRegistration`), so that its copies run at pinned speed with no staging.

use crate::core::error::Error;
use crate::core::handle::Handle;
use crate::core::host_registration::HostRegistration;
use crate::jni::raw;
use crate::jni::throw::entry;
use jni::sys::{jclass, jlong, jobject};
use jni::EnvUnowned;

/// Page-locks a direct ByteBuffer's memory; returns the registration, which Java keeps (with the
/// ByteBuffer) until it unregisters.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_hostRegister<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, direct: jobject) -> jlong {
    entry!(env, |e| {
        // SAFETY: live handle pointer held (entered) by a Java Handle.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        // SAFETY: `direct` checked non-null by Java; env is this thread's.
        let (ptr, capacity) = unsafe { raw::direct_buffer(e.get_raw(), direct) }.ok_or_else(|| Error::invalid_argument("the ByteBuffer is not a direct buffer"))?;
        let _scope = handle.activate()?;
        // SAFETY: the Java HostRegistration holds the ByteBuffer, and so its memory, until it
        // has unregistered.
        Ok(raw::give(unsafe { HostRegistration::register(handle.context(), ptr, capacity)? }))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_hostUnregister<'l>(mut env: EnvUnowned<'l>, _c: jclass, r: jlong) {
    entry!(env, |_e| {
        // SAFETY: Java calls this once per registration, after its last use.
        drop(unsafe { raw::take::<HostRegistration>(r) });
        Ok(())
    })
}
