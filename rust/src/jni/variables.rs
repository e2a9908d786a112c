//! `dev.cuhandle.NativeApi`: a library's variables (rule K4). The Java `Library` is entered for
//! every call, so the library stays loaded while its variables are looked up or accessed.

use crate::core::context::Context;
use crate::core::handle::Handle;
use crate::core::library::Library;
use crate::core::variables::{self, Kind, Variable};
use crate::jni::raw::{self, convert};
use crate::jni::throw::{entry, JniResult};
use jni::sys::{jclass, jint, jlong, jobject, jstring};
use jni::EnvUnowned;

fn name(env: *mut jni::sys::JNIEnv, name: jstring) -> JniResult<String> {
    convert::string(env, name)?.ok_or_else(|| crate::core::error::Error::invalid_argument("the variable name is null").into())
}

/// [address, bytes] of a `__device__`/`__constant__` variable in the handle's context.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryGlobal<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, lib: jlong, variable: jstring) -> jobject {
    entry!(env, |e| {
        // SAFETY: live handle and library pointers held by Java objects inside their calls.
        let (handle, library) = unsafe { (raw::borrow::<Handle>(h, "handle")?, raw::borrow::<Library>(lib, "library")?) };
        let name = name(e.get_raw(), variable)?;
        let _scope = handle.activate()?;
        let v = variables::lookup(library, handle.context(), &name, Kind::PerContext)?;
        convert::long_array(e.get_raw(), &[v.address as i64, v.bytes as i64])
    })
}

/// [address, bytes] of a `__managed__` variable, looked up in the context current on the thread
/// or else the primary context of `device` (H1/H2), which is held for the call only.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryManaged<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong, device: jint, variable: jstring) -> jobject {
    entry!(env, |e| {
        // SAFETY: live library pointer held by a Java Library inside its call.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        let name = name(e.get_raw(), variable)?;
        let ctx = Context::current_or_primary(device)?;
        let _scope = ctx.activate()?;
        let v = variables::lookup(library, &ctx, &name, Kind::Managed)?;
        convert::long_array(e.get_raw(), &[v.address as i64, v.bytes as i64])
    })
}

fn variable(address: jlong, bytes: jlong) -> Variable {
    Variable { address: address as u64, bytes: usize::try_from(bytes).unwrap_or(0) }
}

/// Reads `len` bytes at `offset` of a managed variable as raw bits.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_managedRead<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong, address: jlong, bytes: jlong, offset: jlong, len: jint) -> jlong {
    entry!(env, |_e| {
        // SAFETY: the library is entered by Java for the call, so it (and the variable) stays loaded.
        unsafe { raw::borrow::<Library>(lib, "library")? };
        let offset = usize::try_from(offset).map_err(|_| crate::core::error::Error::invalid_argument("negative offset"))?;
        // SAFETY: (address, bytes) came from cuLibraryGetManaged of this library (ManagedVariable
        // holds nothing else); the library stays loaded for the call; synchronising with kernels
        // is the caller's documented duty.
        Ok(unsafe { variables::read_managed(variable(address, bytes), offset, len.max(0) as usize)? } as jlong)
    })
}

/// Writes the low `len` bytes of `value` at `offset` of a managed variable.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_managedWrite<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong, address: jlong, bytes: jlong, offset: jlong, len: jint, value: jlong) {
    entry!(env, |_e| {
        // SAFETY: as in managedRead.
        unsafe { raw::borrow::<Library>(lib, "library")? };
        let offset = usize::try_from(offset).map_err(|_| crate::core::error::Error::invalid_argument("negative offset"))?;
        // SAFETY: as in managedRead.
        unsafe { variables::write_managed(variable(address, bytes), offset, len.max(0) as usize, value as u64)? };
        Ok(())
    })
}
