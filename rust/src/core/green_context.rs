//! SM partitions at the driver floor: a group of a device's SMs split off as a green context
//! (CUDA 12.4+, "Green Contexts" of the driver API), and who may hold its context current.
//!
//! A green context's `CUcontext` (`cuCtxFromGreenCtx`) is used like any context: handles bind it,
//! its streams run on its SMs only. Most of a handle's work never makes it current (stream-ordered
//! calls take the stream's context, rule H10 and `driver::stream_context`); the calls that do
//! (creating streams, events, graphs, pinned memory) make it current under [`Holder`]'s lock,
//! because NVIDIA allows a green context to be current on one thread at a time (cuGreenCtxCreate).
//! The measured behaviour behind this design is in docs/handles.md, "SM partitions".

use crate::core::context;
use crate::core::device;
use crate::core::driver::dev_resource::{
    DevResource, DevResources, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, GREEN_CTX_DEFAULT_STREAM, RESOURCE_TYPE_SM,
};
use crate::core::driver::{self, version_string, Driver, Optional};
use crate::core::error::{Error, Result, CUDA_ERROR_NOT_SUPPORTED};
use crate::core::thread_number::this_thread;
use cudarc::driver::sys::{CUcontext, CUdevice};
use std::ffi::{c_uint, c_void};
use std::sync::{Condvar, Mutex};

/// The entry points SM partitions use, all CUDA 12.4+.
const ENTRIES: [Optional; 6] = [
    Optional::cuDeviceGetDevResource,
    Optional::cuDevSmResourceSplitByCount,
    Optional::cuDevResourceGenerateDesc,
    Optional::cuGreenCtxCreate,
    Optional::cuCtxFromGreenCtx,
    Optional::cuGreenCtxDestroy,
];

/// One SM partition: a green context, its `CUcontext`, and the lock that keeps that context
/// current on one thread at a time. Destroyed when dropped; `Context` drops it last, after the
/// streams and memory kept for it were released (see `context::on_partition_end`).
pub struct GreenContext {
    green: usize,
    raw: usize,
    id: u64,
    device: CUdevice,
    sms: u32,
    holder: Holder,
    driver: &'static Driver,
}

/// What a split made: the partitions, in order, and the device's SMs as the split saw them.
pub struct Split {
    pub parts: Vec<GreenContext>,
    /// The device's SMs.
    pub device_sms: u32,
    /// The smallest partition the device makes (8 on compute capability 9.0).
    pub min_sms: u32,
    /// SMs no partition holds (they still run ordinary handles' work).
    pub remainder_sms: u32,
}

/// How to split a device's SMs.
#[derive(Debug, Clone, Copy)]
pub enum SplitRequest<'a> {
    /// This many partitions of equal size, as large as the device's granularity allows.
    Parts(u32),
    /// One partition per entry, of at least that many SMs (the driver rounds up to its granularity).
    Counts(&'a [u32]),
}

// SAFETY: the green context and its CUcontext are driver handles usable from any thread; making
// the context current is serialised by `holder`.
unsafe impl Send for GreenContext {}
// SAFETY: as above; every method takes &self and the lock guards the one thread-affine use.
unsafe impl Sync for GreenContext {}

impl GreenContext {
    /// Its `CUcontext`.
    pub fn raw(&self) -> CUcontext {
        self.raw as CUcontext
    }
    /// The unique id of its `CUcontext`.
    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn device(&self) -> CUdevice {
        self.device
    }
    /// The SMs it holds.
    pub fn sms(&self) -> u32 {
        self.sms
    }
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }
    /// Waits until no other thread holds this context current, and holds it (again, on a thread
    /// that holds it already) until [`release`](Self::release).
    pub fn hold(&self) {
        self.holder.hold();
    }
    /// Ends one [`hold`](Self::hold) of this thread.
    pub fn release(&self) {
        self.holder.release();
    }
}

impl Drop for GreenContext {
    fn drop(&mut self) {
        // SAFETY: made by cuGreenCtxCreate and destroyed once, here; nothing refers to it any more
        // (every Context that held it is gone, and their views fail to upgrade).
        if let Err(e) = unsafe { self.driver.cuGreenCtxDestroy(self.green as *mut c_void) } {
            log::warn!("destroying the green context of an SM partition: {e}");
        }
    }
}

/// Whether this driver and device can make SM partitions; the reason when not.
pub fn support(ordinal: i32) -> std::result::Result<(), Error> {
    let d = driver::initialised()?;
    required_entries(d)?;
    let device = device::handle_of(d, ordinal)?;
    whole_device(d, device, ordinal).map(|_| ())
}

/// Whether the driver has the entry points SM partitions use; the refusal that names the missing one when not.
pub fn required_entries(d: &Driver) -> Result<()> {
    match ENTRIES.iter().find(|&&entry| !d.supports(entry)) {
        None => Ok(()),
        Some(missing) => Err(Error::cuda(
            CUDA_ERROR_NOT_SUPPORTED,
            "splitting a device's SMs",
            format!(
                "SM partitions need green contexts, which arrived with CUDA 12.4 drivers; the driver {} is CUDA {} and lacks {missing:?}: update the NVIDIA driver",
                d.path,
                version_string(d.version)
            ),
        )),
    }
}

fn whole_device(d: &Driver, device: CUdevice, ordinal: i32) -> Result<DevResource> {
    let mut whole = DevResource::new();
    // SAFETY: `whole` has room for a CUdevResource of the ABI the entry point was looked up for.
    unsafe { d.cuDeviceGetDevResource(device, &mut whole, RESOURCE_TYPE_SM) }.map_err(|e| {
        e.in_operation("splitting a device's SMs").reworded(|m| format!("{m}; device {ordinal} cannot be split into SM partitions"))
    })?;
    Ok(whole)
}

/// The smallest group device resource `whole` gives: what a request for one SM gets.
fn smallest_group(d: &Driver, whole: &DevResource) -> Result<u32> {
    let (mut group, mut rest) = (DevResource::new(), DevResource::new());
    let mut groups: c_uint = 1;
    // SAFETY: `group` has room for the one result asked for, `rest` for the remainder; `whole` is
    // the device's SM resource, which the driver wrote.
    unsafe { d.cuDevSmResourceSplitByCount(&mut group, &mut groups, whole, &mut rest, 0, 1) }?;
    Ok(if groups == 1 { group.sm_count().max(1) } else { 0 })
}

/// Splits `whole` into `count` groups of `each` SMs in one call (the driver does not split an
/// earlier split's remainder as it splits the whole device: on the H200, 64 SMs of the 68 left after
/// a first group of 64 were refused, while two groups of 64 in one call were made). Returns the
/// groups and the SMs left over; None when the device cannot make that many.
fn split_groups(d: &Driver, whole: &DevResource, count: u32, each: u32) -> Result<Option<(DevResources, u32)>> {
    let mut groups = DevResources::new(count as usize);
    let mut rest = DevResource::new();
    let mut made: c_uint = count;
    // SAFETY: `groups` has room for `count` results of any layout so far, `rest` for the remainder;
    // `whole` is the device's SM resource, which the driver wrote.
    let split = unsafe { d.cuDevSmResourceSplitByCount(groups.as_mut_ptr(), &mut made, whole, &mut rest, 0, each) };
    match split {
        Ok(()) if made == count => {}
        Ok(()) => return Ok(None),
        Err(e) if e.cuda_code() == Some(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) => return Ok(None),
        Err(e) => return Err(e),
    }
    if !groups.settle(count as usize, each) {
        return Err(Error::cuda(
            CUDA_ERROR_NOT_SUPPORTED,
            "splitting a device's SMs",
            format!(
                "the driver wrote {count} groups of SMs in a layout cuhandle does not know (CUDA {}): SM partitions are off",
                version_string(d.version)
            ),
        ));
    }
    Ok(Some((groups, rest.sm_count())))
}

/// Splits device `ordinal`'s SMs as `request` says and makes a green context per partition.
pub fn split(ordinal: i32, request: SplitRequest<'_>) -> Result<Split> {
    let d = driver::initialised()?;
    required_entries(d)?;
    let device = device::handle_of(d, ordinal)?;
    let whole = whole_device(d, device, ordinal)?;
    let device_sms = whole.sm_count();
    let min_sms = smallest_group(d, &whole)?;
    if min_sms == 0 {
        return Err(Error::invalid_argument(format!("device {ordinal} has {device_sms} SMs, too few to split")));
    }
    // Partition i is made of `sizes[i]` groups of `each` SMs from one split of the whole device:
    // equal partitions are one group each; partitions by count are whole steps of the smallest
    // group, combined into one descriptor per partition.
    let (each, sizes): (u32, Vec<u32>) = match request {
        SplitRequest::Parts(parts) => {
            let each = device_sms.checked_div(parts).unwrap_or(0) / min_sms * min_sms;
            if each < min_sms {
                return Err(Error::invalid_argument(format!(
                    "device {ordinal}'s {device_sms} SMs cannot be split into {parts} partitions: a partition holds at least {min_sms} SMs \
                     and a multiple of its granularity, so this device makes 1 to {} partitions",
                    device_sms / min_sms
                )));
            }
            (each, vec![1; parts as usize])
        }
        SplitRequest::Counts(counts) => {
            if counts.is_empty() || counts.contains(&0) {
                return Err(Error::invalid_argument(format!(
                    "SM counts {counts:?} cannot be split off: expected one count of at least 1 SM per partition"
                )));
            }
            let steps: Vec<u32> = counts.iter().map(|&c| c.div_ceil(min_sms)).collect();
            let mut needed = 0u64;
            for (i, (&want, &step)) in counts.iter().zip(&steps).enumerate() {
                needed += u64::from(step) * u64::from(min_sms);
                if needed > u64::from(device_sms) {
                    return Err(Error::invalid_argument(format!(
                        "partition {i} of {want} SMs does not fit: with the partitions before it, rounded up to steps of {min_sms} SMs, \
                         they need {needed} of device {ordinal}'s {device_sms} SMs"
                    )));
                }
            }
            (min_sms, steps)
        }
    };
    let total: u32 = sizes.iter().sum();
    let Some((mut groups, remainder_sms)) = split_groups(d, &whole, total, each)? else {
        return Err(Error::invalid_argument(format!(
            "device {ordinal} cannot make {total} groups of {each} SMs from its {device_sms} SMs (the driver refused the split)"
        )));
    };
    let mut parts = Vec::with_capacity(sizes.len());
    let mut first = 0usize;
    for &size in &sizes {
        let sms = (first..first + size as usize).map(|i| groups.sm_count(i)).sum();
        parts.push(create(d, device, groups.at(first), size, sms)?);
        first += size as usize;
    }
    Ok(Split { parts, device_sms, min_sms, remainder_sms })
}

/// A green context of the `count` groups at `groups` (results of one split, `sms` SMs together),
/// with its CUcontext. Nothing is made current.
fn create(d: &'static Driver, device: CUdevice, groups: *mut DevResource, count: u32, sms: u32) -> Result<GreenContext> {
    let mut desc: *mut c_void = std::ptr::null_mut();
    // SAFETY: `count` consecutive results of one split of this device's SMs, as the driver wrote them.
    unsafe { d.cuDevResourceGenerateDesc(&mut desc, groups, count) }?;
    let mut green: *mut c_void = std::ptr::null_mut();
    // SAFETY: `desc` was generated just now for this device; the flag is the one the driver requires.
    unsafe { d.cuGreenCtxCreate(&mut green, desc, device, GREEN_CTX_DEFAULT_STREAM) }?;
    let mut made = GreenContext { green: green as usize, raw: 0, id: 0, device, sms, holder: Holder::default(), driver: d };
    let mut raw: CUcontext = std::ptr::null_mut();
    // SAFETY: `green` was created just now (dropping `made` destroys it if this fails).
    unsafe { d.cuCtxFromGreenCtx(&mut raw, green) }?;
    // SAFETY: the driver's own answer for the green context's CUcontext.
    made.id = unsafe { context::context_id(d, raw) }?;
    made.raw = raw as usize;
    Ok(made)
}

/// A lock a thread holds while a green context is current on it: NVIDIA allows one thread at a
/// time. Re-entrant, because an operation may activate its context inside another activation of
/// it. Held only for the driver calls that need the context current (never for a wait on the GPU).
#[derive(Default)]
struct Holder {
    /// The holding thread's number (0: none) and how many holds it has.
    state: Mutex<(u64, u32)>,
    freed: Condvar,
}

impl Holder {
    fn hold(&self) {
        let me = this_thread();
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        while state.0 != 0 && state.0 != me {
            state = self.freed.wait(state).unwrap_or_else(|poisoned| poisoned.into_inner());
        }
        *state = (me, state.1 + 1);
    }

    fn release(&self) {
        let mut state = self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        debug_assert_eq!(state.0, this_thread(), "released by a thread that does not hold it");
        state.1 = state.1.saturating_sub(1);
        if state.1 == 0 {
            state.0 = 0;
            drop(state);
            self.freed.notify_one();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::sync::Arc;

    #[test]
    fn one_thread_at_a_time_holds_and_a_holder_may_hold_again() {
        let holder = Arc::new(Holder::default());
        let inside = Arc::new(AtomicU32::new(0));
        let most = Arc::new(AtomicU32::new(0));
        let threads: Vec<_> = (0..4)
            .map(|_| {
                let (holder, inside, most) = (Arc::clone(&holder), Arc::clone(&inside), Arc::clone(&most));
                std::thread::spawn(move || {
                    for _ in 0..2000 {
                        holder.hold();
                        holder.hold(); // nested: an activation inside an activation
                        let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                        most.fetch_max(now, Ordering::SeqCst);
                        inside.fetch_sub(1, Ordering::SeqCst);
                        holder.release();
                        holder.release();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("a holding thread");
        }
        assert_eq!(most.load(Ordering::SeqCst), 1, "two threads held the context at once");
        assert_eq!(*holder.state.lock().expect("state"), (0, 0), "every hold was released");
    }
}
