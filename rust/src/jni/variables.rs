//! `dev.cuhandle.NativeApi`: a library's variables (rule K4). The Java `Library` is entered for
//! every call, so the library stays loaded while its variables are looked up or accessed.

use crate::core::context::Context;
use crate::core::error::Error;
use crate::core::variables::{self, Kind, Variable};
use crate::jni::buffer::size;
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{HandlePtr, LibraryPtr};
use crate::jni::raw::convert;
use crate::jni::throw::JniResult;
use jni::objects::{JClass, JLongArray, JString};
use jni::sys::{jint, jlong};
use jni::{Env, EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn library_global(h: HandlePtr, lib: LibraryPtr, name: JString) -> jlong[]),
    native!(static raw fn library_managed(lib: LibraryPtr, device: jint, name: JString) -> jlong[]),
    native!(static raw fn managed_read(lib: LibraryPtr, address: jlong, bytes: jlong, offset: jlong, length: jint) -> jlong),
    native!(static raw fn managed_write(lib: LibraryPtr, address: jlong, bytes: jlong, offset: jlong, length: jint, value: jlong)),
];

fn name(env: &Env<'_>, name: &JString<'_>) -> JniResult<String> {
    convert::string(env, name)?.ok_or_else(|| Error::invalid_argument("the variable name is null").into())
}

/// [address, bytes] of a `__device__`/`__constant__` variable in the handle's context.
fn library_global<'l>(env: EnvUnowned<'l>, _: JClass<'l>, h: HandlePtr, lib: LibraryPtr, variable: JString<'l>) -> JLongArray<'l> {
    entry!(env, |e| {
        let (handle, library, name) = (h.get()?, lib.get()?, name(e, &variable)?);
        let _scope = handle.activate()?;
        let v = variables::lookup(library, handle.context(), &name, Kind::PerContext)?;
        convert::long_array(e, &[v.address as i64, v.bytes as i64])
    })
}

/// [address, bytes] of a `__managed__` variable, looked up in the context current on the thread
/// or else the primary context of `device` (H1/H2), which is held for the call only.
fn library_managed<'l>(env: EnvUnowned<'l>, _: JClass<'l>, lib: LibraryPtr, device: jint, variable: JString<'l>) -> JLongArray<'l> {
    entry!(env, |e| {
        let (library, name) = (lib.get()?, name(e, &variable)?);
        let ctx = Context::current_or_primary(device)?;
        let _scope = ctx.activate()?;
        let v = variables::lookup(library, &ctx, &name, Kind::Managed)?;
        convert::long_array(e, &[v.address as i64, v.bytes as i64])
    })
}

/// A managed variable as `ManagedVariable` passes it: (address, bytes) from `libraryManaged` of
/// the library the Java caller holds open (so the variable stays loaded), and an offset into it.
fn managed(lib: &LibraryPtr, address: jlong, bytes: jlong, offset: jlong) -> JniResult<(Variable, usize)> {
    lib.get()?;
    Ok((Variable { address: address as u64, bytes: usize::try_from(bytes).unwrap_or(0) }, size(offset, "the offset")?))
}

/// Reads `length` bytes at `offset` of a managed variable as raw bits.
fn managed_read(env: EnvUnowned<'_>, _: JClass<'_>, lib: LibraryPtr, address: jlong, bytes: jlong, offset: jlong, length: jint) -> jlong {
    entry!(env, |_e| {
        let (variable, offset) = managed(&lib, address, bytes, offset)?;
        // SAFETY: the variable came from cuLibraryGetManaged of this library, which stays loaded
        // for the call (see `managed`); synchronising with kernels is the caller's documented duty.
        Ok(unsafe { variables::read_managed(variable, offset, length.max(0) as usize)? } as jlong)
    })
}

/// Writes the low `length` bytes of `value` at `offset` of a managed variable.
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn managed_write(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    lib: LibraryPtr,
    address: jlong,
    bytes: jlong,
    offset: jlong,
    length: jint,
    value: jlong,
) {
    entry!(env, |_e| {
        let (variable, offset) = managed(&lib, address, bytes, offset)?;
        // SAFETY: as in managed_read.
        unsafe { variables::write_managed(variable, offset, length.max(0) as usize, value as u64)? };
        Ok(())
    })
}
