//! Page-locked ("pinned") host memory and the asynchronous copies between it and device memory
//! (rule A1). Pinned memory is what lets `cuMemcpyHtoDAsync`/`DtoHAsync` return at once and run
//! at full link speed: the GPU reads and writes it directly, so it must stay allocated until
//! every copy that uses it has finished. The Java `HostBuffer` guarantees that (each async copy
//! holds it entered until its completion), so nothing here waits.

use crate::core::context::Context;
use crate::core::error::{Error, Result, CUDA_ERROR_OUT_OF_MEMORY};
use crate::core::memory::DeviceMemory;
use cudarc::driver::sys::CUstream;
use std::sync::Arc;

/// `CU_MEMHOSTALLOC_PORTABLE`: the memory counts as pinned in every context, not just the one
/// that allocated it, so one host buffer can feed handles of several devices.
const CU_MEMHOSTALLOC_PORTABLE: u32 = 1;

pub struct PinnedMemory {
    ptr: *mut u8,
    bytes: usize,
    /// Keeps the allocating context (and a primary context's retain) alive: the memory is freed
    /// in it.
    ctx: Arc<Context>,
}

// SAFETY: the pointer is plain host memory; the Java owner serialises its release after every
// use (close waits for calls and copies in flight), and concurrent reads/writes of the bytes are
// the user's business exactly as for a direct ByteBuffer.
unsafe impl Send for PinnedMemory {}
// SAFETY: as above; no method mutates the struct.
unsafe impl Sync for PinnedMemory {}

impl PinnedMemory {
    /// Allocates `bytes` (> 0) of portable pinned memory with `ctx` active (the caller activates).
    pub fn allocate(ctx: &Arc<Context>, bytes: usize) -> Result<PinnedMemory> {
        if bytes == 0 {
            return Err(Error::invalid_argument("a host buffer of 0 bytes was asked for; expected at least 1 byte"));
        }
        let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: the out-pointer is a valid local; the context is active (caller's contract).
        let rc = unsafe { (ctx.driver().api.cuMemHostAlloc)(&mut host, bytes, CU_MEMHOSTALLOC_PORTABLE) };
        if rc == CUDA_ERROR_OUT_OF_MEMORY {
            return Err(Error::cuda(
                rc,
                "cuMemHostAlloc",
                format!("CUDA_ERROR_OUT_OF_MEMORY (2): could not page-lock {bytes} bytes of host memory ({:.2} GiB)", bytes as f64 / (1u64 << 30) as f64),
            ));
        }
        ctx.check(rc, "cuMemHostAlloc")?;
        Ok(PinnedMemory { ptr: host.cast(), bytes, ctx: Arc::clone(ctx) })
    }

    pub fn address(&self) -> *mut u8 {
        self.ptr
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The address of `[offset, offset + len)`, refusing ranges outside the allocation.
    pub fn range(&self, offset: usize, len: usize) -> Result<*mut u8> {
        match offset.checked_add(len) {
            // SAFETY: the offset lies inside (or one past) the allocation.
            Some(end) if end <= self.bytes => Ok(unsafe { self.ptr.add(offset) }),
            _ => Err(Error::invalid_argument(format!("byte range [{offset}, {offset}+{len}) is outside the host buffer of {} bytes", self.bytes))),
        }
    }

    /// Queues a copy of `len` bytes from `self[host_offset..]` to `dst[dst_offset..]` on `stream`
    /// and returns at once (`cuMemcpyHtoDAsync`). The stream's context must be active and be
    /// `dst`'s; `self` must stay allocated until the stream has passed the copy.
    pub fn copy_to_device(&self, host_offset: usize, dst: &DeviceMemory, dst_offset: usize, len: usize, stream: CUstream) -> Result<()> {
        let src = self.range(host_offset, len)?;
        let d = dst.check_range(dst_offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let api = &dst.context().driver().api;
        // SAFETY: both ranges were checked; the caller keeps the pinned memory alive until the
        // copy has run and activated the destination's context.
        dst.context().check(unsafe { (api.cuMemcpyHtoDAsync)(d, src.cast(), len, stream) }, "cuMemcpyHtoDAsync")
    }

    /// The mirror of [`copy_to_device`](Self::copy_to_device) (`cuMemcpyDtoHAsync`).
    pub fn copy_from_device(&self, host_offset: usize, src: &DeviceMemory, src_offset: usize, len: usize, stream: CUstream) -> Result<()> {
        let dst = self.range(host_offset, len)?;
        let s = src.check_range(src_offset, len)?;
        if len == 0 {
            return Ok(());
        }
        let api = &src.context().driver().api;
        // SAFETY: as `copy_to_device`.
        src.context().check(unsafe { (api.cuMemcpyDtoHAsync)(dst.cast(), s, len, stream) }, "cuMemcpyDtoHAsync")
    }
}

impl Drop for PinnedMemory {
    /// Frees the memory in its context. The Java owner calls this only when no copy using the
    /// memory is in flight. If the context is gone, the driver released the memory with it (H8).
    fn drop(&mut self) {
        match self.ctx.activate() {
            Ok(_scope) => {
                // SAFETY: allocated by cuMemHostAlloc, freed exactly once (Drop runs once).
                let rc = unsafe { (self.ctx.driver().api.cuMemFreeHost)(self.ptr.cast()) };
                if rc != 0 {
                    log::warn!("freeing {} bytes of pinned host memory failed: {}", self.bytes, self.ctx.driver().describe(rc));
                }
            }
            Err(e) => log::debug!("not freeing pinned host memory at {:p}: its context is gone ({e})", self.ptr),
        }
    }
}
