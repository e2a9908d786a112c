//! `dev.cuhandle.DriverProbeTestApi`: test-only entry points that ask the driver directly what
//! cuhandle's own calls cannot show: the module loading mode in force (`CUDA_MODULE_LOADING`), and
//! a launch of a raw `CUfunction` or `CUkernel` on a given stream, so that the driver's own choice of
//! context can be set beside cuhandle's launches.

use crate::core::driver::{self, CuResult};
use crate::jni::native_entry::native;
use crate::jni::testing_entry_point::lookup;
use crate::jni::entry::entry;
use cudarc::driver::sys::{CUfunction, CUstream};
use jni::objects::JClass;
use jni::sys::{jint, jlong};
use jni::{EnvUnowned, NativeMethod};
use std::ffi::{c_int, c_void};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn module_loading_mode() -> jint),
    native!(static raw fn launch_with_one_pointer(function: jlong, stream: jlong, pointer: jlong) -> jint),
    native!(static raw fn synchronize_current() -> jint),
];

type ModuleGetLoadingMode = unsafe extern "C" fn(*mut c_int) -> CuResult;

/// `cuModuleGetLoadingMode`: 1 (`CU_MODULE_EAGER_LOADING`), 2 (`CU_MODULE_LAZY_LOADING`), or -1
/// if the driver lacks the call.
fn module_loading_mode(env: EnvUnowned<'_>, _: JClass<'_>) -> jint {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the type is cuda.h's declaration of cuModuleGetLoadingMode (CUDA 11.7 and later).
        let Some(get_mode) = (unsafe { lookup::<ModuleGetLoadingMode>("cuModuleGetLoadingMode", 12000)? }) else {
            return Ok(-1);
        };
        let mut mode: c_int = 0;
        // SAFETY: out-pointer valid.
        d.check(unsafe { get_mode(&mut mode) }, "cuModuleGetLoadingMode")?;
        Ok(mode)
    })
}

/// `cuLaunchKernel(function, 1x1x1 grid, 1x1x1 block, no shared memory, stream, {pointer})`: one
/// thread of a kernel that takes one pointer. `function` is a `CUfunction` or a `CUkernel` (which
/// the driver resolves for the context it picks); `stream` 0 is the NULL stream of the current
/// context. Returns the driver's result instead of throwing, so that a test can report it.
fn launch_with_one_pointer(env: EnvUnowned<'_>, _: JClass<'_>, function: jlong, stream: jlong, pointer: jlong) -> jint {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut argument = pointer as u64;
        let mut params = [(&mut argument) as *mut u64 as *mut c_void];
        // SAFETY: the test passes a function of a loaded library whose kernel takes exactly one
        // pointer, a live stream (or 0) and a device pointer valid where the kernel runs; `params`
        // lives on this frame for the whole call.
        let rc = unsafe {
            (d.api.cuLaunchKernel)(function as CUfunction, 1, 1, 1, 1, 1, 1, 0, stream as CUstream, params.as_mut_ptr(), std::ptr::null_mut())
        };
        Ok(rc)
    })
}

/// `cuCtxSynchronize` of the current context; returns the driver's result instead of throwing.
fn synchronize_current(env: EnvUnowned<'_>, _: JClass<'_>) -> jint {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: waits for the current context's work; no pointers involved.
        Ok(unsafe { (d.api.cuCtxSynchronize)() })
    })
}
