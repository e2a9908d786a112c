//! Memory: device memory (`device`), pinned host memory (`pinned`), and what they share per
//! context: the stream-ordered pool (`pool`), the cache of pinned blocks (`pinned_cache`), both
//! held by `context_memory`, and the tracking of which streams used a piece of memory (`uses`,
//! rule L3).

pub mod context_memory;
pub mod device;
pub mod pinned;
pub mod pinned_cache;
pub mod pool;
pub mod uses;

pub use device::DeviceMemory;

use crate::core::context::Context;
use crate::core::error::{Error, CUDA_ERROR_OUT_OF_MEMORY};
use cudarc::driver::sys::CUdeviceptr;

/// The device address of `[offset, offset + len)` inside an allocation of `bytes` at `base`.
fn address_of_range(base: CUdeviceptr, bytes: usize, offset: usize, len: usize) -> Result<CUdeviceptr, Error> {
    match offset.checked_add(len) {
        Some(end) if end <= bytes => Ok(base + offset as u64),
        _ => Err(Error::invalid_argument(format!(
            "byte range [{offset}, {offset}+{len}) is outside the device buffer of {bytes} bytes"
        ))),
    }
}

/// The error of an allocation that returned `rc`: out of memory says how much the device has
/// free. The context is active.
pub(crate) fn failed_allocation(ctx: &Context, rc: i32, bytes: usize, op: &str) -> Error {
    if rc != CUDA_ERROR_OUT_OF_MEMORY {
        return match ctx.check(rc, op) {
            Err(e) => e,
            Ok(()) => Error::invalid_state(format!("{op} failed without an error code")),
        };
    }
    let (mut free, mut total) = (0usize, 0usize);
    // SAFETY: out-pointers are valid; the context is active.
    let info = unsafe { (ctx.driver().api.cuMemGetInfo)(&mut free, &mut total) };
    let state = if info == 0 { format!("; the device has {free} of {total} bytes free") } else { String::new() };
    Error::cuda(
        CUDA_ERROR_OUT_OF_MEMORY,
        op,
        format!("CUDA_ERROR_OUT_OF_MEMORY (2): could not allocate {bytes} bytes ({:.2} GiB) of device memory{state}", bytes as f64 / (1u64 << 30) as f64),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_inside_pass_and_outside_or_overflowing_fail() {
        assert_eq!(address_of_range(0x1000, 16, 0, 16).ok(), Some(0x1000));
        assert_eq!(address_of_range(0x1000, 16, 16, 0).ok(), Some(0x1010));
        let err = address_of_range(0x1000, 16, 8, 9).expect_err("past the end");
        assert!(err.to_string().contains("outside the device buffer of 16 bytes"), "{err}");
        assert!(address_of_range(0x1000, 16, usize::MAX, 2).is_err());
    }
}
