//! Device memory owned by (or wrapped into) a context, and copies to and from it (rule K3).
//! Callers activate the context; every range is checked here as well as in Java, so that a bad
//! offset can never reach the driver as a wild pointer.
//!
//! Memory is allocated in stream order from the context's pool on the allocating handle's stream
//! and freed in stream order after the work that used it (rule L3, see `uses`); where the device or
//! driver has no memory pools, `cuMemAlloc` and a context-wide wait before `cuMemFree` instead.

use crate::core::context::Context;
use crate::core::error::{Error, Result, CUDA_ERROR_INVALID_CONTEXT};
use crate::core::memory::context_memory::ContextMemory;
use crate::core::memory::failed_allocation::failed_allocation;
use crate::core::raw_value;
use crate::core::streams::{self, StreamUse};
use crate::core::uses::{UseLog, Uses};
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use std::sync::Arc;

pub struct DeviceMemory {
    ptr: CUdeviceptr,
    bytes: usize,
    release: Release,
    /// Declared after `release`, whose pool reference must be dropped (and, if it was the last
    /// one, the pool destroyed) while the context is still held.
    ctx: Arc<Context>,
}

/// How the memory goes back when dropped.
enum Release {
    /// Not ours (a wrapped raw pointer) or nothing (0 bytes).
    Nothing,
    /// A library's variable: the library frees it when unloaded, after the work noted in the log.
    Variable(Arc<UseLog>),
    /// From `cuMemAlloc` (no memory pools): wait for the context, then `cuMemFree`.
    ContextWide,
    /// From the context's pool: `cuMemFreeAsync` after the streams that used it. `_memory` keeps
    /// the pool alive until the memory is back in it.
    InStreamOrder { uses: Uses, _memory: Arc<ContextMemory> },
}

impl DeviceMemory {
    /// Allocates `bytes` in `ctx`, in stream order on `on` where the context has a pool. `ctx` is
    /// active, or `on` is a handle's own stream and the driver takes the context from it
    /// (`Handle::in_stream_order`); the calls that need a current context make it current.
    pub fn allocate(memory: &Arc<ContextMemory>, ctx: &Arc<Context>, bytes: usize, on: &StreamUse) -> Result<DeviceMemory> {
        if bytes == 0 {
            return Ok(DeviceMemory { ptr: 0, bytes, release: Release::Nothing, ctx: Arc::clone(ctx) });
        }
        if on.is_capture() {
            return Err(Error::invalid_state("device memory cannot be allocated while the handle captures a graph"));
        }
        match memory.pool() {
            Some(pool) => {
                let ptr = pool.allocate(ctx, bytes, on.raw())?;
                let release = Release::InStreamOrder { uses: Uses::at_home(on.clone()), _memory: Arc::clone(memory) };
                Ok(DeviceMemory { ptr, bytes, release, ctx: Arc::clone(ctx) })
            }
            None => {
                let _scope = ctx.activate()?; // cuMemAlloc allocates in the current context
                let mut ptr = 0;
                // SAFETY: out-pointer is valid; the context is active (the scope above).
                unsafe { ctx.driver().cuMemAlloc(&mut ptr, bytes) }.map_err(|e| failed_allocation(ctx, e, bytes))?;
                Ok(DeviceMemory { ptr, bytes, release: Release::ContextWide, ctx: Arc::clone(ctx) })
            }
        }
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
        Ok(DeviceMemory { ptr, bytes, release: Release::Nothing, ctx: Arc::clone(ctx) })
    }

    /// A view of a library's variable in `ctx`, whose uses are noted in the library's `log` so
    /// that the library's unload waits for them.
    pub fn wrap_variable(ctx: &Arc<Context>, ptr: CUdeviceptr, bytes: usize, log: &Arc<UseLog>) -> Result<DeviceMemory> {
        let mut memory = DeviceMemory::wrap(ctx, ptr, bytes)?;
        memory.release = Release::Variable(Arc::clone(log));
        Ok(memory)
    }

    /// Call before queuing work on `on` that reads or writes this memory (rule L3): notes the
    /// stream, so that the release waits for it, and orders a stream's first use after the
    /// allocation. Free for the allocating handle's own stream.
    #[inline]
    pub fn before_use(&self, on: &StreamUse) -> Result<()> {
        match &self.release {
            Release::InStreamOrder { uses, .. } => uses.before_use(&self.ctx, on),
            Release::Variable(log) => {
                log.note(&self.ctx, on);
                Ok(())
            }
            Release::Nothing | Release::ContextWide => Ok(()),
        }
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
    pub fn memset(&self, offset: usize, len: usize, value: u8, on: &StreamUse) -> Result<()> {
        let dst = self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.before_use(on)?;
        // SAFETY: the range was checked against the allocation; the context is active.
        self.ctx.noted(unsafe { self.ctx.driver().cuMemsetD8Async(dst, value, len, on.raw()) })
    }

    /// Copies `len` host bytes from `src` to `offset`, in stream order. Pageable host memory may
    /// be reused when this returns (the driver stages it before returning); page-locked memory (a
    /// `HostRegistration`'s, a `HostBuffer`'s) is read by the DMA later, once the stream gets there.
    ///
    /// # Safety
    /// `src` must be valid for reading `len` bytes for the duration of the call, and, if it is
    /// page-locked, until the stream has passed the copy.
    pub unsafe fn upload(&self, offset: usize, src: *const u8, len: usize, on: &StreamUse) -> Result<()> {
        let dst = self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.before_use(on)?;
        // SAFETY: range checked; caller guarantees `src`.
        self.ctx.noted(unsafe { self.ctx.driver().cuMemcpyHtoDAsync(dst, src.cast(), len, on.raw()) })
    }

    /// Copies `len` bytes from `offset` to host memory `dst` and waits until they are there.
    ///
    /// # Safety
    /// `dst` must be valid for writing `len` bytes for the duration of the call.
    pub unsafe fn download(&self, offset: usize, dst: *mut u8, len: usize, on: &StreamUse) -> Result<()> {
        let src = self.check_range(offset, len)?;
        if len == 0 {
            return Ok(());
        }
        self.before_use(on)?;
        let stream = on.raw();
        let driver = self.ctx.driver();
        // SAFETY: range checked; caller guarantees `dst`.
        self.ctx.noted(unsafe { driver.cuMemcpyDtoHAsync(dst.cast(), src, len, stream) })?;
        // The host memory is only borrowed for this call: wait until the copy is done.
        // SAFETY: the stream belongs to the active context.
        self.ctx.noted(unsafe { driver.cuStreamSynchronize(stream) })
    }

    /// Copies `len` bytes from `src` at `src_offset` to `self` at `offset`, in stream order.
    /// Overlapping ranges of one allocation are refused: the driver leaves such copies undefined.
    pub fn copy_from(&self, offset: usize, src: &DeviceMemory, src_offset: usize, len: usize, on: &StreamUse) -> Result<()> {
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
        self.before_use(on)?;
        src.before_use(on)?;
        // SAFETY: both ranges checked and disjoint; the context is active (same-context check done by caller).
        self.ctx.noted(unsafe { self.ctx.driver().cuMemcpyDtoDAsync(d, s, len, on.raw()) })
    }
}

impl Drop for DeviceMemory {
    /// Gives the memory back once the work queued on it is done (rule L3), without waiting on the
    /// host: in stream order after every stream that used it, or, without memory pools, after a
    /// context-wide wait (`cuCtxSynchronize`, as `cudaFree` does). Skips the free if the context is
    /// gone: its memory went with it (H8).
    fn drop(&mut self) {
        if matches!(self.release, Release::Nothing | Release::Variable(_)) || self.ptr == 0 {
            return;
        }
        if let Release::InStreamOrder { uses, .. } = &self.release {
            if free_on_home_stream_unactivated(&self.ctx, self.ptr, uses) {
                return;
            }
        }
        match self.ctx.activate() {
            Ok(_scope) => {
                let freed = match &self.release {
                    Release::InStreamOrder { uses, .. } => free_in_stream_order(&self.ctx, self.ptr, uses),
                    _ => free_context_wide(&self.ctx, self.ptr),
                };
                if let Err(e) = freed {
                    log::warn!("freeing {} bytes of device memory at {:#x} failed: {e}", self.bytes, self.ptr);
                }
            }
            Err(e) => log::debug!("not freeing {:#x}: its context is gone ({e})", self.ptr),
        }
    }
}

/// The common case of [`free_in_stream_order`] without making the context current: memory used
/// on its home stream only, a pooled stream, where the driver takes a call's context from its
/// stream (`driver::stream_context`). Returns whether it was handled (freed, or a failure logged);
/// `false` leaves the free to the activated path: other uses to wait for, an older driver, a
/// context that fails validation (destroyed, reset or poisoned), or a driver that asks for a current
/// context after all.
fn free_on_home_stream_unactivated(ctx: &Context, ptr: CUdeviceptr, uses: &Uses) -> bool {
    let StreamUse::Pooled(lease) = uses.home() else { return false };
    if !uses.only_home() || !matches!(ctx.validate_without_activation(), Ok(true)) {
        return false;
    }
    // SAFETY: memory of this context from its pool, freed once (Drop runs once), used only on its
    // home stream, so stream order covers every use; the pooled stream is never destroyed while
    // the context lives, and the context was validated just now.
    match ctx.noted(unsafe { ctx.driver().cuMemFreeAsync(ptr, lease.stream.raw()) }) {
        Err(e) if e.cuda_code() == Some(CUDA_ERROR_INVALID_CONTEXT) => false,
        Err(e) => {
            log::warn!("freeing device memory at {ptr:#x} failed: {e}");
            true
        }
        Ok(()) => true,
    }
}

/// `cuMemFreeAsync` on the home stream (or, when that is a user stream nobody is attached to any
/// more, the context's release stream), after waiting on the GPU for every other stream whose use
/// may still run. The context is active.
fn free_in_stream_order(ctx: &Context, ptr: CUdeviceptr, uses: &Uses) -> Result<()> {
    if let (StreamUse::Pooled(lease), true) = (uses.home(), uses.only_home()) {
        // The common case: used on its own stream only, so stream order covers every use.
        // SAFETY: memory of this context from its pool, freed once (Drop runs once), after its
        // uses in stream order; the pooled stream is never destroyed.
        return ctx.noted(unsafe { ctx.driver().cuMemFreeAsync(ptr, lease.stream.raw()) });
    }
    let all = uses.all();
    let release;
    let on: CUstream = match uses.home() {
        StreamUse::Pooled(lease) => lease.stream.raw(),
        StreamUse::Legacy { raw } => *raw as CUstream,
        _ => {
            release = streams::release_stream(ctx)?;
            release.raw()
        }
    };
    // For a user home stream, `order_after` waits for it too while a handle is still attached.
    // SAFETY: `on` is a pooled stream of this context (never destroyed) or its legacy stream.
    unsafe { streams::order_after(ctx, on, all.iter())? };
    // SAFETY: memory of this context from its pool, freed once (Drop runs once), ordered after
    // every use that may still run; the stream is pooled (never destroyed) or the legacy stream.
    ctx.noted(unsafe { ctx.driver().cuMemFreeAsync(ptr, on) })
}

/// Memory from `cuMemAlloc` may be in use by any stream of the context: wait for all of them
/// (`cuCtxSynchronize`), then `cuMemFree`. The context is active.
fn free_context_wide(ctx: &Context, ptr: CUdeviceptr) -> Result<()> {
    let driver = ctx.driver();
    // SAFETY: the context is active; cuCtxSynchronize takes no arguments.
    if let Err(e) = ctx.noted(unsafe { driver.cuCtxSynchronize() }) {
        log::warn!("freeing device memory at {ptr:#x}: waiting for the context's work failed ({e}); freeing anyway");
    }
    // SAFETY: memory of this context from cuMemAlloc, freed once (Drop runs once), after all
    // queued work finished.
    ctx.noted(unsafe { driver.cuMemFree(ptr) })
}

/// The device address of `[offset, offset + len)` inside an allocation of `bytes` at `base`.
fn address_of_range(base: CUdeviceptr, bytes: usize, offset: usize, len: usize) -> Result<CUdeviceptr> {
    match offset.checked_add(len) {
        Some(end) if end <= bytes => Ok(base + offset as u64),
        _ => Err(Error::invalid_argument(format!("byte range [{offset}, {offset}+{len}) is outside the device buffer of {bytes} bytes"))),
    }
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
