//! A cache of page-locked host blocks per context, as PyTorch's caching host allocator keeps
//! them: a released block waits in the cache until the GPU work that used it is done (events
//! recorded on those streams at release), then serves the next allocation of its size class.
//!
//! Why: `cuMemHostAlloc` and `cuMemFreeHost` are slow (milliseconds per GiB) and may synchronise
//! the whole context, so closing a `HostBuffer` would wait for other handles' work. With the cache
//! neither runs in an allocate/close loop; blocks go back to the driver on `Handle.trimMemory()`,
//! when page-locking runs out of memory, and when the context's last cuhandle object is gone.

use crate::core::context::Context;
use crate::core::error::{Error, Result, CUDA_ERROR_OUT_OF_MEMORY};
use crate::core::streams;
use cudarc::driver::sys::{CUevent, CU_MEMHOSTALLOC_DEVICEMAP, CU_MEMHOSTALLOC_PORTABLE};
use std::sync::{Mutex, MutexGuard};

/// The smallest block: one page.
const MIN_BLOCK: usize = 4096;
/// Below this, blocks are powers of two; above, multiples of `LARGE_STEP` (at most 1/8 extra).
const POWER_OF_TWO_UP_TO: usize = 16 << 20;
const LARGE_STEP: usize = 2 << 20;

/// A page-locked block: its address and its size class (at least what was asked for).
#[derive(Debug)]
pub struct PinnedBlock {
    ptr: usize,
    bytes: usize,
}

impl PinnedBlock {
    pub fn address(&self) -> *mut u8 {
        self.ptr as *mut u8
    }
}

/// A released block and the events that say when the GPU work that used it is done.
struct Released {
    block: PinnedBlock,
    marks: Vec<usize>,
}

pub struct PinnedCache {
    free: Mutex<Vec<Released>>,
}

/// The size class of a request of `bytes` (> 0).
pub fn size_class(bytes: usize) -> usize {
    if bytes <= MIN_BLOCK {
        MIN_BLOCK
    } else if bytes <= POWER_OF_TWO_UP_TO {
        bytes.next_power_of_two()
    } else {
        bytes.div_ceil(LARGE_STEP).saturating_mul(LARGE_STEP)
    }
}

impl Default for PinnedCache {
    fn default() -> Self {
        PinnedCache::new()
    }
}

impl PinnedCache {
    pub fn new() -> PinnedCache {
        PinnedCache { free: Mutex::new(Vec::new()) }
    }

    fn free_list(&self) -> MutexGuard<'_, Vec<Released>> {
        // Each update is one push or one remove: a panic elsewhere leaves the list valid.
        self.free.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Bytes of released blocks kept for reuse (summed when asked: only `Handle.memoryStats`
    /// asks, so the allocate and release paths keep no count).
    pub fn cached_bytes(&self) -> u64 {
        self.free_list().iter().map(|released| released.block.bytes as u64).sum()
    }

    /// A block of at least `bytes` (> 0): a cached one of the size class whose users are done,
    /// else a new one. The context must be active.
    pub fn take(&self, ctx: &Context, bytes: usize) -> Result<PinnedBlock> {
        let class = size_class(bytes);
        if let Some(block) = self.take_cached(ctx, class) {
            return Ok(block);
        }
        match allocate(ctx, class) {
            Err(Error::Cuda(f)) if f.code == CUDA_ERROR_OUT_OF_MEMORY => {
                self.trim(ctx);
                allocate(ctx, class)
            }
            other => other,
        }
    }

    fn take_cached(&self, ctx: &Context, class: usize) -> Option<PinnedBlock> {
        let mut free = self.free_list();
        let index = free.iter().position(|r| r.block.bytes == class && done(ctx, &r.marks))?;
        let released = free.swap_remove(index);
        drop(free);
        streams::give_back_events(ctx, released.marks);
        Some(released.block)
    }

    /// Keeps `block` for reuse once the work behind `marks` (events from `streams::mark`) is done.
    pub fn put(&self, block: PinnedBlock, marks: Vec<usize>) {
        self.free_list().push(Released { block, marks });
    }

    /// Frees the cached blocks whose users are done. The context must be active.
    pub fn trim(&self, ctx: &Context) {
        let mut free = self.free_list();
        let mut kept = Vec::with_capacity(free.len());
        for released in free.drain(..) {
            if done(ctx, &released.marks) {
                streams::give_back_events(ctx, released.marks);
                free_block(ctx, released.block);
            } else {
                kept.push(released);
            }
        }
        *free = kept;
    }

    /// Frees every cached block, first waiting for the work that used it (the last cuhandle
    /// object of the context is gone, so that is only graph replays still queued). The context
    /// must be active.
    pub fn flush(&self, ctx: &Context) {
        let all = std::mem::take(&mut *self.free_list());
        for released in all {
            for &event in &released.marks {
                // SAFETY: an event of the active context recorded by `streams::mark`.
                if let Err(e) = unsafe { ctx.driver().cuEventSynchronize(event as CUevent) } {
                    log::debug!("waiting for a pinned block's last use: {e}");
                }
            }
            streams::give_back_events(ctx, released.marks);
            free_block(ctx, released.block);
        }
    }
}

/// Whether every event in `marks` has completed (an error counts as done: the work failed, and a
/// sticky error leaves nothing running).
fn done(ctx: &Context, marks: &[usize]) -> bool {
    marks.iter().all(|&event| {
        // SAFETY: an event of the active context recorded by `streams::mark`, kept until reuse.
        !matches!(unsafe { ctx.driver().event_is_done(event as CUevent) }, Ok(false))
    })
}

fn allocate(ctx: &Context, bytes: usize) -> Result<PinnedBlock> {
    let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
    // Portable: pinned in every context, so one block can feed handles of several devices.
    // Device-mapped: reduction results are written straight into it (see `host_result`).
    // SAFETY: the out-pointer is a valid local; the context is active (callers' contract).
    let allocated = unsafe { ctx.driver().cuMemHostAlloc(&mut host, bytes, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP) };
    match allocated {
        Err(e) if e.cuda_code() == Some(CUDA_ERROR_OUT_OF_MEMORY) => {
            return Err(e.reworded(|_| {
                format!(
                    "CUDA_ERROR_OUT_OF_MEMORY (2): could not page-lock {bytes} bytes of host memory ({:.2} GiB)",
                    bytes as f64 / (1u64 << 30) as f64
                )
            }));
        }
        other => ctx.noted(other)?,
    }
    Ok(PinnedBlock { ptr: host as usize, bytes })
}

fn free_block(ctx: &Context, block: PinnedBlock) {
    // SAFETY: allocated by cuMemHostAlloc in this context; consumed here, so freed once; every
    // use is done (the caller checked or waited for its events).
    if let Err(e) = unsafe { ctx.driver().cuMemFreeHost(block.ptr as *mut std::ffi::c_void) } {
        log::warn!("freeing {} bytes of pinned host memory: {e}", block.bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_classes_are_pages_powers_of_two_then_two_mebibyte_steps() {
        assert_eq!(size_class(1), 4096);
        assert_eq!(size_class(4096), 4096);
        assert_eq!(size_class(4097), 8192);
        assert_eq!(size_class(3 << 20), 4 << 20);
        assert_eq!(size_class(16 << 20), 16 << 20);
        assert_eq!(size_class((16 << 20) + 1), 18 << 20);
        assert_eq!(size_class(1 << 30), 1 << 30);
        for bytes in [1usize, 4095, 4097, 100_000, (16 << 20) + 1, (1 << 30) + 7] {
            let class = size_class(bytes);
            assert!(class >= bytes && class - bytes <= bytes.max(MIN_BLOCK), "{bytes} -> {class}");
        }
    }
}
