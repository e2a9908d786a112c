//! Page-locked ("pinned") host memory and the asynchronous copies between it and device memory
//! (rule A1). Pinned memory is what lets `cuMemcpyHtoDAsync`/`DtoHAsync` return at once and run
//! at full link speed: the GPU reads and writes it directly, so it must not be reused while a copy
//! (or a graph replay) that uses it is queued. An asynchronous copy holds its Java `HostBuffer`
//! open until the copy's future completes, so those are done at release; graph replays are not
//! waited for by anyone, so each replay notes its stream here. The release records an event on
//! each such stream of the memory's own context and hands the block to the context's cache, which
//! reuses it only once those events are done: nothing waits. A replay in another context (pinned
//! memory is portable) is waited for at the release instead, since the cache can only keep events
//! of its own context.

use crate::core::context::Context;
use crate::core::error::{Error, Result};
use crate::core::memory::context_memory::ContextMemory;
use crate::core::memory::device::DeviceMemory;
use crate::core::memory::pinned_cache::PinnedBlock;
use crate::core::streams::{self, StreamUse};
use cudarc::driver::sys::CUstream;
use std::sync::{Arc, Mutex};

pub struct PinnedMemory {
    /// Taken out by Drop (always Some before).
    block: Option<PinnedBlock>,
    /// What was asked for (the block may be larger).
    bytes: usize,
    /// Graph replays that use the memory: the replaying handle's context and stream.
    replays: Mutex<Vec<(Arc<Context>, StreamUse)>>,
    /// Declared before `ctx`, so that it is dropped (and, if last, flushed) while the context is
    /// still held.
    memory: Arc<ContextMemory>,
    /// Keeps the allocating context (and a primary context's retain) alive while the memory is.
    ctx: Arc<Context>,
}

impl PinnedMemory {
    /// `bytes` (> 0) of portable pinned memory from `memory`'s cache, with `ctx` active.
    pub fn allocate(memory: &Arc<ContextMemory>, ctx: &Arc<Context>, bytes: usize) -> Result<PinnedMemory> {
        if bytes == 0 {
            return Err(Error::invalid_argument("a host buffer of 0 bytes was asked for; expected at least 1 byte"));
        }
        let block = memory.pinned().take(ctx, bytes)?;
        Ok(PinnedMemory { block: Some(block), bytes, replays: Mutex::new(Vec::new()), memory: Arc::clone(memory), ctx: Arc::clone(ctx) })
    }

    pub fn address(&self) -> *mut u8 {
        self.block.as_ref().map_or(std::ptr::null_mut(), PinnedBlock::address)
    }
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// The address of `[offset, offset + len)`, refusing ranges outside the allocation.
    pub fn range(&self, offset: usize, len: usize) -> Result<*mut u8> {
        match offset.checked_add(len) {
            // SAFETY: the offset lies inside (or one past) the allocation.
            Some(end) if end <= self.bytes => Ok(unsafe { self.address().add(offset) }),
            _ => Err(Error::invalid_argument(format!(
                "byte range [{offset}, {offset}+{len}) is outside the host buffer of {} bytes",
                self.bytes
            ))),
        }
    }

    /// Notes that a graph replay queued on `used`, a stream of `ctx`, reads or writes this memory:
    /// its reuse waits for that work.
    pub fn note_replay(&self, ctx: &Arc<Context>, used: &StreamUse) {
        if used.is_capture() {
            return; // recorded into an outer graph: its own replays note themselves
        }
        let mut replays = self.replays.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        match replays.iter_mut().find(|(c, u)| c.id() == ctx.id() && u.same_stream(used)) {
            Some(known) => known.1 = used.clone(),
            None => replays.push((Arc::clone(ctx), used.clone())),
        }
    }

    /// Queues a copy of `len` bytes from `self[host_offset..]` to `dst[dst_offset..]` on `on` and
    /// returns at once (`cuMemcpyHtoDAsync`). The stream's context must be active and be `dst`'s.
    pub fn copy_to_device(&self, host_offset: usize, dst: &DeviceMemory, dst_offset: usize, len: usize, on: &StreamUse) -> Result<()> {
        self.copy(host_offset, dst, dst_offset, len, on, true)
    }

    /// The mirror of [`copy_to_device`](Self::copy_to_device) (`cuMemcpyDtoHAsync`).
    pub fn copy_from_device(&self, host_offset: usize, src: &DeviceMemory, src_offset: usize, len: usize, on: &StreamUse) -> Result<()> {
        self.copy(host_offset, src, src_offset, len, on, false)
    }

    fn copy(
        &self,
        host_offset: usize,
        device: &DeviceMemory,
        device_offset: usize,
        len: usize,
        on: &StreamUse,
        upload: bool,
    ) -> Result<()> {
        let host = self.range(host_offset, len)?;
        let d = device.check_range(device_offset, len)?;
        if len == 0 {
            return Ok(());
        }
        device.before_use(on)?;
        let ctx = device.context();
        let driver = ctx.driver();
        let stream: CUstream = on.raw();
        // SAFETY: both ranges were checked; the block stays allocated (and is not reused) until the
        // copy has run, because the Java caller holds the HostBuffer open until the copy's future
        // completes (a recorded copy runs in replays, which note themselves); the caller activated
        // the device memory's context, which owns the stream.
        if upload {
            ctx.noted(unsafe { driver.cuMemcpyHtoDAsync(d, host.cast(), len, stream) })
        } else {
            ctx.noted(unsafe { driver.cuMemcpyDtoHAsync(host.cast(), d, len, stream) })
        }
    }
}

impl Drop for PinnedMemory {
    /// Hands the block to the cache, to be reused once the graph replays that used it are done. If
    /// the context is gone, the driver released the memory with it (H8).
    fn drop(&mut self) {
        let Some(block) = self.block.take() else { return };
        let replays = std::mem::take(&mut *self.replays.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        let (own, foreign): (Vec<_>, Vec<_>) = replays.into_iter().partition(|(ctx, _)| ctx.id() == self.ctx.id());
        for (ctx, used) in &foreign {
            streams::wait_for(ctx, std::slice::from_ref(used));
        }
        match self.ctx.activate() {
            Ok(_scope) => match streams::mark(&self.ctx, own.iter().map(|(_, used)| used)) {
                Ok(marks) => self.memory.pinned().put(block, marks),
                Err(e) => {
                    // Without events the block's last use cannot be told apart from its reuse:
                    // it is neither cached nor freed (leaked) rather than risk either.
                    log::warn!("pinned host memory at {:p} is not reused: marking its last use failed ({e})", block.address());
                }
            },
            Err(e) => log::debug!("not freeing pinned host memory at {:p}: its context is gone ({e})", block.address()),
        }
    }
}
