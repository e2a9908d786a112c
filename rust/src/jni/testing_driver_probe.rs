//! `dev.cuhandle.DriverProbeTestApi`: test-only entry points that ask the driver directly what
//! cuhandle's own calls cannot show: the module loading mode in force (`CUDA_MODULE_LOADING`), and
//! a launch of a raw `CUfunction` or `CUkernel` on a given stream, so that the driver's own choice of
//! context can be set beside cuhandle's launches, and the allocation churn of
//! tests/bench/alloc_churn.c run in this process, so that MemoryBenchmark can take turns with it.

use crate::core::driver::{self, CuResult};
use crate::jni::native_entry::native;
use crate::jni::testing_entry_point::lookup;
use crate::jni::entry::entry;
use crate::jni::raw::convert;
use crate::core::error::Error;
use cudarc::driver::sys::{CUdeviceptr, CUfunction, CUstream};
use jni::objects::{JClass, JLongArray};
use jni::sys::{jint, jlong};
use jni::{EnvUnowned, NativeMethod};
use std::ffi::{c_int, c_void};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn module_loading_mode() -> jint),
    native!(static raw fn launch_with_one_pointer(function: jlong, stream: jlong, pointer: jlong) -> jint),
    native!(static raw fn synchronize_current() -> jint),
    native!(static raw fn churn_in_stream_order(stream: jlong, bytes: jlong, rounds: jint) -> jlong[]),
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

type MemAllocAsync = unsafe extern "C" fn(*mut CUdeviceptr, usize, CUstream) -> CuResult;

/// tests/bench/alloc_churn.c's fast loop in this process: `rounds` rounds of `cuMemAllocAsync` +
/// `cuMemsetD8Async` (0) + `cuMemFreeAsync` of `bytes` on `stream` (of the current context), then
/// `cuStreamSynchronize`. Returns each round's nanoseconds, timed as the C loop times them (a
/// monotonic clock around the three calls). Throws if a call fails or the driver lacks
/// `cuMemAllocAsync`.
fn churn_in_stream_order<'l>(env: EnvUnowned<'l>, _: JClass<'l>, stream: jlong, bytes: jlong, rounds: jint) -> JLongArray<'l> {
    entry!(env, |e| {
        let d = driver::initialised()?;
        // SAFETY: the type is cuda.h's declaration of cuMemAllocAsync (CUDA 11.2 and later).
        let Some(alloc) = (unsafe { lookup::<MemAllocAsync>("cuMemAllocAsync", 12000)? }) else {
            return Err(Error::invalid_state("this driver has no cuMemAllocAsync").into());
        };
        let (stream, bytes) = (stream as CUstream, bytes.max(0) as usize);
        let mut nanos = Vec::with_capacity(rounds.max(0) as usize);
        for _ in 0..rounds.max(0) {
            let start = std::time::Instant::now();
            let mut p: CUdeviceptr = 0;
            // SAFETY: the caller passes a live stream of the current context (the test's); the
            // out-pointer is a valid local; the memory is set and freed in that stream's order.
            unsafe {
                d.check(alloc(&mut p, bytes, stream), "cuMemAllocAsync")?;
                d.check((d.api.cuMemsetD8Async)(p, 0, bytes, stream), "cuMemsetD8Async")?;
                d.check((d.api.cuMemFreeAsync)(p, stream), "cuMemFreeAsync")?;
            }
            nanos.push(start.elapsed().as_nanos() as i64);
        }
        // SAFETY: a live stream of the current context (the caller's).
        d.check(unsafe { (d.api.cuStreamSynchronize)(stream) }, "cuStreamSynchronize")?;
        convert::long_array(e, &nanos)
    })
}
