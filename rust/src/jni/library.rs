//! `dev.cuhandle.NativeApi`: libraries and kernels (launches: `jni/launch.rs`). The Java `Library` owns the
//! pointer; a `Kernel` is only used while its library is open (enforced in Java), so a kernel
//! passed back from Java is a kernel of a loaded library.

use crate::core::context::Context;
use crate::core::error::Error;
use crate::core::launch;
use crate::core::library::{KernelRef, Library, LoadOptions};
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{HandlePtr, LibraryPtr};
use crate::jni::raw::convert;
use jni::objects::{JByteArray, JClass, JLongArray, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn library_load(image: jbyte[], optimization_level: jint, max_registers: jint, log_verbose: jboolean, binary_is_preserved: jboolean) -> LibraryPtr),
    native!(static raw fn library_load_file(path: JString, optimization_level: jint, max_registers: jint, log_verbose: jboolean) -> LibraryPtr),
    native!(static raw fn library_info_log(lib: LibraryPtr) -> JString),
    native!(static raw fn library_unload(lib: LibraryPtr)),
    native!(static raw fn kernel_get(lib: LibraryPtr, name: JString) -> jlong[]),
    native!(static raw fn kernel_param_sizes(h: HandlePtr, lib: LibraryPtr, kernel: jlong) -> jlong[]),
    native!(static raw fn kernel_param_sizes_on(lib: LibraryPtr, kernel: jlong, device: jint) -> jlong[]),
    native!(static raw fn kernel_set_attribute(lib: LibraryPtr, kernel: jlong, attribute: jint, value: jint, device: jint)),
    native!(static raw fn library_kernel_names(lib: LibraryPtr) -> JString[]),
    native!(static raw fn kernel_attribute(lib: LibraryPtr, kernel: jlong, attribute: jint, device: jint) -> jint),
    native!(static raw fn kernel_function(h: HandlePtr, kernel: jlong) -> jlong),
];

/// Load options as Java encodes them: optimisation level and max registers (-1: the driver's
/// default), log verbose and binary preserved.
fn load_options(level: jint, registers: jint, verbose: jboolean, preserved: jboolean) -> Result<LoadOptions, Error> {
    let optional = |v: jint, what: &str| match v {
        -1 => Ok(None),
        v => u32::try_from(v).map(Some).map_err(|_| Error::invalid_argument(format!("{what} {v} is negative"))),
    };
    let options = LoadOptions {
        optimization_level: optional(level, "JIT optimization level")?,
        max_registers: optional(registers, "JIT max registers")?,
        log_verbose: verbose,
        binary_is_preserved: preserved,
    };
    options.check()?;
    Ok(options)
}

/// A kernel the Java `Kernel` passes back: it came from `kernelGet` of a library the Java caller
/// holds open for the call.
fn kernel_of(kernel: jlong) -> KernelRef {
    // SAFETY: as said above: a kernel of a library that stays loaded for the call.
    unsafe { KernelRef::from_raw(kernel as _) }
}

fn library_load(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    image: JByteArray<'_>,
    level: jint,
    registers: jint,
    verbose: jboolean,
    preserved: jboolean,
) -> LibraryPtr {
    entry!(env, |e| {
        let options = load_options(level, registers, verbose, preserved)?;
        Ok(LibraryPtr::give(Library::load_with(&convert::bytes(e, &image)?, &options)?))
    })
}

fn library_load_file(env: EnvUnowned<'_>, _: JClass<'_>, path: JString<'_>, level: jint, registers: jint, verbose: jboolean) -> LibraryPtr {
    entry!(env, |e| {
        let options = load_options(level, registers, verbose, false)?;
        let path = convert::string(e, &path)?.ok_or_else(|| Error::invalid_argument("the module file path is null"))?;
        Ok(LibraryPtr::give(Library::load_file(std::path::Path::new(&path), &options)?))
    })
}

fn library_info_log<'l>(env: EnvUnowned<'l>, _: JClass<'l>, lib: LibraryPtr) -> JString<'l> {
    entry!(env, |e| convert::new_string(e, &lib.get()?.info_log()))
}

/// Called once, after every launch of the library's kernels returned.
fn library_unload(env: EnvUnowned<'_>, _: JClass<'_>, lib: LibraryPtr) {
    entry!(env, |_e| lib.release_with(Library::unload))
}

/// [raw CUkernel, parameter count (-1 unsupported, -2 known only with a context), sizes...]
fn kernel_get<'l>(env: EnvUnowned<'l>, _: JClass<'l>, lib: LibraryPtr, name: JString<'l>) -> JLongArray<'l> {
    entry!(env, |e| {
        let name = convert::string(e, &name)?.ok_or_else(|| Error::invalid_argument("the kernel name is null"))?;
        let kernel = lib.get()?.kernel(&name)?;
        let mut values = vec![kernel.kernel.raw() as i64];
        values.extend(kernel.param_sizes.encode());
        convert::long_array(e, &values)
    })
}

/// Parameter sizes probed in the handle's context: [count, sizes...] or [-1] if unsupported.
fn kernel_param_sizes<'l>(env: EnvUnowned<'l>, _: JClass<'l>, h: HandlePtr, lib: LibraryPtr, kernel: jlong) -> JLongArray<'l> {
    entry!(env, |e| {
        let (handle, library) = (h.get()?, lib.get()?);
        let _scope = handle.activate()?;
        convert::long_array(e, &library.param_sizes(kernel_of(kernel))?.encode())
    })
}

/// Parameter sizes probed in the context current on this thread, else the primary context of
/// `device` (as `libraryManaged` does): [count, sizes...] or [-1] if unsupported.
fn kernel_param_sizes_on<'l>(env: EnvUnowned<'l>, _: JClass<'l>, lib: LibraryPtr, kernel: jlong, device: jint) -> JLongArray<'l> {
    entry!(env, |e| {
        let library = lib.get()?;
        let ctx = Context::current_or_primary(device)?;
        let _scope = ctx.activate()?;
        convert::long_array(e, &library.param_sizes(kernel_of(kernel))?.encode())
    })
}

fn kernel_set_attribute(env: EnvUnowned<'_>, _: JClass<'_>, lib: LibraryPtr, kernel: jlong, attribute: jint, value: jint, device: jint) {
    entry!(env, |_e| Ok(lib.get()?.set_kernel_attribute(kernel_of(kernel), attribute, value, device)?))
}

fn library_kernel_names<'l>(env: EnvUnowned<'l>, _: JClass<'l>, lib: LibraryPtr) -> JObjectArray<'l, JString<'l>> {
    entry!(env, |e| match lib.get()?.kernel_names() {
        Some(names) => convert::string_array(e, &names),
        None => Ok(JObjectArray::default()),
    })
}

fn kernel_attribute(env: EnvUnowned<'_>, _: JClass<'_>, lib: LibraryPtr, kernel: jlong, attribute: jint, device: jint) -> jint {
    entry!(env, |_e| Ok(lib.get()?.kernel_attribute(kernel_of(kernel), attribute, device)?))
}

/// The kernel's function in the handle's context, for the Java Kernel to cache per context id.
fn kernel_function(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, kernel: jlong) -> jlong {
    entry!(env, |_e| Ok(launch::function(h.get()?, kernel_of(kernel).raw())? as jlong))
}
