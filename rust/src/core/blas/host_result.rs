//! The pinned host slot a reduction's result is read from, and how the host waits for it.
//!
//! Where the driver maps the slot into the device (always, with unified addressing), the kernel
//! stores the result straight into it as a packet whose two 8-byte halves each carry a flag, the
//! low 32 bits of a sequence number (`kernels/blas1_abi.h`, host result packet). The host spins
//! until both halves carry its flag, which ends the wait as soon as the result is there: no
//! device-to-host copy to queue and wait for, and no wait for the kernel's end and the stream's
//! completion to be signalled. When the flags do not come within `SPIN_BUDGET` (a long queue
//! ahead, or an error that stopped the stream),
//! the host blocks in `cuStreamSynchronize` as before, which also reports any error (sticky
//! ones included) as a `CudaException`.
//!
//! A slot is used by one reduction at a time: it belongs to a handle's workspace, whose lock is
//! held from the launch to the read. Sequence numbers increase per slot, so a flag left from the
//! previous reduction (the slot's only earlier content) never passes for the current one.

use crate::core::context::Context;
use crate::core::error::Result;
use crate::core::kernels::abi;
use crate::core::memory::pinned::PinnedMemory;
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

/// Bytes of host memory the slot holds: the result packet (or a copied result) at its start.
pub const HOST_RESULT_BYTES: usize = 64;
const _: () = assert!(abi::CUH_HOST_RESULT_PACKET_BYTES == 16 && abi::CUH_HOST_RESULT_PACKET_BYTES <= HOST_RESULT_BYTES);
/// How long to spin for the signal before blocking in the driver. Long enough for a reduction
/// of tens of millions of elements with an idle stream ahead, at the memory bandwidth of current
/// GPUs (docs/performance-notes.md), short enough that a long queue or a failed stream costs
/// little CPU before the driver takes over.
const SPIN_BUDGET: Duration = Duration::from_micros(100);
/// Signal reads between two looks at the clock.
const READS_PER_CLOCK_CHECK: u32 = 64;

pub struct HostResult {
    /// Page-aligned pinned host memory of at least `HOST_RESULT_BYTES`, mapped into the device
    /// (the pinned cache maps every block), at `host`; back to the cache when dropped. None only
    /// in unit tests, which never dereference `host`.
    _memory: Option<PinnedMemory>,
    host: *mut u8,
    /// The device's address of `host` when mapped; `None`: results are copied (no signal).
    device: Option<CUdeviceptr>,
    /// The last sequence number handed out.
    sequence: u64,
}

// SAFETY: the pinned pointer is only dereferenced by the holder of the workspace lock.
unsafe impl Send for HostResult {}

/// How the wait for a host result ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waited {
    /// The kernel's signal arrived while spinning.
    Signalled,
    /// The driver's wait (stream synchronisation) returned successfully.
    Blocked,
}

impl HostResult {
    /// The slot in `memory`, at least `HOST_RESULT_BYTES` of pinned memory of `ctx` (active) from
    /// the context's cache, mapped into the device; if the driver gives no device address for it,
    /// results are copied into it instead.
    pub fn new(memory: PinnedMemory, ctx: &Context) -> Result<HostResult> {
        if memory.bytes() < HOST_RESULT_BYTES {
            return Err(crate::core::error::Error::invalid_state(format!(
                "a host result slot needs {HOST_RESULT_BYTES} bytes; {} were given",
                memory.bytes()
            )));
        }
        let host = memory.address();
        let mut device: CUdeviceptr = 0;
        // SAFETY: `host` is a mapped block of pinned memory of this context; flags must be 0.
        let mapped = unsafe { ctx.driver().cuMemHostGetDevicePointer(&mut device, host.cast(), 0) };
        // Not logged: this runs under the workspace lock (rule L4); the fallback is only slower.
        let device = (mapped.is_ok() && device != 0).then_some(device);
        // A block from the cache holds what its last user left, and new ones are not cleared: a
        // stale sequence number must never match.
        // SAFETY: `host` holds HOST_RESULT_BYTES writable bytes that nothing else uses now.
        unsafe { std::ptr::write_bytes(host, 0, HOST_RESULT_BYTES) };
        Ok(HostResult { _memory: Some(memory), host, device, sequence: 0 })
    }

    /// Where a kernel should store the result: the mapped slot, or `copy_from` (device memory
    /// that `receive` then copies from) when the slot is not mapped.
    pub fn target(&self, copy_from: CUdeviceptr) -> CUdeviceptr {
        self.device.unwrap_or(copy_from)
    }

    /// The sequence number the next kernel is to signal with (0 = no signal: not mapped).
    pub fn next_sequence(&mut self) -> u64 {
        if self.device.is_none() {
            return 0;
        }
        self.sequence += 1;
        self.sequence
    }

    /// Waits until the result of the launch given `sequence` is in the slot. `copy_from` and
    /// `bytes`: where the result is on the device when the slot is not mapped. The context must
    /// be active; `stream` is the one the kernel was launched on.
    pub(crate) fn receive(&self, ctx: &Context, stream: CUstream, sequence: u64, copy_from: CUdeviceptr, bytes: usize) -> Result<Waited> {
        let driver = ctx.driver();
        if sequence == 0 {
            // SAFETY: the slot holds HOST_RESULT_BYTES >= bytes and is ours while the workspace
            // lock is held; `copy_from` lies in device memory of this context.
            ctx.noted(unsafe { driver.cuMemcpyDtoHAsync(self.host.cast(), copy_from, bytes, stream) })?;
        }
        spin_then_block(
            || sequence != 0 && packet_bits(self.packet_words(), sequence).is_some(),
            // SAFETY: the stream belongs to the active context.
            || ctx.noted(unsafe { driver.cuStreamSynchronize(stream) }),
            if sequence == 0 { Duration::ZERO } else { SPIN_BUDGET },
        )
    }

    /// The packet's two 8-byte halves as they are now.
    fn packet_words(&self) -> [u64; 2] {
        // SAFETY: the slot is page-aligned and holds HOST_RESULT_BYTES >= 16 bytes (asserted
        // above). The device writes it, so each half is read as volatile, in one aligned 8-byte
        // read, which sees either all or none of the device's write of that half.
        unsafe { [std::ptr::read_volatile(self.host as *const u64), std::ptr::read_volatile((self.host as *const u64).add(1))] }
    }

    /// The result as an f64: an i64 (iamax's index), an f32 or an f64.
    ///
    /// # Safety
    /// Only after `receive` returned Ok for the reduction that wrote it.
    pub unsafe fn read(&self, kind: ResultKind) -> f64 {
        if self.device.is_some() {
            // A packet: complete once `receive` returned (its flags were seen, or the stream that
            // wrote it was synchronised), so its bits are taken as they are.
            let [low, high] = self.packet_words();
            return kind.value((low & 0xffff_ffff) | (high << 32));
        }
        // SAFETY: the slot is page-aligned and holds >= 8 bytes; the copy is complete (caller's
        // contract); volatile because it came from the device, outside this program's view.
        unsafe {
            match kind {
                ResultKind::Index => std::ptr::read_volatile(self.host as *const i64) as f64,
                ResultKind::F32 => std::ptr::read_volatile(self.host as *const f32) as f64,
                ResultKind::F64 => std::ptr::read_volatile(self.host as *const f64),
            }
        }
    }
}

/// The type of a reduction's result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultKind {
    Index,
    F32,
    F64,
}

impl ResultKind {
    /// The result whose bits (in the low 4 bytes for F32) are `bits`, as an f64.
    fn value(self, bits: u64) -> f64 {
        match self {
            ResultKind::Index => bits as i64 as f64,
            ResultKind::F32 => f32::from_bits(bits as u32) as f64,
            ResultKind::F64 => f64::from_bits(bits),
        }
    }
}

/// The result bits of a packet read as two little-endian 8-byte halves {low 32 bits, flag} and
/// {high 32 bits, flag}, if both flags are `sequence`'s (its low 32 bits): then each half was
/// written by that reduction, and the halves are never torn (`kernels/blas1_abi.h`).
fn packet_bits([low, high]: [u64; 2], sequence: u64) -> Option<u64> {
    let flag = sequence & 0xffff_ffff;
    (low >> 32 == flag && high >> 32 == flag).then_some((low & 0xffff_ffff) | (high << 32))
}

/// Spins on `signalled` for at most `budget`, then calls `block` (the driver's wait, which also
/// reports errors). An acquire fence follows a seen signal, so reads of what the signal
/// publishes come after it.
fn spin_then_block(signalled: impl Fn() -> bool, block: impl FnOnce() -> Result<()>, budget: Duration) -> Result<Waited> {
    if !budget.is_zero() {
        let start = Instant::now();
        'spin: loop {
            for _ in 0..READS_PER_CLOCK_CHECK {
                if signalled() {
                    fence(Ordering::Acquire);
                    return Ok(Waited::Signalled);
                }
                std::hint::spin_loop();
            }
            if start.elapsed() >= budget {
                break 'spin;
            }
        }
    }
    block()?;
    fence(Ordering::Acquire);
    Ok(Waited::Blocked)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::Error;
    use std::cell::Cell;

    /// The words as the kernel stores them: {low 32 bits, flag, high 32 bits, flag}, read back
    /// as two little-endian u64s.
    fn packet(bits: u64, flag: u32) -> [u64; 2] {
        let words = [bits as u32, flag, (bits >> 32) as u32, flag];
        let mut bytes = [0u8; 16];
        for (chunk, word) in bytes.chunks_exact_mut(4).zip(words) {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        [u64::from_le_bytes(bytes[..8].try_into().unwrap()), u64::from_le_bytes(bytes[8..].try_into().unwrap())]
    }

    #[test]
    fn a_packet_gives_its_bits_only_with_both_flags_of_its_sequence() {
        let bits = (-2.5f64).to_bits();
        assert_eq!(packet_bits(packet(bits, 7), 7), Some(bits));
        assert_eq!(ResultKind::F64.value(packet_bits(packet(bits, 7), 7).unwrap()), -2.5);
        let float = 1.25f32.to_bits() as u64;
        assert_eq!(ResultKind::F32.value(packet_bits(packet(float, 3), 3).unwrap()), 1.25);
        assert_eq!(ResultKind::Index.value(packet_bits(packet(1000, 3), 3).unwrap()), 1000.0);
        // The previous reduction's packet, or a half of it next to a half of this one's: no.
        assert_eq!(packet_bits(packet(bits, 6), 7), None);
        let [old_low, _] = packet(0, 6);
        let [_, new_high] = packet(bits, 7);
        assert_eq!(packet_bits([old_low, new_high], 7), None);
        assert_eq!(packet_bits([packet(bits, 7)[0], packet(0, 6)[1]], 7), None);
        // The flag is the sequence number's low 32 bits, so numbers past 2^32 still work.
        let big = (1u64 << 32) + 5;
        assert_eq!(packet_bits(packet(bits, 5), big), Some(bits));
        assert_eq!(packet_bits(packet(bits, 4), big), None);
        // A zeroed slot never passes for the first reduction (sequence 1).
        assert_eq!(packet_bits([0, 0], 1), None);
    }

    #[test]
    fn a_mapped_slot_hands_out_increasing_sequence_numbers_and_an_unmapped_one_none() {
        let mut mapped = HostResult { _memory: None, host: std::ptr::null_mut(), device: Some(0x1000), sequence: 0 };
        assert_eq!(mapped.target(0x2000), 0x1000, "the kernel writes the mapped slot");
        let numbers: Vec<u64> = (0..3).map(|_| mapped.next_sequence()).collect();
        assert_eq!(numbers, [1, 2, 3], "never 0 (no signal) and never repeated");
        let mut unmapped = HostResult { _memory: None, host: std::ptr::null_mut(), device: None, sequence: 0 };
        assert_eq!(unmapped.target(0x2000), 0x2000, "the kernel writes device memory that is then copied");
        assert_eq!(unmapped.next_sequence(), 0);
        assert_eq!(unmapped.next_sequence(), 0);
    }

    #[test]
    fn a_signal_ends_the_wait_without_the_driver() {
        let reads = Cell::new(0);
        let waited = spin_then_block(
            || {
                reads.set(reads.get() + 1);
                reads.get() == 3
            },
            || panic!("must not block once signalled"),
            SPIN_BUDGET,
        );
        assert_eq!(waited.unwrap(), Waited::Signalled);
        assert_eq!(reads.get(), 3);
    }

    #[test]
    fn no_signal_falls_back_to_the_driver_and_its_error() {
        let blocked = Cell::new(false);
        let waited = spin_then_block(
            || false,
            || {
                blocked.set(true);
                Ok(())
            },
            Duration::from_micros(20),
        );
        assert_eq!(waited.unwrap(), Waited::Blocked);
        assert!(blocked.get());
        let failed =
            spin_then_block(|| false, || Err(Error::cuda(700, "cuStreamSynchronize", "illegal address")), Duration::from_micros(20));
        assert!(matches!(failed, Err(Error::Cuda(f)) if f.code == 700));
    }

    #[test]
    fn an_unmapped_slot_blocks_at_once() {
        let waited = spin_then_block(|| panic!("no signal to read without a mapping"), || Ok(()), Duration::ZERO);
        assert_eq!(waited.unwrap(), Waited::Blocked);
    }
}
