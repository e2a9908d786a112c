//! `dev.cuhandle.DriverProbeTestApi`: test-only entry points that ask the driver directly what
//! cuhandle's own calls cannot show: the module loading mode in force (`CUDA_MODULE_LOADING`), and
//! a launch of a raw `CUfunction` or `CUkernel` on a given stream, so that the driver's own choice of
//! context can be set beside cuhandle's launches, and the allocation churn of
//! tests/bench/alloc_churn.c run in this process, so that MemoryBenchmark can take turns with it.

use crate::core::driver::{self, Optional};
use crate::core::error::Error;
use crate::core::memory::pool::Pool;
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::HandlePtr;
use crate::jni::raw::convert;
use cudarc::driver::sys::{CUdeviceptr, CUfunction, CUstream};
use jni::objects::{JClass, JLongArray};
use jni::sys::{jint, jlong};
use jni::{EnvUnowned, NativeMethod};
use std::ffi::{c_int, c_void};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn module_loading_mode() -> jint),
    native!(static raw fn launch_with_one_pointer(function: jlong, stream: jlong, pointer: jlong) -> jint),
    native!(static raw fn synchronize_current() -> jint),
    native!(static raw fn churn_in_stream_order(h: HandlePtr, stream: jlong, bytes: jlong, rounds: jint, way: jint) -> jlong[]),
];

/// `cuModuleGetLoadingMode`: 1 (`CU_MODULE_EAGER_LOADING`), 2 (`CU_MODULE_LAZY_LOADING`), or -1
/// if the driver lacks the call.
fn module_loading_mode(env: EnvUnowned<'_>, _: JClass<'_>) -> jint {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        if !d.supports(Optional::cuModuleGetLoadingMode) {
            return Ok(-1);
        }
        let mut mode: c_int = 0;
        // SAFETY: out-pointer valid.
        unsafe { d.cuModuleGetLoadingMode(&mut mode) }?;
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
        let launched = unsafe {
            d.cuLaunchKernel(function as CUfunction, 1, 1, 1, 1, 1, 1, 0, stream as CUstream, params.as_mut_ptr(), std::ptr::null_mut())
        };
        Ok(code_of(launched))
    })
}

/// `cuCtxSynchronize` of the current context; returns the driver's result instead of throwing.
fn synchronize_current(env: EnvUnowned<'_>, _: JClass<'_>) -> jint {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: waits for the current context's work; no pointers involved.
        Ok(code_of(unsafe { d.cuCtxSynchronize() }))
    })
}

/// The driver's code of a floor call's result, for the probes that report it instead of throwing.
fn code_of(result: crate::core::error::Result<()>) -> jint {
    match result {
        Ok(()) => 0,
        Err(e) => e.cuda_code().unwrap_or(-1),
    }
}

/// `way` bit of [`churn_in_stream_order`]: allocate from a pool made as cuhandle makes its own
/// (`Pool::create`, `Pool::allocate`) instead of the device's default pool (`cuMemAllocAsync`).
const WAY_CUHANDLES_POOL: jint = 1;
/// `way` bit: `cuCtxGetId` of the handle's context before each call, as cuhandle's validation does.
const WAY_CONTEXT_ID_PER_CALL: jint = 2;

/// tests/bench/alloc_churn.c's fast loop in this process: `rounds` rounds of allocate +
/// `cuMemsetD8Async` (0) + `cuMemFreeAsync` of `bytes` on `stream` (a stream of the context of
/// handle `h`, current on this thread), then `cuStreamSynchronize`. `way` 0 is the C loop
/// (`cuMemAllocAsync`); its bits add one of cuhandle's costs at a time, to tell where a gap to the
/// C loop comes from. Returns each round's nanoseconds, timed as the C loop times them (a monotonic
/// clock around the three calls). Throws if a call fails or the driver lacks `cuMemAllocAsync`.
fn churn_in_stream_order<'l>(
    env: EnvUnowned<'l>,
    _: JClass<'l>,
    h: HandlePtr,
    stream: jlong,
    bytes: jlong,
    rounds: jint,
    way: jint,
) -> JLongArray<'l> {
    entry!(env, |e| {
        let handle = h.get()?;
        let ctx = handle.context();
        let d = driver::initialised()?;
        if !d.supports(Optional::cuMemAllocAsync) {
            return Err(Error::invalid_state("this driver has no cuMemAllocAsync").into());
        }
        let pool = if way & WAY_CUHANDLES_POOL != 0 { Some(Pool::create(ctx, handle.device().ordinal)?) } else { None };
        let (stream, bytes) = (stream as CUstream, bytes.max(0) as usize);
        let id_check = || -> crate::core::error::Result<()> {
            if way & WAY_CONTEXT_ID_PER_CALL != 0 {
                let mut id = 0;
                // SAFETY: the handle holds its context; the out-pointer is a valid local.
                unsafe { d.cuCtxGetId(ctx.raw(), &mut id) }?;
            }
            Ok(())
        };
        // One round, timed: allocate, set and free `bytes`. After a successful allocation the free
        // is queued whatever fails in between, so that no error leaves memory behind in a pool.
        let round = || -> crate::core::error::Result<i64> {
            let start = std::time::Instant::now();
            id_check()?;
            let p = match &pool {
                Some(pool) => pool.allocate(ctx, bytes, stream)?,
                None => {
                    let mut p: CUdeviceptr = 0;
                    // SAFETY: the caller passes a live stream of the current context; the
                    // out-pointer is a valid local.
                    unsafe { d.cuMemAllocAsync(&mut p, bytes, stream) }?;
                    p
                }
            };
            let set = id_check().and_then(|()| {
                // SAFETY: `p` holds `bytes` bytes, set and freed in `stream`'s order.
                unsafe { d.cuMemsetD8Async(p, 0, bytes, stream) }
            });
            let checked = set.and_then(|()| id_check());
            // SAFETY: as above; freed once, also after a failed memset or check.
            let freed = unsafe { d.cuMemFreeAsync(p, stream) };
            checked.and(freed)?;
            Ok(start.elapsed().as_nanos() as i64)
        };
        // A new pool's first allocation reserves its memory (milliseconds): one round untimed.
        let warm = if pool.is_some() { round().map(drop) } else { Ok(()) };
        let mut nanos = Vec::new();
        let run = warm.and_then(|()| (0..rounds.max(0)).try_for_each(|_| round().map(|n| nanos.push(n))));
        // SAFETY: a live stream of the current context (the caller's); waits for every queued free
        // before the pool goes.
        let synced = unsafe { d.cuStreamSynchronize(stream) };
        let run = run.and(synced);
        if let Some(pool) = pool {
            pool.destroy(ctx);
        }
        run?;
        convert::long_array(e, &nanos)
    })
}
