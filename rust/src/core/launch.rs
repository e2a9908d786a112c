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

/// Launches `kernel` on the handle's stream in the handle's context.
///
/// # Safety
/// `slots` must point to `arg_count * SLOT_BYTES` readable bytes holding the arguments, each in
/// the first bytes of its slot, and the arguments must match what the kernel expects (the Java
/// side checks sizes where the driver reports them; device pointers are the caller's promise).
pub unsafe fn launch(handle: &Handle, kernel: CUkernel, shape: LaunchShape, slots: *mut u8, arg_count: usize) -> Result<()> {
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
    // SAFETY: a CUkernel may be passed where a CUfunction is expected; the driver then uses the
    // kernel's instance for the current context (CUDA 12 docs; verified in FIGURES.md). The
    // parameter array holds `arg_count` valid pointers.
    let rc = unsafe {
        (ctx.driver().api.cuLaunchKernel)(kernel as CUfunction, gx, gy, gz, bx, by, bz, shape.shared_bytes, stream, params.as_mut_ptr(), std::ptr::null_mut())
    };
    ctx.check(rc, "cuLaunchKernel")
}
