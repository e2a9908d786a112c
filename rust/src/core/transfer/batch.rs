//! Many Java arrays copied in one staged pass (rule T1): the arrays of a batch are laid end to end
//! as one run of bytes that moves through the same [`pipeline`](super::pipeline), staging slots
//! and [`engine`](super::engine) as a single array, so many small arrays share one pinned chunk.
//! Each chunk then holds pieces of several arrays, and its copies go to the driver in one call,
//! `cuMemcpyBatchAsync`, where the driver has it (CUDA 12.8+), or else one copy per piece (pieces
//! whose device ranges follow one another, views of one allocation say, merged first). Either way,
//! all of it on one stream, in order after the work queued before.

use super::engine::{overlapping, DriverEngine, Segment};
use super::pipeline;
use super::staging::{Pool, Slot};
use super::Plan;
use crate::core::driver::Optional;
use crate::core::error::{Error, Result};
use crate::core::memory::DeviceMemory;
use crate::core::streams::StreamUse;
use cudarc::driver::sys::CUdeviceptr;

/// One array of a batch: `len` bytes at byte `offset` of `memory`.
pub struct Target<'a> {
    pub memory: &'a DeviceMemory,
    pub offset: usize,
    pub len: usize,
}

/// Whether a batch may use `cuMemcpyBatchAsync` (when the driver has it), or must copy piece by
/// piece (what a driver before 12.8 gets; the tests and benchmarks compare the two).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Entry {
    Batched,
    PerPiece,
}

/// The segments of a batch, in order, and its length in bytes, from each array's (device address,
/// length, base of the allocation the address lies in).
fn lay_out(targets: &[(CUdeviceptr, usize, CUdeviceptr)]) -> (Vec<Segment>, usize) {
    let mut segments = Vec::with_capacity(targets.len());
    let mut total = 0;
    for (index, &(device, len, allocation)) in targets.iter().enumerate() {
        if len > 0 {
            segments.push(Segment { index, start: total, len, device, allocation });
            total += len;
        }
    }
    (segments, total)
}

/// Two targets (by index, lower first) whose device ranges share a byte, if any.
fn first_overlap(targets: &[(CUdeviceptr, usize)]) -> Option<(usize, usize)> {
    let mut order: Vec<usize> = (0..targets.len()).filter(|&i| targets[i].1 > 0).collect();
    order.sort_unstable_by_key(|&i| targets[i].0);
    order.windows(2).find(|w| targets[w[0]].0 + targets[w[0]].1 as u64 > targets[w[1]].0).map(|w| (w[0].min(w[1]), w[0].max(w[1])))
}

/// Copies each array of a batch to its target on `on`: `fill(index, done, piece)` writes bytes
/// `[done, done + piece.len())` of array `index` into `piece`, each byte of each array once and in
/// order. Returns once every array has been read; with `wait_for_device` only once all bytes are
/// on the device, too. The targets' context must be active and `on` one of its streams.
pub fn upload(
    targets: &[Target<'_>],
    on: &StreamUse,
    plan: Plan,
    entry: Entry,
    wait_for_device: bool,
    mut fill: impl FnMut(usize, usize, &mut [u8]) -> Result<()>,
) -> Result<()> {
    copy(targets, on, plan, entry, true, |engine, slots, chunk, total| {
        pipeline::upload(engine, slots, 0, total, chunk, |done, piece| {
            let mut at = 0;
            for (segment, from, n) in overlapping(engine.segments, done, piece.len()) {
                fill(segment.index, from, &mut piece[at..at + n])?;
                at += n;
            }
            Ok(())
        })?;
        if wait_for_device {
            for slot in slots.iter_mut() {
                slot.wait(engine.ctx)?;
            }
        }
        Ok(())
    })
}

/// Copies each target of a batch into its array: `drain(index, done, piece)` stores `piece` at
/// bytes `[done, done + piece.len())` of array `index`. Returns once every byte is stored.
pub fn download(
    targets: &[Target<'_>],
    on: &StreamUse,
    plan: Plan,
    entry: Entry,
    mut drain: impl FnMut(usize, usize, &[u8]) -> Result<()>,
) -> Result<()> {
    copy(targets, on, plan, entry, false, |engine, slots, chunk, total| {
        pipeline::download(engine, slots, 0, total, chunk, |done, piece| {
            let mut at = 0;
            for (segment, from, n) in overlapping(engine.segments, done, piece.len()) {
                drain(segment.index, from, &piece[at..at + n])?;
                at += n;
            }
            Ok(())
        })
    })
}

fn copy(
    targets: &[Target<'_>],
    on: &StreamUse,
    plan: Plan,
    entry: Entry,
    upload: bool,
    run: impl FnOnce(&DriverEngine, &mut [Slot], usize, usize) -> Result<()>,
) -> Result<()> {
    let Some(first) = targets.first() else { return Ok(()) };
    let ctx = first.memory.context();
    let mut addresses = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        if t.memory.context().id() != ctx.id() {
            return Err(Error::invalid_argument(format!(
                "buffer {i} of the batch belongs to context id {}, buffer 0 to context id {}",
                t.memory.context().id(),
                ctx.id()
            )));
        }
        let address =
            t.memory.check_range(t.offset, t.len).map_err(|e| Error::invalid_argument(format!("buffer {i} of the batch: {e}")))?;
        addresses.push((address, t.len, t.memory.address()));
    }
    // The copies of a batch run in no particular order among themselves, so two writes to one
    // device byte would leave either value there.
    let ranges: Vec<(CUdeviceptr, usize)> = addresses.iter().map(|&(address, len, _)| (address, len)).collect();
    if let Some((a, b)) = upload.then(|| first_overlap(&ranges)).flatten() {
        return Err(Error::invalid_argument(format!(
            "the device ranges of buffers {a} and {b} of the batch overlap; expected the destinations of an upload to be disjoint"
        )));
    }
    let (segments, total) = lay_out(&addresses);
    if total == 0 {
        return Ok(());
    }
    for t in targets.iter().filter(|t| t.len > 0) {
        t.memory.before_use(on)?;
    }
    let stream = on.raw();
    let plan = plan.checked()?;
    let chunk = plan.chunk_bytes.min(total);
    let slots = plan.depth.min(total.div_ceil(chunk));
    let mut checkout = Pool::of(ctx).checkout(ctx, slots, plan.slot_bytes, plan.max_idle_slots)?;
    // The batch entry point refuses the legacy NULL stream (0, or its handle CU_STREAM_LEGACY, 1).
    let batched = entry == Entry::Batched && stream as usize > 1 && ctx.driver().supports(Optional::cuMemcpyBatchAsync);
    let engine = DriverEngine::new(ctx, stream, &segments, batched);
    run(&engine, &mut checkout.slots, chunk, total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_of_no_bytes_are_left_out_and_the_rest_laid_end_to_end() {
        let (segments, total) = lay_out(&[(1000, 4, 1000), (2000, 0, 2000), (3004, 8, 3000), (4000, 0, 4000)]);
        assert_eq!(total, 12);
        assert_eq!(
            segments,
            [
                Segment { index: 0, start: 0, len: 4, device: 1000, allocation: 1000 },
                Segment { index: 2, start: 4, len: 8, device: 3004, allocation: 3000 }
            ]
        );
        assert_eq!(lay_out(&[]).1, 0);
        assert!(lay_out(&[(5, 0, 5)]).0.is_empty());
    }

    #[test]
    fn overlapping_destinations_are_found_and_touching_ones_are_not() {
        assert_eq!(first_overlap(&[(1000, 4), (1004, 4), (2000, 0), (996, 4)]), None, "back to back, and an empty range");
        assert_eq!(first_overlap(&[(1000, 8), (2000, 4), (1004, 4)]), Some((0, 2)));
        assert_eq!(first_overlap(&[(1000, 4), (1000, 4)]), Some((0, 1)), "the same buffer twice");
        assert_eq!(first_overlap(&[(1000, 0), (1000, 4)]), None, "an empty range overlaps nothing");
    }
}
