//! Kernel launch (rule K1): arguments arrive as 8-byte slots in caller memory, so a launch
//! allocates nothing and needs one pointer array on the stack.

use crate::core::error::{Error, Result};
use crate::core::handle::Handle;
use cudarc::driver::sys::{CUfunction, CUkernel};
use std::ffi::c_void;

/// The most arguments one launch takes (slots of 8 bytes each).
pub const MAX_KERNEL_ARGS: usize = 64;
/// Bytes of one argument slot: every scalar or pointer argument fits in one.
pub const SLOT_BYTES: usize = 8;

#[derive(Debug, Clone, Copy)]
pub struct LaunchShape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
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

/// Launches `function` (from `function`, or a `CUkernel`, which the driver resolves for the
/// current context on every launch) on the handle's stream in the handle's context.
///
/// # Safety
/// `slots` must point to `arg_count * SLOT_BYTES` readable bytes holding the arguments, each in
/// the first bytes of its slot, and the arguments must match what the kernel expects (the Java
/// side checks sizes where the driver reports them; device pointers are the caller's promise).
pub unsafe fn launch(handle: &Handle, function: CUfunction, shape: LaunchShape, slots: *mut u8, arg_count: usize) -> Result<()> {
    if arg_count > MAX_KERNEL_ARGS {
        return Err(Error::invalid_argument(format!("{arg_count} kernel arguments given; at most {MAX_KERNEL_ARGS} are supported")));
    }
    let mut params = [std::ptr::null_mut::<c_void>(); MAX_KERNEL_ARGS];
    for (i, p) in params.iter_mut().enumerate().take(arg_count) {
        // SAFETY: within the caller's slot array (see the function's contract).
        *p = unsafe { slots.add(i * SLOT_BYTES) }.cast();
    }
    let _scope = handle.activate()?;
    let stream = handle.stream()?;
    let ctx = handle.context();
    let [gx, gy, gz] = shape.grid;
    let [bx, by, bz] = shape.block;
    // SAFETY: `function` is a function of the current context, or a CUkernel, which may be passed
    // where a CUfunction is expected (the driver then uses the kernel's instance for the current
    // context; CUDA 12 docs, verified in FIGURES.md). The parameter array holds `arg_count` valid
    // pointers.
    let rc = unsafe {
        (ctx.driver().api.cuLaunchKernel)(function, gx, gy, gz, bx, by, bz, shape.shared_bytes, stream, params.as_mut_ptr(), std::ptr::null_mut())
    };
    ctx.check(rc, "cuLaunchKernel")
}
