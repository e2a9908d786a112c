//! Kernel launch on a handle (rule K1): the caller hands over an array of argument pointers that
//! it keeps in its own memory (the Java launch object's direct buffer), so a launch allocates
//! nothing. The driver call itself, with launch attributes where the shape needs them, is
//! `driver::launch::queue`.

use crate::core::context::Context;
use crate::core::driver::{self, launch::queue, launch_config::LaunchShape, Optional};
use crate::core::error::{Error, Result};
use crate::core::handle::Handle;
use crate::core::streams::StreamUse;
use cudarc::driver::sys::{CUfunction, CUfunction_attribute, CUkernel};
use std::ffi::c_void;

/// The most arguments one launch takes.
pub const MAX_KERNEL_ARGS: usize = 64;
/// `CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED` (14), from cudarc's bindgen of cuda.h: a
/// hand-written 15 (the next enumerator, the cluster scheduling policy) once set the wrong attribute,
/// so the driver kept answering 8 blocks.
const CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED: i32 =
    CUfunction_attribute::CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED as i32;

/// The instance of `kernel` in the handle's context (`cuKernelGetFunction`). Launching it
/// spares the driver resolving the context-independent kernel to it on every launch. It stays
/// valid while the kernel's library is loaded and the context lives; callers keep it per context
/// id, which a handle validates before each use (H8), so a destroyed or reset context's function
/// is never launched.
pub(crate) fn function(handle: &Handle, kernel: CUkernel) -> Result<CUfunction> {
    let _scope = handle.activate()?;
    function_in_active_context(handle.context(), kernel)
}

/// The instance of `kernel` in `ctx`, which is active.
pub(crate) fn function_in_active_context(ctx: &Context, kernel: CUkernel) -> Result<CUfunction> {
    let mut function: CUfunction = std::ptr::null_mut();
    // SAFETY: out-pointer is a valid local; `ctx` is current (the caller activated it); the driver checks
    // the kernel handle (the caller got it from a loaded library).
    ctx.noted(unsafe { ctx.driver().cuKernelGetFunction(&mut function, kernel) })?;
    Ok(function)
}

/// The most blocks a thread-block cluster of `function` may have with `shape`'s grid, block and
/// dynamic shared memory on the handle's device (`cuOccupancyMaxPotentialClusterSize`, which ignores
/// the shape's cluster): 8, the portable limit, unless the kernel allows non-portable cluster sizes
/// (`CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`); then what the device can hold. `None`
/// where the driver lacks the call.
pub(crate) fn max_cluster_size(
    handle: &Handle,
    function: CUfunction,
    shape: &LaunchShape,
    non_portable_allowed: bool,
) -> Result<Option<u32>> {
    let ctx = handle.context();
    let driver = ctx.driver();
    if !driver.supports(Optional::cuOccupancyMaxPotentialClusterSize) {
        return Ok(None);
    }
    let _scope = handle.activate()?;
    if non_portable_allowed {
        // Also set on the function itself, which the launch uses: whether the kernel's attribute
        // (cuKernelSetAttribute, per device) reaches a function the context loaded earlier is not
        // documented. Idempotent. (The H200's answer of 8 that prompted this came from a wrong
        // attribute number, since fixed; this call was never shown to be needed.)
        // SAFETY: `function` is the kernel's function in the handle's context, which is current.
        ctx.noted(unsafe { driver.cuFuncSetAttribute(function, CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1) })?;
    }
    // SAFETY: `function` is the kernel's function in the handle's context, which is current, and
    // the stream is the handle's.
    let blocks = ctx.noted(unsafe { driver::launch::max_potential_cluster_size(driver, function, shape, handle.stream()?) })?;
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
    let driver = ctx.driver();
    // No arguments: a null array, so the driver never reads the caller's (unused) entries.
    let params = if arg_count == 0 { std::ptr::null_mut() } else { params };
    let queue_on = |on: &StreamUse| {
        before_queuing(on)?;
        // SAFETY: the caller's contract for `params`; `on` is the handle's stream, a live stream
        // of its context, which is current or (`Handle::in_stream_order`, own stream only) the
        // context the driver takes from the stream (`stream_context`).
        ctx.noted(unsafe { queue(driver, function, &shape, on.raw(), params) })
    };
    if shape.needs_attributes() {
        // cuLaunchKernelEx with attributes: always with the context made current.
        let _scope = handle.activate()?;
        return queue_on(&*handle.queue()?);
    }
    handle.in_stream_order(queue_on)
}
