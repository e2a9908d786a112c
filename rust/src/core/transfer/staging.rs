//! Pinned staging memory for the transfers of Java arrays (rule T1): a small pool per context of
//! page-locked host chunks (`cuMemHostAlloc`, portable), each with an event of that context that
//! tells when the DMA last queued with the chunk has finished.
//!
//! Why per context: an event belongs to one context, and pinned memory is released with the
//! context that allocated it, so the chunks and their events live and die together. The pool
//! holds no retain on the context: a primary context is still released when its last handle
//! closes (rule H6), and its chunks go with it; a pool whose context is gone is forgotten, never
//! freed (its memory is no longer ours), when a new pool is made.
//!
//! A chunk is checked out for the length of one copy and given back with its last DMA possibly
//! still queued (an upload returns once the array has been read): the next user waits for the
//! chunk's event before touching it. The pool keeps as many idle chunks as copies ever had checked
//! out at once (or the configured number, if more), so that copies running side by side (Spark
//! tasks, say) reuse chunks instead of page-locking and freeing memory for every copy, which costs
//! milliseconds each; `Handle.trimMemory()` frees the idle ones. Its lock is held only to take or
//! put back chunks, never across an allocation or a wait for the GPU.

use crate::core::context::{self, Context};
use crate::core::driver::Driver;
use crate::core::error::{Result, CUDA_ERROR_OUT_OF_MEMORY};
use cudarc::driver::sys::{CUevent, CUevent_flags, CU_MEMHOSTALLOC_PORTABLE};
use std::sync::{Arc, Mutex, MutexGuard};

/// `CU_EVENT_DISABLE_TIMING`: the events only order, and untimed ones are cheaper to record.
const CU_EVENT_DISABLE_TIMING: u32 = CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;

/// One staging chunk: page-locked host memory and the event recorded after its last DMA.
pub struct Slot {
    host: *mut u8,
    bytes: usize,
    event: CUevent,
    /// An event was recorded since the last wait: a DMA may still use the memory.
    pending: bool,
    /// When the slot's last DMA was queued, in the order of [`QUEUED`]: a checkout gives its
    /// slots back oldest DMA first, so that the pool's front (what `take_oldest` takes) holds the
    /// slots whose DMA is most likely done.
    queued_at: u64,
}

/// Counts DMAs queued with staging slots, process-wide (only their order matters).
static QUEUED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

impl Slot {
    /// The slot's memory. Only valid to touch once [`wait`](Self::wait) returned.
    pub fn host(&mut self) -> &mut [u8] {
        debug_assert!(!self.pending, "staging memory touched while a DMA may use it");
        // SAFETY: `host` is a live allocation of `bytes` bytes owned by this slot (freed only by
        // `free`, which consumes it); the &mut self borrow makes the slice unique.
        unsafe { std::slice::from_raw_parts_mut(self.host, self.bytes) }
    }

    pub fn address(&self) -> *mut u8 {
        self.host
    }

    /// Returns once the DMA last queued with this slot has finished. A wait for the GPU: the
    /// caller holds nothing of the JVM (no critical region, rule L4).
    pub fn wait(&mut self, ctx: &Context) -> Result<()> {
        if self.pending {
            // SAFETY: the event belongs to `ctx`, which is active (caller's activation).
            ctx.noted(unsafe { ctx.driver().cuEventSynchronize(self.event) })?;
            self.pending = false;
        }
        Ok(())
    }

    /// Records the slot's event on `stream` after the DMA just queued there.
    pub(super) fn mark_queued(&mut self, ctx: &Context, stream: cudarc::driver::sys::CUstream) -> Result<()> {
        // Pending from here on even if the record fails: a DMA was queued, and a later wait on an
        // older record of the event is no proof that it finished. The next user then waits for
        // the stream through the record below, or the context is broken and nothing runs.
        self.pending = true;
        self.queued_at = QUEUED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        // SAFETY: event and stream belong to the active context `ctx`.
        ctx.noted(unsafe { ctx.driver().cuEventRecord(self.event, stream) })
    }

    fn allocate(ctx: &Context, bytes: usize) -> Result<Slot> {
        let driver = ctx.driver();
        let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
        // Portable: pinned in every context, as `HostBuffer`'s memory is.
        // SAFETY: the out-pointer is a valid local; the context is active (caller's activation).
        match unsafe { driver.cuMemHostAlloc(&mut host, bytes, CU_MEMHOSTALLOC_PORTABLE) } {
            Err(e) if e.cuda_code() == Some(CUDA_ERROR_OUT_OF_MEMORY) => {
                return Err(e.reworded(|_| {
                    format!("CUDA_ERROR_OUT_OF_MEMORY (2): could not page-lock {bytes} bytes of staging memory for a Java array copy")
                }));
            }
            other => ctx.noted(other)?,
        }
        let mut event = std::ptr::null_mut();
        // SAFETY: as above.
        if let Err(e) = ctx.noted(unsafe { driver.cuEventCreate(&mut event, CU_EVENT_DISABLE_TIMING) }) {
            // SAFETY: allocated just above, used by nothing yet. A failed free leaves nothing to undo.
            let _ = unsafe { driver.cuMemFreeHost(host) };
            return Err(e);
        }
        Ok(Slot { host: host.cast(), bytes, event, pending: false, queued_at: 0 })
    }

    /// Frees the memory and the event once the slot's last DMA is done.
    fn free(mut self, ctx: &Context) {
        if let Err(e) = self.wait(ctx) {
            log::warn!("freeing {} bytes of staging memory: waiting for its last copy failed ({e}); freeing anyway", self.bytes);
        }
        let driver = ctx.driver();
        // SAFETY: both belong to `ctx` (active), are owned by this slot and freed exactly once
        // (`self` is consumed); no DMA uses the memory any more. A failed event destroy leaves
        // nothing to undo.
        let _ = unsafe { driver.cuEventDestroy(self.event) };
        // SAFETY: as above.
        if let Err(e) = unsafe { driver.cuMemFreeHost(self.host.cast()) } {
            log::warn!("freeing {} bytes of staging memory: {e}", self.bytes);
        }
    }
}

/// The idle slots of one context.
pub struct Pool {
    context: usize,
    context_id: u64,
    driver: &'static Driver,
    idle: Mutex<Vec<Slot>>,
    /// Slots checked out now, and the most ever checked out at once (the idle list's bound).
    out: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
}

// SAFETY: the slots' pointers are driver handles and pinned host memory, usable from any thread;
// a slot is used by one copy at a time (it is out of the pool while checked out).
unsafe impl Send for Pool {}
// SAFETY: as above; the idle list is behind a mutex.
unsafe impl Sync for Pool {}

static POOLS: Mutex<Vec<Arc<Pool>>> = Mutex::new(Vec::new());

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Nothing under these locks can leave the data inconsistent (pushes and pops of whole
    // entries), so a panic elsewhere is no reason to stop copying.
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Pool {
    /// The pool of `ctx`, made on first use.
    pub fn of(ctx: &Context) -> Arc<Pool> {
        let mut pools = lock(&POOLS);
        if let Some(p) = pools.iter().find(|p| p.context_id == ctx.id()) {
            return Arc::clone(p);
        }
        // Pools of destroyed or reset contexts: their memory and events went with the context.
        // SAFETY: contexts the driver gave out; one destroyed since answers with an error (and a
        // reset primary context with a new id), so its pool is dropped.
        pools.retain(|p| unsafe { context::context_id(p.driver, p.context as cudarc::driver::sys::CUcontext) }.ok() == Some(p.context_id));
        let pool = Arc::new(Pool {
            context: ctx.raw() as usize,
            context_id: ctx.id(),
            driver: ctx.driver(),
            idle: Mutex::new(Vec::new()),
            out: std::sync::atomic::AtomicUsize::new(0),
            peak: std::sync::atomic::AtomicUsize::new(0),
        });
        pools.push(Arc::clone(&pool));
        pool
    }

    /// Frees the staging memory of `ctx` (active), which is about to be destroyed (an SM
    /// partition's), and forgets its pool. No copy of `ctx` is in flight: no handle of it is left.
    pub fn release_context(ctx: &Context) {
        let pool = {
            let mut pools = lock(&POOLS);
            let Some(index) = pools.iter().position(|p| p.context_id == ctx.id()) else { return };
            pools.swap_remove(index)
        };
        pool.trim(ctx);
    }

    /// Frees the idle slots (waiting for their last DMA); the next copies page-lock new ones. `ctx`
    /// is the pool's context, active.
    pub fn trim(&self, ctx: &Context) {
        let idle = std::mem::take(&mut *lock(&self.idle));
        for slot in idle {
            slot.free(ctx);
        }
        self.peak.store(self.out.load(std::sync::atomic::Ordering::Acquire), std::sync::atomic::Ordering::Release);
    }

    /// `count` slots of at least `bytes` each, for one copy in `ctx` (active, the pool's context).
    /// Idle slots that are too small (the configured size changed) are freed and replaced.
    pub fn checkout<'c>(self: &Arc<Self>, ctx: &'c Context, count: usize, bytes: usize, max_idle: usize) -> Result<Checkout<'c>> {
        let taken = take_oldest(&mut lock(&self.idle), count);
        let now_out = self.out.fetch_add(count, std::sync::atomic::Ordering::AcqRel) + count;
        self.peak.fetch_max(now_out, std::sync::atomic::Ordering::AcqRel);
        let mut checkout = Checkout { pool: Arc::clone(self), ctx, slots: Vec::with_capacity(count), max_idle, counted: count };
        for slot in taken {
            if slot.bytes >= bytes {
                checkout.slots.push(slot);
            } else {
                slot.free(ctx);
            }
        }
        while checkout.slots.len() < count {
            // On failure `checkout` is dropped and the slots taken so far go back to the pool.
            checkout.slots.push(Slot::allocate(ctx, bytes)?);
        }
        Ok(checkout)
    }
}

/// The `count` idle slots given back longest ago (the front of the list; checkouts give slots back
/// at its end). Why the oldest: a slot comes back with its last DMA possibly still queued, and the
/// next copy must wait for that DMA before it writes the slot. A copy that takes the slot given
/// back last (the ranges of one array copy run one after another on one thread when no helper is
/// free) waited for the DMA of the range just before it, about 20 us per MiB on the H200; the
/// oldest slots' DMAs are usually done.
fn take_oldest<T>(idle: &mut Vec<T>, count: usize) -> Vec<T> {
    idle.drain(..count.min(idle.len())).collect()
}

/// Orders a checkout's slots for giving back: the slot of a copy's last chunk is not always its
/// last slot (3 chunks in 2 slots end on slot 0), so they go back by when their last DMA was
/// queued, and the one queued last ends up at the back of the idle list, taken last.
fn oldest_dma_first<T>(slots: &mut [T], queued_at: impl Fn(&T) -> u64) {
    slots.sort_by_key(queued_at);
}

/// Slots out of a pool for one copy; they go back when it is dropped (also on error paths), with
/// their last DMA possibly still queued.
pub struct Checkout<'c> {
    pool: Arc<Pool>,
    ctx: &'c Context,
    pub slots: Vec<Slot>,
    max_idle: usize,
    /// Slots this checkout added to the pool's count of slots out.
    counted: usize,
}

impl Drop for Checkout<'_> {
    fn drop(&mut self) {
        self.pool.out.fetch_sub(self.counted, std::sync::atomic::Ordering::AcqRel);
        let keep = self.max_idle.max(self.pool.peak.load(std::sync::atomic::Ordering::Acquire));
        let mut surplus = Vec::new();
        oldest_dma_first(&mut self.slots, |slot| slot.queued_at);
        {
            let mut idle = lock(&self.pool.idle);
            for slot in self.slots.drain(..) {
                if idle.len() < keep {
                    idle.push(slot);
                } else {
                    surplus.push(slot);
                }
            }
        }
        for slot in surplus {
            slot.free(self.ctx); // outside the lock: it waits for the slot's DMA
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{oldest_dma_first, take_oldest};

    #[test]
    fn a_checkout_takes_the_slots_given_back_longest_ago_and_leaves_the_newest() {
        let mut idle = vec!["oldest", "older", "newer", "newest"]; // given back in this order
        assert_eq!(take_oldest(&mut idle, 2), ["oldest", "older"]);
        assert_eq!(idle, ["newer", "newest"]);
        assert_eq!(take_oldest(&mut idle, 5), ["newer", "newest"], "no more than there are");
        assert!(idle.is_empty());
        assert!(take_oldest(&mut idle, 1).is_empty());
    }

    #[test]
    fn the_slot_whose_dma_was_queued_last_is_given_back_last_and_taken_last() {
        // A copy of 3 chunks through slots a and b: a (queued 10), b (11), a again (12).
        let mut returned = vec![("a", 12), ("b", 11)];
        oldest_dma_first(&mut returned, |slot| slot.1);
        let mut idle = vec![("older copy", 3)];
        idle.extend(returned);
        assert_eq!(take_oldest(&mut idle, 2), [("older copy", 3), ("b", 11)]);
        assert_eq!(idle, [("a", 12)], "the slot with the newest DMA stays for last");
    }
}
