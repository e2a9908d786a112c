//! The order of work in a staged copy (rule T1): a host range that can only be read or written in
//! pieces, and never across a wait for the GPU (a Java array, rule L4), moves through a few
//! staging slots so that the host's copy of one chunk overlaps the DMA of another.
//!
//! Upload, with two slots A and B: fill A with chunk 0 and queue its DMA; fill B with chunk 1
//! while chunk 0 moves; wait for A's DMA, fill A with chunk 2 while chunk 1 moves; and so on.
//! Download is the mirror: the DMA of the first chunks is queued into every slot up front; then
//! each slot is waited for, drained into the host range, and refilled with the next chunk's DMA
//! while the other slots' chunks move. A slot's host memory is touched only after its last DMA
//! has finished ([`Engine::wait`]), and the host range is touched only between waits.
//!
//! The driver is behind [`Engine`], so that this order can be checked without one (tests below).

use crate::core::error::Result;

/// The driver work of a staged copy.
pub trait Engine {
    /// A piece of staging memory and what tells when the DMA last queued with it has finished.
    type Slot;
    /// The slot's host memory (at least as long as a chunk). Only called after [`wait`](Self::wait).
    fn host<'s>(&self, slot: &'s mut Self::Slot) -> &'s mut [u8];
    /// Returns once the DMA last queued with the slot (by this copy or an earlier one) is done.
    fn wait(&self, slot: &mut Self::Slot) -> Result<()>;
    /// Queues the DMA of the slot's first `len` bytes to device byte `device_offset`.
    fn to_device(&self, slot: &mut Self::Slot, device_offset: usize, len: usize) -> Result<()>;
    /// Queues the DMA of `len` bytes from device byte `device_offset` into the slot's start.
    fn to_host(&self, slot: &mut Self::Slot, device_offset: usize, len: usize) -> Result<()>;
}

/// The `i`-th chunk of `len` bytes cut into pieces of `chunk`: (offset, length).
fn piece(i: usize, len: usize, chunk: usize) -> (usize, usize) {
    let start = i * chunk;
    (start, chunk.min(len - start))
}

/// Copies `len` host bytes to device bytes `[device_offset, device_offset + len)`:
/// `fill(done, piece)` writes host bytes `[done, done + piece.len())` into `piece`. Returns when
/// the host range has been read; the last DMAs may still be queued (the slots remember them).
pub fn upload<E: Engine>(
    engine: &E,
    slots: &mut [E::Slot],
    device_offset: usize,
    len: usize,
    chunk: usize,
    mut fill: impl FnMut(usize, &mut [u8]) -> Result<()>,
) -> Result<()> {
    debug_assert!(chunk > 0 && !slots.is_empty());
    let count = len.div_ceil(chunk);
    for i in 0..count {
        let (start, n) = piece(i, len, chunk);
        let slot = &mut slots[i % slots.len()];
        engine.wait(slot)?; // the DMA that last read this slot (chunk i - slots.len(), or an earlier copy's)
        fill(start, &mut engine.host(slot)[..n])?;
        engine.to_device(slot, device_offset + start, n)?;
    }
    Ok(())
}

/// Copies device bytes `[device_offset, device_offset + len)` to a host range written in pieces:
/// `drain(done, piece)` stores `piece` at host bytes `[done, done + piece.len())`. Returns when
/// every byte is stored.
pub fn download<E: Engine>(
    engine: &E,
    slots: &mut [E::Slot],
    device_offset: usize,
    len: usize,
    chunk: usize,
    mut drain: impl FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    debug_assert!(chunk > 0 && !slots.is_empty());
    let count = len.div_ceil(chunk);
    let depth = slots.len();
    for (i, slot) in slots.iter_mut().enumerate().take(count) {
        let (start, n) = piece(i, len, chunk);
        engine.wait(slot)?; // an earlier copy's DMA may still read this slot
        engine.to_host(slot, device_offset + start, n)?;
    }
    for i in 0..count {
        let (start, n) = piece(i, len, chunk);
        let slot = &mut slots[i % depth];
        engine.wait(slot)?;
        drain(start, &engine.host(slot)[..n])?;
        if i + depth < count {
            let (next, m) = piece(i + depth, len, chunk);
            engine.to_host(slot, device_offset + next, m)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Error;
    use std::cell::{Cell, RefCell};

    /// DMA that happens late: a queued copy runs only when its slot, or a slot of a later copy, is
    /// waited for (in queue order, like one stream). Touching a slot's memory while a copy of it is
    /// queued panics: that is what the pipeline must never do. Slot memory lives outside the slots
    /// (as pinned memory does), so the engine can run any queued copy.
    struct LateDma {
        device: RefCell<Vec<u8>>,
        memory: Vec<RefCell<Vec<u8>>>,
        queued: Vec<Cell<bool>>,
        queue: RefCell<Vec<(usize, bool, usize, usize)>>, // (slot, to_device, device offset, len)
        waits: Cell<usize>,
    }

    struct Slot(usize);

    impl LateDma {
        fn new(device_bytes: usize, slots: usize, slot_bytes: usize) -> LateDma {
            LateDma {
                device: RefCell::new(vec![0; device_bytes]),
                memory: (0..slots).map(|_| RefCell::new(vec![0xEE; slot_bytes])).collect(),
                queued: (0..slots).map(|_| Cell::new(false)).collect(),
                queue: RefCell::new(Vec::new()),
                waits: Cell::new(0),
            }
        }

        fn slots(&self) -> Vec<Slot> {
            (0..self.memory.len()).map(Slot).collect()
        }

        fn queue(&self, slot: &Slot, to_device: bool, device_offset: usize, len: usize) {
            assert!(!self.queued[slot.0].get(), "slot {} queued twice without a wait", slot.0);
            self.queued[slot.0].set(true);
            self.queue.borrow_mut().push((slot.0, to_device, device_offset, len));
        }
    }

    impl Engine for LateDma {
        type Slot = Slot;
        fn host<'s>(&self, slot: &'s mut Slot) -> &'s mut [u8] {
            assert!(!self.queued[slot.0].get(), "slot {} touched while its DMA is queued", slot.0);
            let mut memory = self.memory[slot.0].borrow_mut();
            // SAFETY (test only): the vector is never resized, and the engine touches it only in
            // `wait`, never while the pipeline holds this slice (between host() and the next call).
            unsafe { std::slice::from_raw_parts_mut(memory.as_mut_ptr(), memory.len()) }
        }
        fn wait(&self, slot: &mut Slot) -> Result<()> {
            self.waits.set(self.waits.get() + 1);
            let Some(last) = self.queue.borrow().iter().rposition(|q| q.0 == slot.0) else { return Ok(()) };
            let ran: Vec<_> = self.queue.borrow_mut().drain(..=last).collect();
            for (id, to_device, offset, len) in ran {
                let (mut device, mut memory) = (self.device.borrow_mut(), self.memory[id].borrow_mut());
                if to_device {
                    device[offset..offset + len].copy_from_slice(&memory[..len]);
                } else {
                    memory[..len].copy_from_slice(&device[offset..offset + len]);
                }
                self.queued[id].set(false);
            }
            Ok(())
        }
        fn to_device(&self, slot: &mut Slot, device_offset: usize, len: usize) -> Result<()> {
            self.queue(slot, true, device_offset, len);
            Ok(())
        }
        fn to_host(&self, slot: &mut Slot, device_offset: usize, len: usize) -> Result<()> {
            self.queue(slot, false, device_offset, len);
            Ok(())
        }
    }

    fn pattern(len: usize, seed: u8) -> Vec<u8> {
        (0..len).map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed)).collect()
    }

    fn round_trip(len: usize, chunk: usize, depth: usize, device_offset: usize) {
        let dma = LateDma::new(device_offset + len + 16, depth, chunk);
        let mut slots = dma.slots();
        let source = pattern(len, 7);
        upload(&dma, &mut slots, device_offset, len, chunk, |done, piece| {
            piece.copy_from_slice(&source[done..done + piece.len()]);
            Ok(())
        })
        .expect("upload");
        for slot in slots.iter_mut() {
            dma.wait(slot).expect("finish"); // what the next user of the slot does
        }
        assert_eq!(&dma.device.borrow()[device_offset..device_offset + len], &source[..], "device after upload ({len}, {chunk}, {depth})");
        assert!(dma.device.borrow()[..device_offset].iter().all(|b| *b == 0), "bytes before the range untouched");
        assert!(dma.device.borrow()[device_offset + len..].iter().all(|b| *b == 0), "bytes after the range untouched");
        let mut back = vec![0u8; len];
        download(&dma, &mut slots, device_offset, len, chunk, |done, piece| {
            back[done..done + piece.len()].copy_from_slice(piece);
            Ok(())
        })
        .expect("download");
        assert_eq!(back, source, "host after download ({len}, {chunk}, {depth})");
    }

    #[test]
    fn every_byte_arrives_in_place_for_odd_lengths_chunks_and_depths() {
        for (len, chunk) in [(1, 4), (4, 4), (5, 4), (7, 3), (64, 8), (65, 8), (1000, 64), (4096, 4096), (4097, 4096)] {
            for depth in 1..=4 {
                round_trip(len, chunk, depth, 3);
            }
        }
    }

    #[test]
    fn an_upload_leaves_its_last_chunks_queued_and_a_download_waits_for_every_chunk() {
        let dma = LateDma::new(100, 2, 10);
        let mut slots = dma.slots();
        upload(&dma, &mut slots, 0, 100, 10, |_, piece| {
            piece.fill(1);
            Ok(())
        })
        .expect("upload");
        assert_eq!(dma.waits.get(), 10, "every chunk waited for its slot first");
        assert_eq!(dma.queue.borrow().len(), 2, "the last two chunks are left queued for the stream");
        download(&dma, &mut slots, 0, 100, 10, |_, piece| {
            assert!(piece.iter().all(|b| *b == 1), "a chunk was drained before the upload reached the device");
            Ok(())
        })
        .expect("download");
        assert!(dma.queue.borrow().is_empty(), "a download leaves nothing queued");
    }

    #[test]
    fn a_failing_fill_stops_the_copy_with_its_error() {
        let dma = LateDma::new(100, 2, 10);
        let mut slots = dma.slots();
        let mut calls = 0;
        let err = upload(&dma, &mut slots, 0, 100, 10, |done, _| {
            calls += 1;
            if done == 30 {
                Err(Error::invalid_state("region copy failed"))
            } else {
                Ok(())
            }
        })
        .expect_err("fill failed");
        assert!(err.to_string().contains("region copy failed"));
        assert_eq!(calls, 4, "nothing is read after the failing chunk");
    }
}
