//! The error of a device allocation that failed: out of memory says how much the device has free.

use crate::core::context::Context;
use crate::core::error::{Error, CUDA_ERROR_OUT_OF_MEMORY};

/// The error of an allocation that failed with `error` (the driver floor's): out of memory says how
/// much the device has free (asked with the context made current here: the allocation may have gone
/// without); any other failure is the driver's, remembered if sticky (H11).
pub(crate) fn failed_allocation(ctx: &Context, error: Error, bytes: usize) -> Error {
    if error.cuda_code() != Some(CUDA_ERROR_OUT_OF_MEMORY) {
        ctx.note(&error);
        return error;
    }
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: out-pointers are valid; the context is active while the scope lives.
    let info = ctx.activate().map(|_scope| unsafe { ctx.driver().cuMemGetInfo(&mut free, &mut total) });
    let state = if matches!(info, Ok(Ok(()))) { format!("; the device has {free} of {total} bytes free") } else { String::new() };
    error.reworded(|_| {
        format!(
            "CUDA_ERROR_OUT_OF_MEMORY (2): could not allocate {bytes} bytes ({:.2} GiB) of device memory{state}",
            bytes as f64 / (1u64 << 30) as f64
        )
    })
}
