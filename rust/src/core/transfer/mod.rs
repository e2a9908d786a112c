//! Copies between device memory and host memory that may only be read or written in pieces and
//! never across a wait for the GPU: Java arrays and heap buffers (rules T1 and L4).
//!
//! Each copy runs the [`pipeline`] through pinned [`staging`] slots of the context: the host's
//! piece of chunk k+1 is copied while the DMA of chunk k runs, so a copy takes about as long as
//! the slower of the two instead of their sum, and the DMA runs at pinned speed (the driver
//! copies pageable memory once more through its own staging). A copy of one range runs on one
//! thread; the caller splits large arrays into ranges copied on several threads at once
//! (`dev.cuhandle.ArrayTransfers`), all on the same stream, so that stream order is kept.

pub mod batch;
mod engine;
pub mod pipeline;
pub mod staging;

use crate::core::context::Context;
use crate::core::error::{Error, Result};
use crate::core::memory::DeviceMemory;
use crate::core::streams::StreamUse;
use engine::{DriverEngine, Segment};
use staging::{Pool, Slot};

/// How one range is copied: chunk size, number of staging slots (2 = double buffering) and the
/// size of the slots the pool allocates (at least one chunk), and how many idle slots the
/// context's pool keeps for later copies.
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub chunk_bytes: usize,
    pub depth: usize,
    pub slot_bytes: usize,
    pub max_idle_slots: usize,
}

impl Plan {
    fn checked(self) -> Result<Plan> {
        if self.chunk_bytes == 0 || self.depth == 0 || self.depth > 64 {
            return Err(Error::invalid_argument(format!(
                "transfer plan {self:?}: expected a chunk of at least 1 byte and 1 to 64 staging slots"
            )));
        }
        Ok(Plan { slot_bytes: self.slot_bytes.max(self.chunk_bytes), ..self })
    }
}

/// Frees the array copies' staging memory of `ctx`, which is about to be destroyed.
pub fn release_staging(ctx: &Context) {
    Pool::release_context(ctx);
}

/// The staging pool of `ctx` (for `Handle::trim_memory`).
pub fn staging_pool(ctx: &Context) -> std::sync::Arc<Pool> {
    Pool::of(ctx)
}

/// Copies `len` bytes to `dst` at `offset` on `stream`; `fill(done, piece)` writes source bytes
/// `[done, done + piece.len())` into `piece`. Returns once the source has been read; with
/// `wait_for_device` only once the bytes are on the device, too. The context of `dst` must be
/// active and `stream` one of its streams.
pub fn upload(
    dst: &DeviceMemory,
    offset: usize,
    len: usize,
    on: &StreamUse,
    plan: Plan,
    wait_for_device: bool,
    fill: impl FnMut(usize, &mut [u8]) -> Result<()>,
) -> Result<()> {
    copy(dst, offset, len, on, plan, |engine, slots, chunk| {
        pipeline::upload(engine, slots, offset, len, chunk, fill)?;
        if wait_for_device {
            for slot in slots.iter_mut() {
                slot.wait(engine.ctx)?;
            }
        }
        Ok(())
    })
}

/// Copies `len` bytes from `src` at `offset` on `stream` to a destination written in pieces:
/// `drain(done, piece)` stores `piece` at destination bytes `[done, done + piece.len())`. Returns
/// once every byte is stored. The context of `src` must be active and `stream` one of its streams.
pub fn download(
    src: &DeviceMemory,
    offset: usize,
    len: usize,
    on: &StreamUse,
    plan: Plan,
    drain: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    copy(src, offset, len, on, plan, |engine, slots, chunk| pipeline::download(engine, slots, offset, len, chunk, drain))
}

fn copy(
    memory: &DeviceMemory,
    offset: usize,
    len: usize,
    on: &StreamUse,
    plan: Plan,
    run: impl FnOnce(&DriverEngine, &mut [Slot], usize) -> Result<()>,
) -> Result<()> {
    memory.check_range(offset, len)?;
    if len == 0 {
        return Ok(());
    }
    memory.before_use(on)?;
    let stream = on.raw();
    let plan = plan.checked()?;
    let ctx = memory.context();
    let chunk = plan.chunk_bytes.min(len);
    let slots = plan.depth.min(len.div_ceil(chunk));
    let mut checkout = Pool::of(ctx).checkout(ctx, slots, plan.slot_bytes, plan.max_idle_slots)?;
    // One segment from the allocation's base: the pipeline's offsets are offsets in the allocation.
    let whole = [Segment { index: 0, start: 0, len: memory.bytes(), device: memory.address(), allocation: memory.address() }];
    let engine = DriverEngine::new(ctx, stream, &whole, false);
    run(&engine, &mut checkout.slots, chunk)
}
