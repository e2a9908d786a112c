//! `dev.cuhandle.NativeApi`: libraries, kernels and launches. The Java `Library` owns the
//! pointer; a `Kernel` is only used while its library is open (enforced in Java).

use crate::core::error::Error;
use crate::core::handle::Handle;
use crate::core::driver::launch_config::LaunchShape;
use crate::core::launch;
use crate::core::context::Context;
use crate::core::library::{KernelRef, Library, LoadOptions};
use crate::core::memory::DeviceMemory;
use crate::core::streams::StreamUse;
use crate::jni::raw::{self, convert};
use crate::jni::throw::entry;
use jni::sys::{jboolean, jbyteArray, jclass, jint, jlong, jobject, jstring};
use jni::EnvUnowned;

/// Load options as Java encodes them: optimisation level and max registers (-1: the driver's
/// default), log verbose and binary preserved (0 or 1).
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

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryLoad<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, image: jbyteArray, level: jint, registers: jint, verbose: jboolean, preserved: jboolean,
) -> jlong {
    entry!(env, |e| {
        let options = load_options(level, registers, verbose, preserved)?;
        let bytes = convert::bytes(e.get_raw(), image)?;
        Ok(raw::give(Library::load_with(&bytes, &options)?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryLoadFile<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, path: jstring, level: jint, registers: jint, verbose: jboolean,
) -> jlong {
    entry!(env, |e| {
        let options = load_options(level, registers, verbose, false)?;
        let path = convert::string(e.get_raw(), path)?.ok_or_else(|| Error::invalid_argument("the module file path is null"))?;
        Ok(raw::give(Library::load_file(std::path::Path::new(&path), &options)?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryInfoLog<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong) -> jstring {
    entry!(env, |e| {
        // SAFETY: live library pointer held by a Java Library inside its call.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        convert::new_string(e.get_raw(), &library.info_log())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryUnload<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong) {
    entry!(env, |_e| {
        // SAFETY: Java calls this once, after every launch of the library's kernels returned.
        if let Some(library) = unsafe { raw::take::<Library>(lib) } {
            library.unload();
        }
        Ok(())
    })
}

/// [raw CUkernel, parameter count (-1 unsupported, -2 known only with a context), sizes...]
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_kernelGet<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong, name: jstring) -> jobject {
    entry!(env, |e| {
        // SAFETY: live library pointer held by a Java Library.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        let name = convert::string(e.get_raw(), name)?.ok_or_else(|| Error::invalid_argument("the kernel name is null"))?;
        let kernel = library.kernel(&name)?;
        let mut values = vec![kernel.kernel.raw() as i64];
        values.extend(kernel.param_sizes.encode());
        convert::long_array(e.get_raw(), &values)
    })
}

/// Parameter sizes probed in the handle's context: [count, sizes...] or [-1] if unsupported.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_kernelParamSizes<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, lib: jlong, kernel: jlong) -> jobject {
    entry!(env, |e| {
        // SAFETY: live handle and library pointers held by Java objects inside their calls.
        let (handle, library) = unsafe { (raw::borrow::<Handle>(h, "handle")?, raw::borrow::<Library>(lib, "library")?) };
        let _scope = handle.activate()?;
        // SAFETY: `kernel` came from this library, which the Java caller holds open.
        convert::long_array(e.get_raw(), &library.param_sizes(unsafe { KernelRef::from_raw(kernel as _) })?.encode())
    })
}

/// Parameter sizes probed in the context current on this thread, else the primary context of
/// `device` (as `libraryManaged` does): [count, sizes...] or [-1] if unsupported.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_kernelParamSizesOn<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong, kernel: jlong, device: jint) -> jobject {
    entry!(env, |e| {
        // SAFETY: live library pointer held by a Java Library inside its call.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        let ctx = Context::current_or_primary(device)?;
        let _scope = ctx.activate()?;
        // SAFETY: `kernel` came from this library, which the Java caller holds open.
        convert::long_array(e.get_raw(), &library.param_sizes(unsafe { KernelRef::from_raw(kernel as _) })?.encode())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_kernelSetAttribute<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, lib: jlong, kernel: jlong, attribute: jint, value: jint, device: jint,
) {
    entry!(env, |_e| {
        // SAFETY: live library pointer; the kernel came from it.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        // SAFETY: as above.
        Ok(library.set_kernel_attribute(unsafe { KernelRef::from_raw(kernel as _) }, attribute, value, device)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryKernelNames<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong) -> jobject {
    entry!(env, |e| {
        // SAFETY: live library pointer held by a Java Library.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        match library.kernel_names() {
            Some(names) => convert::string_array(e.get_raw(), &names),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_kernelAttribute<'l>(mut env: EnvUnowned<'l>, _c: jclass, lib: jlong, kernel: jlong, attribute: jint, device: jint) -> jint {
    entry!(env, |_e| {
        // SAFETY: live library pointer; the kernel came from it.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        // SAFETY: as above.
        Ok(library.kernel_attribute(unsafe { KernelRef::from_raw(kernel as _) }, attribute, device)?)
    })
}

/// The kernel's function in the handle's context, for the Java Kernel to cache per context id.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_kernelFunction<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, kernel: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held by a Java Handle; `kernel` belongs to a library the
        // Java caller holds open.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        Ok(launch::function(handle, kernel as _)? as jlong)
    })
}

/// Grid, block and dynamic shared memory as Java passes them (checked there), without launch
/// attributes; user kernels are never dependent launches (they need not wait with
/// griddepcontrol.wait).
fn plain_shape(grid: [jint; 3], block: [jint; 3], shared: jint) -> LaunchShape {
    LaunchShape { grid: grid.map(|v| v as u32), block: block.map(|v| v as u32), shared_bytes: shared as u32, ..LaunchShape::linear(1, 1) }
}

/// The most blocks per cluster of `function` with this configuration; -1 where the driver cannot say.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_kernelMaxClusterSize<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, h: jlong, function: jlong, gx: jint, gy: jint, gz: jint, bx: jint, by: jint, bz: jint, shared: jint,
) -> jint {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held by a Java Handle inside its call.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        let shape = plain_shape([gx, gy, gz], [bx, by, bz], shared);
        Ok(launch::max_cluster_size(handle, function as _, &shape)?.map_or(-1, |blocks| blocks.min(i32::MAX as u32) as jint))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_launch<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, h: jlong, function: jlong,
    gx: jint, gy: jint, gz: jint, bx: jint, by: jint, bz: jint, shared: jint, params: jlong, arg_count: jint,
    cooperative: jboolean, cx: jint, cy: jint, cz: jint, memory: jlong, memory_count: jint, lib: jlong,
) {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held by a Java Handle.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        let shape = LaunchShape { cooperative, cluster: [cx as u32, cy as u32, cz as u32], ..plain_shape([gx, gy, gz], [bx, by, bz], shared) };
        // SAFETY: `params` is the address of the pointer array in the Java launch object's direct
        // buffer: each of its first `arg_count` entries points at that argument's bytes inside the
        // same buffer (KernelLaunch writes them), which stays reachable during the call; `function`
        // is the kernel's function in this handle's context (Kernel.java keeps it per context id)
        // and its library is open (checked in Java).
        // `memory` is the address of `memory_count` native DeviceMemory pointers in the same direct
        // buffer: the buffer arguments, each entered (held open) by the Java caller for the call.
        // SAFETY: as said; KernelLaunch writes the list before the call and not during it.
        let buffers = unsafe { raw::pointer_list(memory, memory_count, launch::MAX_KERNEL_ARGS)? };
        // SAFETY: the library of the kernel, held open (entered) by the Java launch for the call.
        let library = unsafe { raw::borrow::<Library>(lib, "library")? };
        let before_queuing = |on: &StreamUse| -> crate::core::error::Result<()> {
            library.uses().note(handle.context(), on);
            for &b in buffers {
                // SAFETY: live buffer pointers held by entered Java DeviceBuffers (see above).
                let buffer = unsafe { raw::borrow::<DeviceMemory>(b, "device buffer") }.map_err(|_| crate::core::error::Error::invalid_state("a buffer argument is not a live device buffer"))?;
                buffer.before_use(on)?;
            }
            Ok(())
        };
        // SAFETY: as above.
        unsafe { launch::launch(handle, function as _, shape, params as *mut *mut std::ffi::c_void, arg_count.max(0) as usize, before_queuing)? };
        Ok(())
    })
}
