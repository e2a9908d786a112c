//! Device memory owned by (or wrapped into) a context, and copies to and from it (rule K3).
//! Callers activate the context; every range is checked here as well as in Java, so that a bad
//! offset can never reach the driver as a wild pointer.

use crate::core::context::Context;
use crate::core::error::{Error, Result, CUDA_ERROR_OUT_OF_MEMORY};
use crate::core::raw_value;
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use std::sync::Arc;


pub struct DeviceMemory {
    ptr: CUdeviceptr,
    bytes: usize,
    ctx: Arc<Context>,
    /// False for wrapped raw pointers: the caller frees them.
    owned: bool,
}

impl DeviceMemory {
    /// Allocates `bytes` in the active context `ctx`.
    ///
    /// Plain `cuMemAlloc`, not the stream-ordered pool: memory of a handle may be used by every
    /// handle of its context, on any stream, so no single stream orders its lifetime; and pool
    /// memory stays reserved by the context after it is freed (measured: 1.9 GB after 100,000
    /// leaked handles), while `cuMemFree` returns it to the device at once.
    pub fn allocate(ctx: &Arc<Context>, bytes: usize) -> Result<DeviceMemory> {
        let mut ptr = 0;
        if bytes > 0 {
            let api = &ctx.driver().api;
            // SAFETY: out-pointer is valid; the context is active (caller's activation).
            let rc = unsafe { (api.cuMemAlloc)(&mut ptr, bytes) };
            if rc == CUDA_ERROR_OUT_OF_MEMORY {
                return Err(out_of_memory(ctx, bytes, "cuMemAlloc"));
            }
            ctx.check(rc, "cuMemAlloc")?;
        }
        Ok(DeviceMemory { ptr, bytes, ctx: Arc::clone(ctx), owned: true })
    }

    /// A view of memory someone else allocated in `ctx` (interop); never freed by us. The address
    /// is checked only for values no allocation can have (see `raw_value`); whether it really is
    /// device memory of `ctx` is the caller's promise.
    pub fn wrap(ctx: &Arc<Context>, ptr: CUdeviceptr, bytes: usize) -> Result<DeviceMemory> {
        if !(ptr == 0 && bytes == 0) {
            raw_value::check_address(ptr, "the device pointer to wrap")?;
        }
        ptr.checked_add(bytes as u64)
            .filter(|end| *end <= i64::MAX as u64)
            .ok_or_else(|| Error::invalid_argument(format!("device pointer {ptr:#x} + {bytes} bytes overflows the address space")))?;
        Ok(DeviceMemory { ptr, bytes, ctx: Arc::clone(ctx), owned: false })
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
    /// Overlapping ranges of one allocation are refused: the driver leaves such copies undefined.
    pub fn copy_from(&self, offset: usize, src: &DeviceMemory, src_offset: usize, len: usize, stream: CUstream) -> Result<()> {
        let d = self.check_range(offset, len)?;
        let s = src.check_range(src_offset, len)?;
        if len == 0 || d == s {
            return Ok(()); // nothing to move
        }
        if d < s + len as u64 && s < d + len as u64 {
            return Err(Error::invalid_argument(format!(
                "the source bytes [{src_offset}, {src_offset}+{len}) and destination bytes [{offset}, {offset}+{len}) overlap in one allocation; \
                 copy through a temporary buffer"
            )));
        }
        // SAFETY: both ranges checked and disjoint; the context is active (same-context check done by caller).
        self.ctx.check(unsafe { (self.ctx.driver().api.cuMemcpyDtoDAsync)(d, s, len, stream) }, "cuMemcpyDtoDAsync")
    }
}

impl Drop for DeviceMemory {
    /// Frees owned memory after every piece of work queued in its context has finished (rule L3):
    /// any handle of the context, on any stream (its own, a user stream, the legacy or a
    /// per-thread default stream) may still be using it, and freeing under a running kernel lets
    /// the next allocation receive memory that kernel still writes. `cuCtxSynchronize` waits for
    /// all of them, as `cudaFree` does; the launch path pays nothing for it. Skips the free if the
    /// context is gone: its memory went with it (H8).
    fn drop(&mut self) {
        if !self.owned || self.ptr == 0 {
            return;
        }
        match self.ctx.activate() {
            Ok(_scope) => {
                let api = &self.ctx.driver().api;
                // SAFETY: the context is active; cuCtxSynchronize takes no arguments.
                if let Err(e) = self.ctx.check(unsafe { (api.cuCtxSynchronize)() }, "cuCtxSynchronize") {
                    log::warn!("freeing {} bytes at {:#x}: waiting for the context's work failed ({e}); freeing anyway", self.bytes, self.ptr);
                }
                // SAFETY: memory of this context, allocated by cuMemAlloc, freed exactly once
                // (Drop runs once), after all queued work finished.
                let rc = unsafe { (api.cuMemFree)(self.ptr) };
                if rc != 0 {
                    log::warn!("freeing {} bytes at {:#x} failed: {}", self.bytes, self.ptr, self.ctx.driver().describe(rc));
                }
            }
            Err(e) => log::debug!("not freeing {:#x}: its context is gone ({e})", self.ptr),
        }
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
