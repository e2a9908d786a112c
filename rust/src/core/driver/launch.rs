//! The driver calls that take a launch's shape: queuing the launch (`cuLaunchKernel`, or
//! `cuLaunchKernelEx` when the shape asks for launch attributes) and the cluster size query.

use super::launch_config::{attributes, LaunchConfig, LaunchShape};
use super::Driver;
use crate::core::error::Result;
use cudarc::driver::sys::{CUfunction, CUstream};
use std::ffi::c_void;

/// Queues `function` on `stream`: `cuLaunchKernel`, or `cuLaunchKernelEx` when the shape asks for
/// launch attributes. A failure is an error naming the call that was made.
///
/// # Safety
/// `params` is null or holds as many valid argument pointers as the kernel takes; `function` is a
/// function of the stream's context, or a CUkernel, which may be passed where a CUfunction is
/// expected (the driver then uses the kernel's instance for the context it launches in, as
/// cuLaunchKernel documents; `cukernel_in_user_ctx_ok` of tests/bench/anchors.cu in
/// docs/runs/2026-11-29-anchors.txt); `stream` is live and accepted with what is current on this
/// thread; a `dependent` shape's kernel waits before touching memory (see `LaunchShape`).
pub unsafe fn queue(driver: &Driver, function: CUfunction, shape: &LaunchShape, stream: CUstream, params: *mut *mut c_void) -> Result<()> {
    if !shape.needs_attributes() {
        let [gx, gy, gz] = shape.grid;
        let [bx, by, bz] = shape.block;
        // SAFETY: the function's contract.
        return unsafe {
            driver.cuLaunchKernel(function, gx, gy, gz, bx, by, bz, shape.shared_bytes, stream, params, std::ptr::null_mut())
        };
    }
    let (mut attrs, num_attrs) = attributes(shape);
    let config = LaunchConfig {
        grid: shape.grid,
        block: shape.block,
        shared_bytes: shape.shared_bytes,
        stream,
        attrs: attrs.as_mut_ptr(),
        num_attrs,
    };
    // SAFETY: the function's contract; `config` and the attributes it points to live on this
    // stack frame for the whole call and have cuda.h's layout (tests of `launch_config`).
    unsafe { driver.cuLaunchKernelEx(&config, function, params, std::ptr::null_mut()) }
}

/// `cuOccupancyMaxPotentialClusterSize` for `function` with `shape`'s grid, block and dynamic
/// shared memory on `stream` (the shape's cluster is ignored): the most blocks a cluster may have
/// (`CUDA_ERROR_NOT_SUPPORTED` where the driver lacks the call: ask `Driver::supports` first).
///
/// # Safety
/// `function` is a function of the current context and `stream` a live stream of it (or null).
pub unsafe fn max_potential_cluster_size(driver: &Driver, function: CUfunction, shape: &LaunchShape, stream: CUstream) -> Result<i32> {
    let config = LaunchConfig {
        grid: shape.grid,
        block: shape.block,
        shared_bytes: shape.shared_bytes,
        stream,
        attrs: std::ptr::null_mut(),
        num_attrs: 0,
    };
    let mut blocks = 0;
    // SAFETY: the function's contract; the out-pointer and `config` are valid locals with cuda.h's
    // layout (tests of `launch_config`).
    unsafe { driver.cuOccupancyMaxPotentialClusterSize(&mut blocks, function, &config) }.map(|()| blocks)
}
