//! `dev.cuhandle.NativeApi`: page-locking a direct ByteBuffer's memory on request
//! (`dev.cuhandle.HostRegistration`), so that its copies run at pinned speed with no staging.

use crate::core::error::Error;
use crate::core::host_registration::HostRegistration;
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{HandlePtr, RegistrationPtr};
use crate::jni::raw;
use jni::objects::{JByteBuffer, JClass};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn host_register(h: HandlePtr, direct: JByteBuffer) -> RegistrationPtr),
    native!(static raw fn host_unregister(r: RegistrationPtr)),
];

/// Page-locks a direct ByteBuffer's memory; returns the registration, which Java keeps (with the
/// ByteBuffer) until it unregisters.
fn host_register(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, direct: JByteBuffer<'_>) -> RegistrationPtr {
    entry!(env, |e| {
        let handle = h.get()?;
        // SAFETY: `direct` checked non-null by Java; env is this thread's.
        let (ptr, capacity) = unsafe { raw::direct_buffer(e.get_raw(), direct.as_raw()) }
            .ok_or_else(|| Error::invalid_argument("the ByteBuffer is not a direct buffer"))?;
        let _scope = handle.activate()?;
        // SAFETY: the Java HostRegistration holds the ByteBuffer, and so its memory, until it
        // has unregistered.
        Ok(RegistrationPtr::give(unsafe { HostRegistration::register(handle.context(), ptr, capacity)? }))
    })
}

/// Called once per registration, after its last use.
fn host_unregister(env: EnvUnowned<'_>, _: JClass<'_>, r: RegistrationPtr) {
    entry!(env, |_e| r.release())
}
