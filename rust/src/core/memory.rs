//! Device memory owned by (or wrapped into) a context, and copies to and from it (rule K3).
//! Callers activate the context; every range is checked here as well as in Java, so that a bad
//! offset can never reach the driver as a wild pointer.

use crate::core::context::Context;
use crate::core::device::DeviceInfo;
use crate::core::error::{Error, Result};
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use std::sync::Arc;

const CUDA_ERROR_OUT_OF_MEMORY: i32 = 2;

pub struct DeviceMemory {
    ptr: CUdeviceptr,
    bytes: usize,
    ctx: Arc<Context>,
    /// Allocated with cuMemAllocAsync (stream-ordered free possible).
    pooled: bool,
    /// False for wrapped raw pointers: the caller frees them.
    owned: bool,
}

impl DeviceMemory {
    /// Allocates `bytes` in the active context `ctx`, stream-ordered on `stream` where the device
    /// supports memory pools.
    pub fn allocate(ctx: &Arc<Context>, device: &DeviceInfo, bytes: usize, stream: CUstream) -> Result<DeviceMemory> {
        let mut ptr = 0;
        if bytes > 0 {
            let api = &ctx.driver().api;
            let (rc, op) = if device.memory_pools {
                // SAFETY: out-pointer is valid; the stream belongs to the active context.
                (unsafe { (api.cuMemAllocAsync)(&mut ptr, bytes, stream) }, "cuMemAllocAsync")
            } else {
                // SAFETY: out-pointer is valid; the context is active.
                (unsafe { (api.cuMemAlloc)(&mut ptr, bytes) }, "cuMemAlloc")
            };
            if rc == CUDA_ERROR_OUT_OF_MEMORY {
                return Err(out_of_memory(ctx, bytes, op));
            }
            ctx.check(rc, op)?;
        }
        Ok(DeviceMemory { ptr, bytes, ctx: Arc::clone(ctx), pooled: device.memory_pools, owned: true })
    }

    /// A view of memory someone else allocated in `ctx` (interop); never freed by us.
    pub fn wrap(ctx: &Arc<Context>, ptr: CUdeviceptr, bytes: usize) -> Result<DeviceMemory> {
        if ptr == 0 && bytes > 0 {
            return Err(Error::invalid_argument("cannot wrap device pointer 0 with a non-zero size"));
        }
        ptr.checked_add(bytes as u64)
            .ok_or_else(|| Error::invalid_argument(format!("device pointer {ptr:#x} + {bytes} bytes overflows the address space")))?;
        Ok(DeviceMemory { ptr, bytes, ctx: Arc::clone(ctx), pooled: false, owned: false })
    }

    pub fn address(&self) -> CUdeviceptr {
        self.ptr
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// Frees the memory (stream-ordered on `stream` when it was pool-allocated and a stream of its
    /// context is given). Skips the free if the context is gone: its memory went with it (H8).
    pub fn free(self, stream: Option<CUstream>) {
        if !self.owned || self.ptr == 0 {
            return;
        }
        match self.ctx.activate() {
            Ok(_scope) => {
                let api = &self.ctx.driver().api;
                let rc = match stream {
                    // SAFETY: pool memory of this context, freed once, ordered after prior work.
                    Some(s) if self.pooled => unsafe { (api.cuMemFreeAsync)(self.ptr, s) },
                    // SAFETY: memory of this context, freed once; cuMemFree waits for its users.
                    _ => unsafe { (api.cuMemFree)(self.ptr) },
                };
                if rc != 0 {
                    log::warn!("freeing {} bytes at {:#x} failed: {}", self.bytes, self.ptr, self.ctx.driver().describe(rc));
                }
            }
            Err(e) => log::debug!("not freeing {:#x}: its context is gone ({e})", self.ptr),
        }
    }

    /// Drops the record without freeing (the context already took the memory with it).
    pub fn forget(self) {}

    /// Fails unless `[offset, offset + len)` lies inside the allocation.
    pub fn check_range(&self, offset: usize, len: usize) -> Result<CUdeviceptr> {
        address_of_range(self.ptr, self.bytes, offset, len)
    }

    /// Sets `len` bytes from `offset` to `value`, in stream order.
    pub fn memset(&self, offset: usize, len: usize, value: u8, stream: CUstream) -> Result<()> {
        let dst = self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: the range was checked against the allocation; the context is active.
        self.ctx.check(unsafe { (self.ctx.driver().api.cuMemsetD8Async)(dst, value, len, stream) }, "cuMemsetD8Async")
    }

    /// Copies `len` host bytes from `src` to `offset`, in stream order. The host memory may be
    /// reused when this returns (pageable sources are staged before the call returns).
    ///
    /// # Safety
    /// `src` must be valid for reading `len` bytes for the duration of the call.
    pub unsafe fn upload(&self, offset: usize, src: *const u8, len: usize, stream: CUstream) -> Result<()> {
        let dst = self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: range checked; caller guarantees `src`.
        self.ctx.check(unsafe { (self.ctx.driver().api.cuMemcpyHtoDAsync)(dst, src.cast(), len, stream) }, "cuMemcpyHtoDAsync")
    }

    /// Copies `len` bytes from `offset` to host memory `dst` and waits until they are there.
    ///
    /// # Safety
    /// `dst` must be valid for writing `len` bytes for the duration of the call.
    pub unsafe fn download(&self, offset: usize, dst: *mut u8, len: usize, stream: CUstream) -> Result<()> {
        let src = self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let api = &self.ctx.driver().api;
        // SAFETY: range checked; caller guarantees `dst`.
        self.ctx.check(unsafe { (api.cuMemcpyDtoHAsync)(dst.cast(), src, len, stream) }, "cuMemcpyDtoHAsync")?;
        // The host memory is only borrowed for this call: wait until the copy is done.
        // SAFETY: the stream belongs to the active context.
        self.ctx.check(unsafe { (api.cuStreamSynchronize)(stream) }, "cuStreamSynchronize")
    }

    /// Copies `len` bytes from `src` at `src_offset` to `self` at `offset`, in stream order.
    pub fn copy_from(&self, offset: usize, src: &DeviceMemory, src_offset: usize, len: usize, stream: CUstream) -> Result<()> {
        let d = self.check_range(offset, len)?;
        let s = src.check_range(src_offset, len)?;
        if len == 0 {
            return Ok(());
        }
        // SAFETY: both ranges checked; the context is active (same-context check done by caller).
        self.ctx.check(unsafe { (self.ctx.driver().api.cuMemcpyDtoDAsync)(d, s, len, stream) }, "cuMemcpyDtoDAsync")
    }
}

/// The device address of `[offset, offset + len)` inside an allocation of `bytes` at `base`.
fn address_of_range(base: CUdeviceptr, bytes: usize, offset: usize, len: usize) -> Result<CUdeviceptr> {
    match offset.checked_add(len) {
        Some(end) if end <= bytes => Ok(base + offset as u64),
        _ => Err(Error::invalid_argument(format!(
            "byte range [{offset}, {offset}+{len}) is outside the device buffer of {bytes} bytes"
        ))),
    }
}

fn out_of_memory(ctx: &Context, bytes: usize, op: &str) -> Error {
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
