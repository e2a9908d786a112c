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
    DevResource, CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION, GREEN_CTX_DEFAULT_STREAM, RESOURCE_TYPE_SM,
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
    ordinal: i32,
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
    pub fn ordinal(&self) -> i32 {
        self.ordinal
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

/// Splits `input` into one group of at least `min_count` SMs and the rest.
fn split_one(d: &Driver, input: &DevResource, min_count: u32) -> Result<Option<(DevResource, DevResource)>> {
    let (mut group, mut rest) = (DevResource::new(), DevResource::new());
    let mut groups: c_uint = 1;
    // SAFETY: `group` has room for the one result asked for, `rest` for the remainder; `input` is
    // an SM resource the driver wrote (the device's, or an earlier split's remainder).
    let split = unsafe { d.cuDevSmResourceSplitByCount(&mut group, &mut groups, input, &mut rest, 0, min_count) };
    match split {
        Ok(()) if groups == 1 => Ok(Some((group, rest))),
        // Too few SMs left for a group of that size: the caller says which partition did not fit.
        Ok(()) => Ok(None),
        Err(e) if e.cuda_code() == Some(CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION) => Ok(None),
        Err(e) => Err(e),
    }
}

/// Splits device `ordinal`'s SMs as `request` says and makes a green context per partition.
pub fn split(ordinal: i32, request: SplitRequest<'_>) -> Result<Split> {
    let d = driver::initialised()?;
    required_entries(d)?;
    let device = device::handle_of(d, ordinal)?;
    let whole = whole_device(d, device, ordinal)?;
    let device_sms = whole.sm_count();
    // The smallest group the device makes: what a request for one SM gets.
    let min_sms = match split_one(d, &whole, 1)? {
        Some((group, _)) => group.sm_count().max(1),
        None => return Err(Error::invalid_argument(format!("device {ordinal} has {device_sms} SMs, too few to split"))),
    };
    let counts: Vec<u32> = match request {
        SplitRequest::Parts(parts) => {
            let each = device_sms.checked_div(parts).unwrap_or(0) / min_sms * min_sms;
            if each < min_sms {
                return Err(Error::invalid_argument(format!(
                    "device {ordinal}'s {device_sms} SMs cannot be split into {parts} partitions: a partition holds at least {min_sms} SMs \
                     and a multiple of its granularity, so this device makes 1 to {} partitions",
                    device_sms / min_sms
                )));
            }
            vec![each; parts as usize]
        }
        SplitRequest::Counts(counts) => {
            if counts.is_empty() || counts.contains(&0) {
                return Err(Error::invalid_argument(format!(
                    "SM counts {counts:?} cannot be split off: expected one count of at least 1 SM per partition"
                )));
            }
            counts.to_vec()
        }
    };
    let mut groups = Vec::with_capacity(counts.len());
    let mut left = whole;
    for (i, &want) in counts.iter().enumerate() {
        let Some((group, rest)) = split_one(d, &left, want)? else {
            return Err(Error::invalid_argument(format!(
                "partition {i} of {want} SMs does not fit: {} of device {ordinal}'s {device_sms} SMs are left after the partitions before it \
                 (partitions hold at least {min_sms} SMs, rounded up to the device's granularity)",
                left.sm_count()
            )));
        };
        groups.push(group);
        left = rest;
    }
    let mut parts = Vec::with_capacity(groups.len());
    for group in &mut groups {
        parts.push(create(d, device, ordinal, group)?);
    }
    Ok(Split { parts, device_sms, min_sms, remainder_sms: left.sm_count() })
}

/// A green context for `group`, with its CUcontext. Nothing is made current.
fn create(d: &'static Driver, device: CUdevice, ordinal: i32, group: &mut DevResource) -> Result<GreenContext> {
    let mut desc: *mut c_void = std::ptr::null_mut();
    // SAFETY: one resource, written by a split of this device's SMs.
    unsafe { d.cuDevResourceGenerateDesc(&mut desc, group, 1) }?;
    let mut green: *mut c_void = std::ptr::null_mut();
    // SAFETY: `desc` was generated just now for this device; the flag is the one the driver requires.
    unsafe { d.cuGreenCtxCreate(&mut green, desc, device, GREEN_CTX_DEFAULT_STREAM) }?;
    let mut made =
        GreenContext { green: green as usize, raw: 0, id: 0, device, ordinal, sms: group.sm_count(), holder: Holder::default(), driver: d };
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
