//! What cuhandle keeps per context for memory: the stream-ordered pool (`pool`) and the cache of
//! pinned host blocks (`pinned_cache`).
//!
//! One `ContextMemory` per context id is shared by the handles that allocated and by every
//! allocation. It is made on the first allocation (a handle that allocates nothing costs nothing
//! here) and released when the last of them is gone: the pinned blocks go back to the driver and
//! the pool is destroyed, so a context that cuhandle stops using keeps no memory of cuhandle's,
//! and a primary context released by its last handle is not kept alive by a cache.

use crate::core::context::Context;
use crate::core::device::DeviceInfo;
use crate::core::error::Result;
use crate::core::memory::pinned_cache::PinnedCache;
use crate::core::memory::pool::{self, Pool, PoolStats};
use std::sync::{Arc, Mutex, Weak};

pub struct ContextMemory {
    /// A view of the context that holds no retain: every holder of this object holds the context
    /// itself (a handle or an allocation, dropped after this), so it is alive when this drops.
    ctx: Context,
    /// None where the device, the driver or `-Dcuhandle.pool.enabled=false` rules pools out:
    /// device memory then uses `cuMemAlloc` and a context-wide wait before `cuMemFree`.
    pool: Option<Pool>,
    pinned: PinnedCache,
}

static REGISTRY: Mutex<Vec<(u64, Weak<ContextMemory>)>> = Mutex::new(Vec::new());

/// The memory state of `ctx` (active), made on first use.
pub fn of(ctx: &Context, device: &DeviceInfo) -> Result<Arc<ContextMemory>> {
    // Held while a new one is made, so that two threads never make two pools for one context.
    let mut registry = REGISTRY.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    registry.retain(|(_, weak)| weak.strong_count() > 0);
    if let Some(memory) = registry.iter().find(|(id, _)| *id == ctx.id()).and_then(|(_, weak)| weak.upgrade()) {
        return Ok(memory);
    }
    let pool = if device.memory_pools && pool::enabled() { Some(Pool::create(ctx, device.ordinal)?) } else { None };
    let memory = Arc::new(ContextMemory { ctx: ctx.borrowed_view(), pool, pinned: PinnedCache::new() });
    registry.push((ctx.id(), Arc::downgrade(&memory)));
    Ok(memory)
}

impl ContextMemory {
    pub fn pool(&self) -> Option<&Pool> {
        self.pool.as_ref()
    }

    pub fn pinned(&self) -> &PinnedCache {
        &self.pinned
    }

    /// Pool statistics (zero without a pool) and the pinned bytes cached for reuse. The context
    /// must be active.
    pub fn stats(&self, ctx: &Context) -> Result<(PoolStats, u64)> {
        let pool = match &self.pool {
            Some(pool) => pool.stats(ctx)?,
            None => PoolStats::default(),
        };
        Ok((pool, self.pinned.cached_bytes()))
    }

    /// Gives cached device and pinned memory back (see `Pool::trim`, `PinnedCache::trim`). The
    /// context must be active.
    pub fn trim(&self, ctx: &Context) -> Result<()> {
        self.pinned.trim(ctx);
        match &self.pool {
            Some(pool) => pool.trim(ctx),
            None => Ok(()),
        }
    }
}

impl Drop for ContextMemory {
    fn drop(&mut self) {
        match self.ctx.activate() {
            Ok(_scope) => {
                self.pinned.flush(&self.ctx);
                if let Some(pool) = self.pool.take() {
                    if let Err(e) = pool.trim(&self.ctx) {
                        log::debug!("trimming the memory pool before destroying it: {e}");
                    }
                    pool.destroy(&self.ctx);
                }
            }
            // The context is gone, and its memory with it (H8).
            Err(e) => log::debug!("not releasing the memory pool and pinned cache of context id {}: {e}", self.ctx.id()),
        }
    }
}
