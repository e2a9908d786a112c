//! `dev.cuhandle.NativeTestApi`: entry points for the test suite only (raw contexts, resets,
//! a deliberate panic). They are part of the library so that the GPU suite needs no other
//! native code; the Java class that declares them is in the test sources.

use crate::core::context;
use crate::core::driver;
use crate::jni::throw::entry;
use jni::sys::{jclass, jint, jlong, jstring};
use jni::EnvUnowned;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_panic<'l>(mut env: EnvUnowned<'l>, _c: jclass, message: jstring) -> jint {
    entry!(env, |e| {
        let text = crate::jni::raw::convert::string(e.get_raw(), message)?.unwrap_or_default();
        panic!("{text}")
    })
}

/// Does nothing: the cost of a bare JNI call through `entry!`, for the handle benchmark.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_noop<'l>(mut env: EnvUnowned<'l>, _c: jclass, value: jlong) -> jlong {
    entry!(env, |_e| Ok(value))
}

/// Emits a Rust `log` record at `level` (1 = error .. 5 = trace), to test the logging bridge.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_log<'l>(mut env: EnvUnowned<'l>, _c: jclass, level: jint, message: jstring) {
    entry!(env, |e| {
        let text = crate::jni::raw::convert::string(e.get_raw(), message)?.unwrap_or_default();
        let level = match level {
            1 => log::Level::Error,
            2 => log::Level::Warn,
            3 => log::Level::Info,
            4 => log::Level::Debug,
            _ => log::Level::Trace,
        };
        log::log!(level, "{text}");
        Ok(())
    })
}

/// cuCtxCreate on `device`; the new context is left current, as the driver does.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_createContext<'l>(mut env: EnvUnowned<'l>, _c: jclass, device: jint) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer valid; flags 0; the driver validates the device.
        d.check(unsafe { (d.api.cuCtxCreate)(&mut ctx, 0, device) }, "cuCtxCreate")?;
        Ok(ctx as jlong)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_destroyContext<'l>(mut env: EnvUnowned<'l>, _c: jclass, ctx: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the test passes a context it created and destroys it once.
        Ok(d.check(unsafe { (d.api.cuCtxDestroy)(ctx as _) }, "cuCtxDestroy")?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_setCurrent<'l>(mut env: EnvUnowned<'l>, _c: jclass, ctx: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the test passes a live context or 0.
        Ok(d.check(unsafe { (d.api.cuCtxSetCurrent)(ctx as _) }, "cuCtxSetCurrent")?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_currentContext<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jlong {
    entry!(env, |_e| Ok(context::current_context(driver::initialised()?)? as jlong))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_resetPrimary<'l>(mut env: EnvUnowned<'l>, _c: jclass, device: jint) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: resets the device's primary context; handles bound to it detect the new id.
        Ok(d.check(unsafe { (d.api.cuDevicePrimaryCtxReset)(device) }, "cuDevicePrimaryCtxReset")?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_retainPrimary<'l>(mut env: EnvUnowned<'l>, _c: jclass, device: jint) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer valid; balanced by releasePrimary in the test.
        d.check(unsafe { (d.api.cuDevicePrimaryCtxRetain)(&mut ctx, device) }, "cuDevicePrimaryCtxRetain")?;
        Ok(ctx as jlong)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_releasePrimary<'l>(mut env: EnvUnowned<'l>, _c: jclass, device: jint) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: balances a retainPrimary of the test.
        Ok(d.check(unsafe { (d.api.cuDevicePrimaryCtxRelease)(device) }, "cuDevicePrimaryCtxRelease")?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_contextId<'l>(mut env: EnvUnowned<'l>, _c: jclass, ctx: jlong) -> jlong {
    // SAFETY: the test passes a context it created (possibly destroyed since, which is what it probes).
    entry!(env, |_e| Ok(unsafe { context::context_id(driver::initialised()?, ctx as _)? } as jlong))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_streamCreate<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut s = std::ptr::null_mut();
        // SAFETY: creates a stream in the current context (the test made one current).
        d.check(unsafe { (d.api.cuStreamCreate)(&mut s, 1) }, "cuStreamCreate")?;
        Ok(s as jlong)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_streamDestroy<'l>(mut env: EnvUnowned<'l>, _c: jclass, s: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the test destroys a stream it created, once.
        Ok(d.check(unsafe { (d.api.cuStreamDestroy)(s as _) }, "cuStreamDestroy")?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_memAlloc<'l>(mut env: EnvUnowned<'l>, _c: jclass, bytes: jlong) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut p = 0;
        // SAFETY: allocates in the current context (the test made one current).
        d.check(unsafe { (d.api.cuMemAlloc)(&mut p, bytes as usize) }, "cuMemAlloc")?;
        Ok(p as jlong)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_memFree<'l>(mut env: EnvUnowned<'l>, _c: jclass, p: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: frees memory the test allocated, once.
        Ok(d.check(unsafe { (d.api.cuMemFree)(p as u64) }, "cuMemFree")?)
    })
}

/// The parameter layouts `core::param_layout` reads from a module image: one line per kernel,
/// `name offset:size ...`, sorted (for the test that compares them with the driver's).
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_imageParamLayouts<'l>(mut env: EnvUnowned<'l>, _c: jclass, image: jni::sys::jbyteArray) -> jstring {
    entry!(env, |e| {
        let bytes = crate::jni::raw::convert::bytes(e.get_raw(), image)?;
        let kind = crate::core::image::check(&bytes)?.kind;
        crate::jni::raw::convert::new_string(e.get_raw(), &crate::core::param_layout::ImageLayouts::read(&bytes, kind).describe())
    })
}

/// `cuKernelGetParamInfo`'s layout of a kernel, probed in the handle's context: [offset, size, ...],
/// or null where the driver lacks the call.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_driverParamLayout<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, h: jlong, lib: jlong, kernel: jlong,
) -> jni::sys::jobject {
    entry!(env, |e| {
        // SAFETY: live handle and library pointers held by Java objects inside their calls.
        let (handle, library) = unsafe {
            (crate::jni::raw::borrow::<crate::core::handle::Handle>(h, "handle")?, crate::jni::raw::borrow::<crate::core::library::Library>(lib, "library")?)
        };
        let _scope = handle.activate()?;
        // SAFETY: `kernel` came from this library (the test's Kernel), which the Java caller holds open.
        match library.driver_param_layout(unsafe { crate::core::library::KernelRef::from_raw(kernel as _) })? {
            Some(layout) => crate::jni::raw::convert::long_array(e.get_raw(), &layout.iter().flat_map(|p| [p.offset as i64, p.size as i64]).collect::<Vec<_>>()),
            None => Ok(std::ptr::null_mut()),
        }
    })
}

/// The built-in kernels' fatbin as embedded in the library (for tests that compare what
/// `core::param_layout` reads from it with what the driver reports).
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeTestApi_builtinImage<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jni::sys::jbyteArray {
    entry!(env, |e| crate::jni::java_arrays::new_bytes(e.get_raw(), crate::core::kernels::FATBIN))
}
