//! The driver side of the staged [`pipeline`](super::pipeline): the copies between a staging slot
//! and the device ranges its chunk covers, on one stream of the active context, for a single
//! array and for a batch alike.
//!
//! The pipeline counts bytes of one run: a single array's byte offsets in its allocation, or a
//! batch's arrays laid end to end. [`Segment`]s map that run to device addresses (a single array
//! is one segment from the allocation's base). A chunk's copies are the pieces of the segments it
//! covers, pieces whose device ranges follow one another merged (their host sides follow one
//! another in the slot too). They go to the driver one `cuMemcpyHtoDAsync`/`cuMemcpyDtoHAsync`
//! each, or, for a batch on a driver that has it, all in one `cuMemcpyBatchAsync` call. Then the
//! slot's event is recorded after them.

use super::staging::Slot;
use crate::core::context::Context;
use crate::core::driver::memcpy_batch::MemcpyAttributes;
use crate::core::error::Result;
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use std::cell::RefCell;

/// Bytes `[start, start + len)` of the run belong to array `index` and go to or come from device
/// address `device` onwards, inside the allocation that starts at `allocation`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Segment {
    pub index: usize,
    pub start: usize,
    pub len: usize,
    pub device: CUdeviceptr,
    pub allocation: CUdeviceptr,
}

/// The segments that overlap run bytes `[start, start + len)`, each cut to the overlap: (the
/// segment, its first byte in the overlap relative to the segment, the overlap's length).
pub(super) fn overlapping(segments: &[Segment], start: usize, len: usize) -> impl Iterator<Item = (&Segment, usize, usize)> {
    let end = start + len;
    let first = segments.partition_point(|s| s.start + s.len <= start);
    segments[first..].iter().take_while(move |s| s.start < end).map(move |s| {
        let from = start.max(s.start);
        (s, from - s.start, end.min(s.start + s.len) - from)
    })
}

/// The copies of run bytes `[start, start + len)` between the device and staging memory at `host`,
/// in order: (device address, host address, length), device-contiguous pieces of one allocation
/// merged. Pieces of two allocations are never merged, even when one ends where the other begins
/// (a pool hands out neighbouring addresses): the driver refuses a copy that crosses from one
/// allocation into the next ("Copy exceeds allocation size", driver 580).
fn pieces(
    segments: &[Segment],
    start: usize,
    len: usize,
    host: CUdeviceptr,
) -> impl Iterator<Item = (CUdeviceptr, CUdeviceptr, usize)> + '_ {
    let mut at = host;
    let mut cut = overlapping(segments, start, len).map(move |(segment, from, n)| {
        let piece = (segment.device + from as u64, at, n, segment.allocation);
        at += n as u64;
        piece
    });
    let mut pending = cut.next();
    std::iter::from_fn(move || {
        let mut merged = pending?;
        pending = None;
        for next in cut.by_ref() {
            if merged.0 + merged.2 as u64 == next.0 && merged.3 == next.3 {
                merged.2 += next.2;
            } else {
                pending = Some(next);
                break;
            }
        }
        Some((merged.0, merged.1, merged.2))
    })
}

/// The engine of one copy: its segments, stream, and whether a chunk's copies may go in one
/// `cuMemcpyBatchAsync` call.
pub(super) struct DriverEngine<'a> {
    pub ctx: &'a Context,
    pub stream: CUstream,
    pub segments: &'a [Segment],
    pub batched: bool,
    /// The three lists a batch call takes, reused for every chunk.
    lists: RefCell<(Vec<CUdeviceptr>, Vec<CUdeviceptr>, Vec<usize>)>,
}

impl<'a> DriverEngine<'a> {
    pub fn new(ctx: &'a Context, stream: CUstream, segments: &'a [Segment], batched: bool) -> DriverEngine<'a> {
        DriverEngine { ctx, stream, segments, batched, lists: RefCell::new(Default::default()) }
    }

    /// Queues the copies of run bytes `[start, start + len)` between the slot and the device, then
    /// records the slot's event (also when a copy failed: earlier ones may be queued).
    fn queue(&self, slot: &mut Slot, start: usize, len: usize, to_device: bool) -> Result<()> {
        let host = slot.address() as usize as CUdeviceptr;
        let queued = if self.batched {
            self.queue_batched(host, start, len, to_device)
        } else {
            pieces(self.segments, start, len, host).try_for_each(|piece| self.queue_one(piece, to_device))
        };
        let marked = slot.mark_queued(self.ctx, self.stream);
        queued.and(marked)
    }

    fn queue_one(&self, (device, host, n): (CUdeviceptr, CUdeviceptr, usize), to_device: bool) -> Result<()> {
        let driver = self.ctx.driver();
        // SAFETY: the device range lies inside its allocation (checked for the whole copy before
        // the pipeline ran), the host range inside the slot, which stays allocated until its event
        // says the copies finished; the context is active.
        self.ctx.noted(unsafe {
            if to_device {
                driver.cuMemcpyHtoDAsync(device, host as usize as *const std::ffi::c_void, n, self.stream)
            } else {
                driver.cuMemcpyDtoHAsync(host as usize as *mut std::ffi::c_void, device, n, self.stream)
            }
        })
    }

    fn queue_batched(&self, host: CUdeviceptr, start: usize, len: usize, to_device: bool) -> Result<()> {
        let mut lists = self.lists.borrow_mut();
        let (dsts, srcs, sizes) = &mut *lists;
        dsts.clear();
        srcs.clear();
        sizes.clear();
        for (device, at, n) in pieces(self.segments, start, len, host) {
            let (dst, src) = if to_device { (device, at) } else { (at, device) };
            dsts.push(dst);
            srcs.push(src);
            sizes.push(n);
        }
        if let [n] = sizes[..] {
            return self.queue_one((if to_device { dsts[0] } else { srcs[0] }, host, n), to_device);
        }
        // One set of attributes for every copy: attrsIdxs {0}.
        let mut attributes = MemcpyAttributes::stream_ordered();
        let mut first = 0usize;
        let mut failed = usize::MAX;
        let count = sizes.len();
        // SAFETY: the three lists hold `count` entries each, the attribute lists one; every range
        // is as in `queue_one`; the stream is not the legacy NULL stream (the caller only sets
        // `batched` for another), and the context is active. The driver reads the lists during the
        // call only.
        let result = unsafe {
            self.ctx.driver().cuMemcpyBatchAsync(
                dsts.as_mut_ptr(),
                srcs.as_mut_ptr(),
                sizes.as_mut_ptr(),
                count,
                &mut attributes,
                &mut first,
                1,
                &mut failed,
                self.stream,
            )
        };
        let result = result.map_err(|e| {
            if failed < count {
                e.reworded(|text| format!("{text} (copy {failed} of {count} in the batch: {} bytes)", sizes[failed]))
            } else {
                e
            }
        });
        self.ctx.noted(result)
    }
}

impl super::pipeline::Engine for DriverEngine<'_> {
    type Slot = Slot;

    fn host<'s>(&self, slot: &'s mut Slot) -> &'s mut [u8] {
        slot.host()
    }

    fn wait(&self, slot: &mut Slot) -> Result<()> {
        slot.wait(self.ctx)
    }

    fn to_device(&self, slot: &mut Slot, offset: usize, len: usize) -> Result<()> {
        self.queue(slot, offset, len, true)
    }

    fn to_host(&self, slot: &mut Slot, offset: usize, len: usize) -> Result<()> {
        self.queue(slot, offset, len, false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Segments of (device address, length), each in an allocation starting at the address's
    /// thousand (1004 lies in the allocation at 1000).
    fn segments(list: &[(CUdeviceptr, usize)]) -> Vec<Segment> {
        let mut start = 0;
        list.iter()
            .enumerate()
            .map(|(index, &(device, len))| {
                let s = Segment { index, start, len, device, allocation: device / 1000 * 1000 };
                start += len;
                s
            })
            .collect()
    }

    #[test]
    fn a_chunk_covers_the_ends_of_the_arrays_it_cuts() {
        let s = segments(&[(1000, 4), (2000, 8), (3000, 4)]);
        let cut: Vec<_> = overlapping(&s, 2, 8).map(|(s, from, n)| (s.index, from, n)).collect();
        assert_eq!(cut, [(0, 2, 2), (1, 0, 6)]);
        let cut: Vec<_> = overlapping(&s, 12, 4).map(|(s, from, n)| (s.index, from, n)).collect();
        assert_eq!(cut, [(2, 0, 4)]);
        assert_eq!(overlapping(&s, 0, 16).count(), 3);
    }

    #[test]
    fn pieces_on_consecutive_device_ranges_become_one_copy() {
        // Arrays 0 and 1 sit back to back on the device (views of one allocation); array 2 elsewhere.
        let s = segments(&[(1000, 4), (1004, 8), (5000, 4)]);
        assert_eq!(pieces(&s, 0, 16, 70_000).collect::<Vec<_>>(), [(1000, 70_000, 12), (5000, 70_012, 4)]);
        assert_eq!(
            pieces(&s, 6, 8, 90_000).collect::<Vec<_>>(),
            [(1006, 90_000, 6), (5000, 90_006, 2)],
            "a chunk that starts inside an array"
        );
        let s = segments(&[(1000, 4), (1004, 4), (1008, 4)]);
        assert_eq!(pieces(&s, 0, 12, 10).collect::<Vec<_>>(), [(1000, 10, 12)], "all of them back to back");
    }

    #[test]
    fn pieces_of_two_allocations_stay_two_copies_even_back_to_back() {
        // A pool hands out neighbouring addresses: 2000..2004 ends where the allocation at 2004 begins.
        let mut s = segments(&[(2000, 4), (2004, 4)]);
        s[1].allocation = 2004;
        assert_eq!(pieces(&s, 0, 8, 10).collect::<Vec<_>>(), [(2000, 10, 4), (2004, 14, 4)]);
    }

    #[test]
    fn a_single_array_is_one_segment_from_its_allocation_s_base() {
        let s = [Segment { index: 0, start: 0, len: 1 << 20, device: 0x7000_0000, allocation: 0x7000_0000 }];
        assert_eq!(pieces(&s, 4096, 512, 77).collect::<Vec<_>>(), [(0x7000_0000 + 4096, 77, 512)]);
    }
}
