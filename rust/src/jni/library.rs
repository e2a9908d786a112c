//! `dev.cuhandle.NativeApi`: libraries, kernels and launches. The Java `Library` owns the
//! pointer; a `Kernel` is only used while its library is open (enforced in Java).

use crate::core::error::Error;
use crate::core::handle::Handle;
use crate::core::launch::{self, LaunchShape};
use crate::core::library::Library;
use crate::jni::raw::{self, convert};
use crate::jni::throw::entry;
use jni::sys::{jbyteArray, jclass, jint, jlong, jobject, jstring};
use jni::EnvUnowned;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_libraryLoad<'l>(mut env: EnvUnowned<'l>, _c: jclass, image: jbyteArray) -> jlong {
    entry!(env, |e| {
        let bytes = convert::bytes(e.get_raw(), image)?;
        Ok(raw::give(Library::load(&bytes)?))
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
        let mut values = vec![kernel.raw as i64];
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
        convert::long_array(e.get_raw(), &library.param_sizes(kernel as _)?.encode())
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
        Ok(library.kernel_attribute(kernel as _, attribute, device)?)
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

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_launch<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, h: jlong, function: jlong,
    gx: jint, gy: jint, gz: jint, bx: jint, by: jint, bz: jint, shared: jint, slots: jlong, arg_count: jint,
) {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held by a Java Handle.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        let shape = LaunchShape { grid: [gx as u32, gy as u32, gz as u32], block: [bx as u32, by as u32, bz as u32], shared_bytes: shared as u32 };
        // SAFETY: `slots` is the address of the Java launch object's direct buffer, which holds
        // at least `arg_count` slots (checked in Java) and stays reachable during the call;
        // `function` is the kernel's function in this handle's context (Kernel.java keeps it per
        // context id) and its library is open (checked in Java).
        unsafe { launch::launch(handle, function as _, shape, slots as *mut u8, arg_count.max(0) as usize)? };
        Ok(())
    })
}
