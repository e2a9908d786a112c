//! The error of a device allocation that failed: out of memory says how much the device has free.

use crate::core::context::Context;
use crate::core::error::{Error, CUDA_ERROR_OUT_OF_MEMORY};

/// The error of an allocation that returned `rc`: out of memory says how much the device has
/// free (asked with the context made current here: the allocation may have gone without).
pub(crate) fn failed_allocation(ctx: &Context, rc: i32, bytes: usize, op: &str) -> Error {
    if rc != CUDA_ERROR_OUT_OF_MEMORY {
        return match ctx.check(rc, op) {
            Err(e) => e,
            Ok(()) => Error::invalid_state(format!("{op} failed without an error code")),
        };
    }
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: out-pointers are valid; the context is active while the scope lives.
    let info = ctx.activate().map(|_scope| unsafe { (ctx.driver().api.cuMemGetInfo)(&mut free, &mut total) });
    let state = if matches!(info, Ok(0)) { format!("; the device has {free} of {total} bytes free") } else { String::new() };
    Error::cuda(
        CUDA_ERROR_OUT_OF_MEMORY,
        op,
        format!(
            "CUDA_ERROR_OUT_OF_MEMORY (2): could not allocate {bytes} bytes ({:.2} GiB) of device memory{state}",
            bytes as f64 / (1u64 << 30) as f64
        ),
    )
}
