//! The pinned host slot a reduction's result is read from, and how the host waits for it.
//!
//! Where the driver maps the slot into the device (always, with unified addressing), the kernel
//! stores the result straight into it and then raises a sequence number next to it
//! (`kernels/blas1_abi.h`, host signal). The host spins on that number for a short while, which
//! ends the wait as soon as the result is there: no device-to-host copy to queue and wait for,
//! and no wait for the kernel's end and the stream's completion to be signalled. When the number
//! does not come within `SPIN_BUDGET` (a long queue ahead, or an error that stopped the stream),
//! the host blocks in `cuStreamSynchronize` as before, which also reports any error (sticky
//! ones included) as a `CudaException`.
//!
//! A slot is used by one reduction at a time: it belongs to a handle's workspace, whose lock is
//! held from the launch to the read. Sequence numbers increase per slot, so a number left from
//! an earlier reduction never passes for the current one.

use crate::core::context::Context;
use crate::core::error::Result;
use crate::core::kernels::abi;
use cudarc::driver::sys::{CUdeviceptr, CUstream};
use std::sync::atomic::{fence, Ordering};
use std::time::{Duration, Instant};

/// Bytes of host memory the slot holds: the result (at most 8 bytes), then the sequence number.
pub const HOST_RESULT_BYTES: usize = 64;
/// cuda.h's `CU_MEMHOSTALLOC_DEVICEMAP`: map the allocation into the device's address space.
const CU_MEMHOSTALLOC_DEVICEMAP: u32 = 0x02;
/// How long to spin for the signal before blocking in the driver. Long enough for a reduction
/// of tens of millions of elements with an idle stream ahead (the H200 reads ~4.4 TB/s), short
/// enough that a long queue or a failed stream costs little CPU before the driver takes over.
const SPIN_BUDGET: Duration = Duration::from_micros(100);
/// Signal reads between two looks at the clock.
const READS_PER_CLOCK_CHECK: u32 = 64;

pub struct HostResult {
    /// Page-aligned pinned host memory of `HOST_RESULT_BYTES`.
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
    /// Allocates the slot in the active context `ctx`, mapped into the device; if the driver
    /// gives no device address for it, results are copied into it instead.
    pub fn allocate(ctx: &Context) -> Result<HostResult> {
        let api = &ctx.driver().api;
        let mut host: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: out-pointer is a valid local; the context is active (caller's contract).
        ctx.check(unsafe { (api.cuMemHostAlloc)(&mut host, HOST_RESULT_BYTES, CU_MEMHOSTALLOC_DEVICEMAP) }, "cuMemHostAlloc")?;
        let mut device: CUdeviceptr = 0;
        // SAFETY: `host` was just allocated by cuMemHostAlloc in this context; flags must be 0.
        let rc = unsafe { (api.cuMemHostGetDevicePointer)(&mut device, host, 0) };
        // Not logged: this runs under the workspace lock (rule L4); the fallback is only slower.
        let device = (rc == 0 && device != 0).then_some(device);
        // cuMemHostAlloc does not clear memory; a stale sequence number must never match.
        // SAFETY: `host` holds HOST_RESULT_BYTES writable bytes that nothing else uses yet.
        unsafe { std::ptr::write_bytes(host.cast::<u8>(), 0, HOST_RESULT_BYTES) };
        Ok(HostResult { host: host.cast(), device, sequence: 0 })
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
        let api = &ctx.driver().api;
        if sequence == 0 {
            // SAFETY: the slot holds HOST_RESULT_BYTES >= bytes and is ours while the workspace
            // lock is held; `copy_from` lies in device memory of this context.
            ctx.check(unsafe { (api.cuMemcpyDtoHAsync)(self.host.cast(), copy_from, bytes, stream) }, "cuMemcpyDtoHAsync")?;
        }
        let signal = self.signal_address();
        spin_then_block(
            // SAFETY: the signal lies inside the slot (8-byte aligned); the device writes it, so
            // it is read as volatile, and the acquire fence orders the result read after it.
            || sequence != 0 && unsafe { std::ptr::read_volatile(signal) } == sequence,
            // SAFETY: the stream belongs to the active context.
            || ctx.check(unsafe { (api.cuStreamSynchronize)(stream) }, "cuStreamSynchronize"),
            if sequence == 0 { Duration::ZERO } else { SPIN_BUDGET },
        )
    }

    fn signal_address(&self) -> *const u64 {
        // SAFETY: CUH_HOST_SIGNAL_OFFSET + 8 <= HOST_RESULT_BYTES (see the tests).
        unsafe { self.host.add(abi::CUH_HOST_SIGNAL_OFFSET) }.cast()
    }

    /// The result as an f64: an i64 (iamax's index), an f32 or an f64.
    ///
    /// # Safety
    /// Only after `receive` returned Ok for the reduction that wrote it.
    pub unsafe fn read(&self, kind: ResultKind) -> f64 {
        // SAFETY: the slot is page-aligned and holds >= 8 bytes; the write is complete (caller's
        // contract); volatile because it came from the device, outside this program's view.
        unsafe {
            match kind {
                ResultKind::Index => std::ptr::read_volatile(self.host as *const i64) as f64,
                ResultKind::F32 => std::ptr::read_volatile(self.host as *const f32) as f64,
                ResultKind::F64 => std::ptr::read_volatile(self.host as *const f64),
            }
        }
    }

    /// Frees the slot; the context must be active and no kernel may still write it.
    pub fn free(&self, ctx: &Context) {
        // SAFETY: allocated by cuMemHostAlloc in this context and freed once (by the owning
        // workspace's Drop, after the stream was synchronised).
        let rc = unsafe { (ctx.driver().api.cuMemFreeHost)(self.host.cast()) };
        if rc != 0 {
            log::warn!("freeing a handle's pinned result slot failed: {}", ctx.driver().describe(rc));
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

    #[test]
    fn the_signal_fits_the_slot_after_the_widest_result() {
        assert!(abi::CUH_HOST_SIGNAL_OFFSET >= 8);
        assert_eq!(abi::CUH_HOST_SIGNAL_OFFSET % 8, 0);
        assert!(abi::CUH_HOST_SIGNAL_OFFSET + 8 <= HOST_RESULT_BYTES);
    }

    #[test]
    fn a_mapped_slot_hands_out_increasing_sequence_numbers_and_an_unmapped_one_none() {
        let mut mapped = HostResult { host: std::ptr::null_mut(), device: Some(0x1000), sequence: 0 };
        assert_eq!(mapped.target(0x2000), 0x1000, "the kernel writes the mapped slot");
        let numbers: Vec<u64> = (0..3).map(|_| mapped.next_sequence()).collect();
        assert_eq!(numbers, [1, 2, 3], "never 0 (no signal) and never repeated");
        let mut unmapped = HostResult { host: std::ptr::null_mut(), device: None, sequence: 0 };
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
        let failed = spin_then_block(|| false, || Err(Error::cuda(700, "cuStreamSynchronize", "illegal address")), Duration::from_micros(20));
        assert!(matches!(failed, Err(Error::Cuda(f)) if f.code == 700));
    }

    #[test]
    fn an_unmapped_slot_blocks_at_once() {
        let waited = spin_then_block(|| panic!("no signal to read without a mapping"), || Ok(()), Duration::ZERO);
        assert_eq!(waited.unwrap(), Waited::Blocked);
    }
}
