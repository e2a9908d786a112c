//! Kernel launch (rule K1): the caller hands over an array of argument pointers that it keeps in
//! its own memory (the Java launch object's direct buffer), so a launch allocates nothing.
//! Launches that need launch attributes (cooperative, thread-block clusters) go through
//! `cuLaunchKernelEx` with the attributes on the stack.

use crate::core::error::{Error, Result, CUDA_ERROR_INVALID_CONTEXT};
use crate::core::driver::{CuResult, DriverApi};
use crate::core::handle::Handle;
use crate::core::streams::StreamUse;
use cudarc::driver::sys::{CUfunction, CUkernel, CUstream};
use std::ffi::c_void;

/// The most arguments one launch takes.
pub const MAX_KERNEL_ARGS: usize = 64;

/// `CU_LAUNCH_ATTRIBUTE_COOPERATIVE`.
const LAUNCH_ATTRIBUTE_COOPERATIVE: u32 = 2;
/// `CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION`.
const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = 4;
/// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`.
const CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: i32 = 15;
/// `CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`.
const LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: u32 = 6;

#[derive(Debug, Clone, Copy)]
pub struct LaunchShape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    /// Grid-wide synchronisation (`cooperative_groups::this_grid().sync()`) is allowed.
    pub cooperative: bool,
    /// Thread-block cluster size in blocks; `[0, 0, 0]` launches without clusters.
    pub cluster: [u32; 3],
    /// A programmatic dependent launch: the driver may schedule the kernel before the one ahead of
    /// it on the stream has completed. Only for kernels that execute `griddepcontrol.wait` before
    /// touching memory (kernels/blas1.cu's `cuh_dependent_launch_begin`, compute capability 9.0+),
    /// or they could read what the kernel ahead has not written yet.
    pub dependent: bool,
}

impl LaunchShape {
    /// A 1-D grid of `blocks` blocks of `threads` threads, no shared memory, no attributes.
    pub fn linear(blocks: u32, threads: u32) -> LaunchShape {
        LaunchShape { grid: [blocks, 1, 1], block: [threads, 1, 1], shared_bytes: 0, cooperative: false, cluster: [0, 0, 0], dependent: false }
    }

    fn needs_attributes(&self) -> bool {
        self.cooperative || self.cluster != [0, 0, 0] || self.dependent
    }
}

/// `CUlaunchAttribute` of cuda.h: a 4-byte id, padding to 8, and a 64-byte value union (which
/// holds pointers, hence the 8-byte alignment).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LaunchAttribute {
    id: u32,
    pad: u32,
    value: [u32; 16],
}

/// `CUlaunchConfig` of cuda.h.
#[repr(C)]
pub struct LaunchConfig {
    grid: [u32; 3],
    block: [u32; 3],
    shared_bytes: u32,
    stream: CUstream,
    attrs: *mut LaunchAttribute,
    num_attrs: u32,
}

/// The attributes a shape asks for, in a fixed array (no allocation); returns how many are used.
fn attributes(shape: &LaunchShape) -> ([LaunchAttribute; 3], u32) {
    let empty = LaunchAttribute { id: 0, pad: 0, value: [0; 16] };
    let mut attrs = [empty; 3];
    let mut n = 0;
    if shape.cooperative {
        attrs[n].id = LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n].value[0] = 1; // the `int cooperative` member
        n += 1;
    }
    if shape.cluster != [0, 0, 0] {
        attrs[n].id = LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value[..3].copy_from_slice(&shape.cluster); // `struct { unsigned x, y, z; } clusterDim`
        n += 1;
    }
    if shape.dependent {
        attrs[n].id = LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n].value[0] = 1; // `int programmaticStreamSerializationAllowed`
        n += 1;
    }
    (attrs, n as u32)
}

/// The first driver version whose `cuLaunchKernel` on a non-null stream is known to launch in
/// the stream's context whatever is current on the thread (nothing, or another context, which
/// stays current): tests/bench/contextless_probe.cu, run on the H200 with driver 580 (CUDA 13.0).
/// From this version on, a launch on the handle's own stream skips activating the context (the
/// `cuCtxGetCurrent` and the two `cuCtxSetCurrent` around it) and so leaves the caller's context
/// untouched all the same (H4). Older drivers, never measured, keep the activated launch.
const STREAM_CONTEXT_LAUNCH_SINCE: i32 = 13000;

fn launches_in_the_streams_context(driver_version: i32) -> bool {
    driver_version >= STREAM_CONTEXT_LAUNCH_SINCE
}

/// The instance of `kernel` in the handle's context (`cuKernelGetFunction`). Launching it
/// spares the driver resolving the context-independent kernel to it on every launch. It stays
/// valid while the kernel's library is loaded and the context lives; callers keep it per context
/// id, which a handle validates before each use (H8), so a destroyed or reset context's function
/// is never launched.
pub(crate) fn function(handle: &Handle, kernel: CUkernel) -> Result<CUfunction> {
    let _scope = handle.activate()?;
    function_in_active_context(handle, kernel)
}

/// As `function`, with the handle's context already active.
pub(crate) fn function_in_active_context(handle: &Handle, kernel: CUkernel) -> Result<CUfunction> {
    let ctx = handle.context();
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: out-pointer is a valid local; the handle's context is current; the driver checks
    // the kernel handle (the caller got it from a loaded library).
    ctx.check(unsafe { (ctx.driver().api.cuKernelGetFunction)(&mut function, kernel) }, "cuKernelGetFunction")?;
    Ok(function)
}

/// The most blocks a thread-block cluster of `function` may have with `shape`'s grid, block and
/// dynamic shared memory on the handle's device (`cuOccupancyMaxPotentialClusterSize`, which ignores
/// the shape's cluster): 8, the portable limit, unless the kernel allows non-portable cluster sizes
/// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`); then what the device can hold. `None`
/// where the driver lacks the call.
pub(crate) fn max_cluster_size(handle: &Handle, function: CUfunction, shape: &LaunchShape, non_portable_allowed: bool) -> Result<Option<u32>> {
    let ctx = handle.context();
    let Some(max_cluster_size) = ctx.driver().api.cuOccupancyMaxPotentialClusterSize else { return Ok(None) };
    let _scope = handle.activate()?;
    if non_portable_allowed {
        // The kernel's attribute (cuKernelSetAttribute, per device) did not reach a function the
        // context had already loaded: on the H200 (driver 580) the query answered 8 for such a
        // function. Setting it on the function itself, which the launch uses too, is idempotent.
        // SAFETY: `function` is the kernel's function in the handle's context, which is current.
        ctx.check(unsafe { (ctx.driver().api.cuFuncSetAttribute)(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) }, "cuFuncSetAttribute")?;
    }
    let config = LaunchConfig {
        grid: shape.grid,
        block: shape.block,
        shared_bytes: shape.shared_bytes,
        stream: handle.stream()?,
        attrs: std::ptr::null_mut(),
        num_attrs: 0,
    };
    let mut blocks = 0;
    // SAFETY: out-pointer and config are valid locals (config has cuda.h's layout, tests below);
    // `function` is the kernel's function in the handle's context, which is current.
    ctx.check(unsafe { max_cluster_size(&mut blocks, function, &config) }, "cuOccupancyMaxPotentialClusterSize")?;
    Ok(Some(blocks.max(0) as u32))
}

/// Launches `function` (from `function` above, or a `CUkernel`, which the driver resolves for the
/// current context on every launch) on the handle's stream in the handle's context.
/// `before_queuing(on)` runs first with the stream the launch goes to: it notes that stream's use
/// of the device memory the arguments point into (rule L3).
///
/// # Safety
/// `params` must point to `arg_count` readable pointers, each to an argument of the size the
/// kernel expects (the Java side checks sizes where the driver reports them; device pointers
/// are the caller's promise).
pub unsafe fn launch(
    handle: &Handle,
    function: CUfunction,
    shape: LaunchShape,
    params: *mut *mut c_void,
    arg_count: usize,
    before_queuing: impl Fn(&StreamUse) -> Result<()>,
) -> Result<()> {
    if arg_count > MAX_KERNEL_ARGS {
        return Err(Error::invalid_argument(format!("{arg_count} kernel arguments given; at most {MAX_KERNEL_ARGS} are supported")));
    }
    let ctx = handle.context();
    let api = &ctx.driver().api;
    // No arguments: a null array, so the driver never reads the caller's (unused) entries.
    let params = if arg_count == 0 { std::ptr::null_mut() } else { params };
    if !shape.needs_attributes() && launches_in_the_streams_context(ctx.driver().version) {
        if let Some(own) = handle.own_stream_in_use() {
            // Without activation: H8/H11 validation still runs first, so a destroyed, reset or
            // poisoned context is refused before the driver sees its stream.
            ctx.validate()?;
            before_queuing(own)?;
            let stream = own.raw();
            // SAFETY: the caller's contract for `params`; `stream` is a live stream of the
            // handle's context (leased by the handle, never destroyed while the context lives, and
            // the context was validated just now), and the driver launches in the stream's context whatever is
            // current, from STREAM_CONTEXT_LAUNCH_SINCE on.
            let (rc, operation) = unsafe { queue(api, function, &shape, stream, params) };
            // A driver that still wants a current context says so before queuing anything:
            // then launch the usual way.
            if rc != CUDA_ERROR_INVALID_CONTEXT {
                return ctx.check(rc, operation);
            }
        }
    }
    let _scope = handle.activate()?;
    let on = handle.queue()?;
    before_queuing(&on)?;
    // SAFETY: the caller's contract for `params`; the handle's context is current and `on` is
    // the handle's stream in it.
    let (rc, operation) = unsafe { queue(api, function, &shape, on.raw(), params) };
    ctx.check(rc, operation)
}

/// Queues `function` on `stream`: `cuLaunchKernel`, or `cuLaunchKernelEx` when the shape asks for
/// launch attributes. Returns the driver's result and the call's name for errors.
///
/// # Safety
/// `params` is null or holds as many valid argument pointers as the kernel takes; `function` is a
/// function of the stream's context, or a CUkernel, which may be passed where a CUfunction is
/// expected (the driver then uses the kernel's instance for the context it launches in, as
/// cuLaunchKernel documents; `cukernel_in_user_ctx_ok` of tests/bench/anchors.cu in
/// docs/runs/2026-11-29-anchors.txt); `stream` is live and accepted with what is current on this
/// thread; a `dependent` shape's kernel waits before touching memory (see `LaunchShape`).
pub(crate) unsafe fn queue(api: &DriverApi, function: CUfunction, shape: &LaunchShape, stream: CUstream, params: *mut *mut c_void) -> (CuResult, &'static str) {
    if !shape.needs_attributes() {
        let [gx, gy, gz] = shape.grid;
        let [bx, by, bz] = shape.block;
        // SAFETY: the function's contract.
        let rc = unsafe { (api.cuLaunchKernel)(function, gx, gy, gz, bx, by, bz, shape.shared_bytes, stream, params, std::ptr::null_mut()) };
        return (rc, "cuLaunchKernel");
    }
    let (mut attrs, num_attrs) = attributes(shape);
    let config = LaunchConfig { grid: shape.grid, block: shape.block, shared_bytes: shape.shared_bytes, stream, attrs: attrs.as_mut_ptr(), num_attrs };
    // SAFETY: the function's contract; `config` and the attributes it points to live on this
    // stack frame for the whole call and have cuda.h's layout (tests below).
    let rc = unsafe { (api.cuLaunchKernelEx)(&config, function, params, std::ptr::null_mut()) };
    (rc, "cuLaunchKernelEx")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_structures_have_the_layout_of_cuda_h() {
        assert_eq!(std::mem::size_of::<LaunchAttribute>(), 72);
        assert_eq!(std::mem::size_of::<LaunchConfig>(), 56);
        assert_eq!(std::mem::offset_of!(LaunchConfig, stream), 32);
        assert_eq!(std::mem::offset_of!(LaunchConfig, attrs), 40);
        assert_eq!(std::mem::offset_of!(LaunchConfig, num_attrs), 48);
        assert_eq!(std::mem::offset_of!(LaunchAttribute, value), 8);
    }

    #[test]
    fn only_drivers_measured_to_launch_in_the_streams_context_skip_activation() {
        assert!(!launches_in_the_streams_context(12080));
        assert!(launches_in_the_streams_context(13000));
        assert!(launches_in_the_streams_context(13010));
    }

    #[test]
    fn attributes_follow_the_shape() {
        let plain = LaunchShape::linear(4, 32);
        assert!(!plain.needs_attributes());
        let both = LaunchShape { cooperative: true, cluster: [2, 1, 1], ..plain };
        let (attrs, n) = attributes(&both);
        assert_eq!(n, 2);
        assert_eq!((attrs[0].id, attrs[0].value[0]), (LAUNCH_ATTRIBUTE_COOPERATIVE, 1));
        assert_eq!((attrs[1].id, &attrs[1].value[..3]), (LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &[2u32, 1, 1][..]));
        let dependent = LaunchShape { dependent: true, ..plain };
        assert!(dependent.needs_attributes());
        let (attrs, n) = attributes(&dependent);
        assert_eq!((n, attrs[0].id, attrs[0].value[0]), (1, LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1));
    }
}
