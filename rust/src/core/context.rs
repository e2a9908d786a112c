//! Binding to a driver context, validating it before use and activating it for the duration of
//! one operation (rules H1-H4, H8, H11 of docs/design.md).

use crate::core::driver::{self, Driver};
use crate::core::error::{Error, Result, CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_DEVICE};
use crate::core::green_context::GreenContext;
use crate::core::raw_value;
use crate::core::sticky;
use cudarc::driver::sys::{CUcontext, CUdevice};
use std::ptr;
use std::sync::{Arc, Mutex, Weak};

/// How a [`Context`] holds its driver context.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ownership {
    /// The device's primary context, retained once by us and released when dropped.
    RetainedPrimary,
    /// A context someone else keeps alive (a user-created context, or one given to `wrap`).
    Borrowed,
    /// The context of an SM partition (a green context), kept alive by every `Context` bound to
    /// it and destroyed with the last one (see [`on_partition_end`]).
    Partition,
}

/// How a [`Context`] refers to the SM partition whose context it is, if any.
enum Green {
    None,
    /// Keeps the partition alive.
    Owned(Arc<GreenContext>),
    /// A view: the partition may be gone, and then the context is too.
    Viewed(Weak<GreenContext>),
}

/// What higher floors release for a context before its SM partition is destroyed (its pooled
/// streams and events, the array copies' staging memory): registered once by them, called with the
/// context active, on the thread that dropped the partition's last `Context`.
static PARTITION_END: Mutex<Vec<fn(&Context)>> = Mutex::new(Vec::new());

/// Registers `release` to run before any SM partition's green context is destroyed (once per
/// function, however often registered).
pub fn on_partition_end(release: fn(&Context)) {
    let mut all = PARTITION_END.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !all.iter().any(|&known| known as usize == release as usize) {
        all.push(release);
    }
}

/// A driver context plus the unique id it had when we bound to it. The id is what makes a
/// destroyed context (whose address may be reused) or a reset primary context (same address, new
/// id) detectable *before* anything is pushed onto a thread: on driver 580 pushing a destroyed
/// context "succeeds" and a later call fails or the process dies (tests/handles-proof/
/// cublas_behaviour.cu, `destroyed_context_driver` in docs/runs/2026-12-01-proof.log).
pub struct Context {
    raw: CUcontext,
    id: u64,
    device: CUdevice,
    ownership: Ownership,
    driver: &'static Driver,
    green: Green,
}

// SAFETY: a CUcontext is an opaque handle that the driver lets any thread use; the struct is
// immutable after construction.
unsafe impl Send for Context {}
// SAFETY: as above; all methods take &self and only pass the handle to thread-safe driver calls.
unsafe impl Sync for Context {}

impl Context {
    /// H1/H2: the context current on this thread if there is one (retained when it is its
    /// device's primary context), otherwise the primary context of `default_device`.
    pub fn current_or_primary(default_device: CUdevice) -> Result<Context> {
        let driver = driver::initialised()?;
        let current = current_context(driver)?;
        if current.is_null() {
            return Context::primary(default_device);
        }
        // SAFETY: the driver's own answer for the current context.
        let id = unsafe { context_id(driver, current)? };
        let mut device = 0;
        // SAFETY: out-pointer is a valid local; reads the device of the current context.
        unsafe { driver.cuCtxGetDevice(&mut device) }?;
        let mut flags = 0;
        let mut active = 0;
        // SAFETY: out-pointers are valid locals.
        unsafe { driver.cuDevicePrimaryCtxGetState(device, &mut flags, &mut active) }?;
        // Only an active primary context can be the current one; checking first avoids creating
        // a primary context (slow, and it takes device memory: docs/performance-notes.md) just to
        // compare addresses.
        if active != 0 {
            let primary = retain_primary(driver, device)?;
            if primary == current {
                return Ok(Context { raw: current, id, device, ownership: Ownership::RetainedPrimary, driver, green: Green::None });
            }
            release_primary(driver, device);
        }
        Ok(Context { raw: current, id, device, ownership: Ownership::Borrowed, driver, green: Green::None })
    }

    /// H3: the primary context of `device`, retained (created by the driver if inactive).
    pub fn primary(device: CUdevice) -> Result<Context> {
        let driver = driver::initialised()?;
        // A device the driver gave a handle for before exists: no count to check against.
        let handle = match crate::core::device::known_handle(device) {
            Some(handle) => handle,
            None => {
                let count = device_count(driver)?;
                if device < 0 || device >= count {
                    return Err(Error::cuda(
                        CUDA_ERROR_INVALID_DEVICE,
                        "selecting a device",
                        format!("CUDA_ERROR_INVALID_DEVICE ({CUDA_ERROR_INVALID_DEVICE}): device {device} does not exist; this machine has {count} CUDA device(s), numbered from 0"),
                    ));
                }
                crate::core::device::handle_of(driver, device)?
            }
        };
        let raw = retain_primary(driver, handle)?;
        // SAFETY: the driver's primary context of the device, retained just now.
        match unsafe { context_id(driver, raw) } {
            Ok(id) => Ok(Context { raw, id, device: handle, ownership: Ownership::RetainedPrimary, driver, green: Green::None }),
            Err(e) => {
                release_primary(driver, handle);
                Err(e)
            }
        }
    }

    /// H3: an existing context that the caller keeps alive.
    ///
    /// # Safety
    /// `raw` is a context the driver gave out, kept alive by the caller while the returned value
    /// and everything made from it are used (values no context can have are refused here).
    pub unsafe fn wrap(raw: CUcontext) -> Result<Context> {
        raw_value::check_object(raw as u64, "the CUcontext to wrap")?;
        let driver = driver::initialised()?;
        // SAFETY: the caller's contract; the value passed the raw value checks above.
        let id = unsafe { context_id(driver, raw)? };
        let scope = Activation::enter(driver, raw)?;
        let mut device = 0;
        // SAFETY: `raw` is current on this thread for the scope's lifetime; out-pointer is valid.
        let read = unsafe { driver.cuCtxGetDevice(&mut device) };
        drop(scope);
        read?;
        Ok(Context { raw, id, device, ownership: Ownership::Borrowed, driver, green: Green::None })
    }

    /// The context of SM partition `green`, keeping it alive (rule H3 for partitions).
    pub fn of_partition(green: &Arc<GreenContext>) -> Context {
        Context {
            raw: green.raw(),
            id: green.id(),
            device: green.device(),
            ownership: Ownership::Partition,
            driver: green.driver(),
            green: Green::Owned(Arc::clone(green)),
        }
    }

    /// Another owner of this SM partition's context (None: not a partition's, or a view).
    pub fn partition_owner(&self) -> Option<Context> {
        match &self.green {
            Green::Owned(green) => Some(Context::of_partition(green)),
            _ => None,
        }
    }

    /// Whether this is an SM partition's context, which may be current on one thread at a time.
    pub fn is_partition(&self) -> bool {
        !matches!(self.green, Green::None)
    }

    /// The SMs of this context's partition (None: not a partition, or a view of one, which does
    /// not look: a view holding the partition even for a moment could be the one that ends it).
    pub fn partition_sms(&self) -> Option<u32> {
        match &self.green {
            Green::Owned(green) => Some(green.sms()),
            Green::None | Green::Viewed(_) => None,
        }
    }

    pub fn raw(&self) -> CUcontext {
        self.raw
    }
    pub fn id(&self) -> u64 {
        self.id
    }
    pub fn device(&self) -> CUdevice {
        self.device
    }
    pub fn ownership(&self) -> Ownership {
        self.ownership
    }
    pub fn driver(&self) -> &'static Driver {
        self.driver
    }

    /// The same context, borrowed: no retain of its own, so the caller must make sure the
    /// context outlives the view (for objects held only by holders of the context itself).
    /// A view of a partition's context does not keep the partition alive (a library's use log
    /// holds views for as long as the library lives).
    pub fn borrowed_view(&self) -> Context {
        let green = match &self.green {
            Green::None => Green::None,
            Green::Owned(green) => Green::Viewed(Arc::downgrade(green)),
            Green::Viewed(green) => Green::Viewed(Weak::clone(green)),
        };
        let ownership = if self.is_partition() { Ownership::Partition } else { Ownership::Borrowed };
        Context { raw: self.raw, id: self.id, device: self.device, ownership, driver: self.driver, green }
    }

    /// H8 + H11: fails with a precise error if the context was destroyed, reset, replaced by
    /// another one at the same address, or hit a sticky error; never touches the thread's stack.
    ///
    /// Always inlined, and the errors are built out of line (`id_unreadable`, `replaced`): every handle
    /// call pays this check, and its fast path is one driver call and two compares.
    #[inline(always)]
    pub fn validate(&self) -> Result<()> {
        if let Green::Viewed(green) = &self.green {
            if green.strong_count() == 0 {
                return Err(self.partition_gone());
            }
        }
        let mut id = 0;
        // SAFETY: cuCtxGetId only reads the context's id. A retained primary context stays a
        // handle the driver knows across a reset (cuDevicePrimaryCtxReset does not release it),
        // so this is defined for it. A borrowed context must be kept alive by its owner (H1): the
        // driver documents passing a destroyed context as undefined behaviour (cuCtxDestroy), so
        // detecting one is best effort; driver 580 answers CUDA_ERROR_CONTEXT_IS_DESTROYED
        // (`ctx_get_id_after_destroy` in docs/runs/2026-11-29-anchors.txt).
        if let Err(e) = unsafe { self.driver.cuCtxGetId(self.raw, &mut id) } {
            return Err(self.id_unreadable(e));
        }
        if id != self.id {
            return Err(self.replaced(id));
        }
        sticky::check(self.id)
    }

    /// `validate`'s error when cuCtxGetId failed: a destroyed or reset context is said as such; any
    /// other failure is passed on as the driver gave it.
    #[cold]
    #[inline(never)]
    fn id_unreadable(&self, e: Error) -> Error {
        if !matches!(e.cuda_code(), Some(CUDA_ERROR_CONTEXT_IS_DESTROYED | CUDA_ERROR_INVALID_CONTEXT)) {
            return e;
        }
        let what = match self.ownership {
            Ownership::RetainedPrimary => {
                format!("the primary context of device {} (id {}) this object was bound to was reset or destroyed", self.device, self.id)
            }
            Ownership::Borrowed => format!("the context {:p} (id {}) this object was bound to has been destroyed", self.raw, self.id),
            Ownership::Partition => self.partition_gone_text(),
        };
        e.in_operation("validating the handle's context").reworded(|m| format!("{m}; {what}"))
    }

    /// `validate`'s error when the context's address now answers with another id (`id`).
    #[cold]
    #[inline(never)]
    fn replaced(&self, id: u64) -> Error {
        let message = match self.ownership {
            Ownership::RetainedPrimary => format!(
                "the primary context of device {} was reset (cuDevicePrimaryCtxReset or cudaDeviceReset) after this object was created (context id {} is now {}); its memory, streams and events are gone: create a new handle",
                self.device, self.id, id
            ),
            Ownership::Borrowed | Ownership::Partition => format!(
                "the context {:p} (id {}) this object was bound to was destroyed and its address now belongs to another context (id {})",
                self.raw, self.id, id
            ),
        };
        Error::cuda(CUDA_ERROR_CONTEXT_IS_DESTROYED, "validating the handle's context", message)
    }

    /// For a stream-ordered call on one of this context's pooled streams (never destroyed while
    /// it lives): validates (H8, H11), as an activation would, and says whether the call may go to
    /// the driver without making the context current, because the driver takes the call's context
    /// from the stream (`driver::stream_context`). `false`: activate.
    #[inline]
    pub fn validate_without_activation(&self) -> Result<bool> {
        if !driver::stream_context::calls_take_the_streams_context(self.driver) {
            return Ok(false);
        }
        self.validate()?;
        Ok(true)
    }

    /// Validates, then makes this context current until the returned scope ends (H4). An SM
    /// partition's context is made current only while this thread holds it alone (see
    /// `green_context`): the scope holds it.
    ///
    /// Always inlined, as is `Activation::enter`: called, each returned its `Result` (about 80 bytes, as
    /// `Error` holds three `String`s) through memory, and the caller copied it on, stalling on the copies
    /// (a perf profile on the CPU stand-in put most of `raw_stream`'s own samples there); inlined, about
    /// 4 ns less per activation on the stand-in (docs/performance-notes.md, "Activation").
    #[inline(always)]
    pub fn activate(&self) -> Result<Activation> {
        let green = match &self.green {
            Green::None => {
                self.validate()?;
                return Activation::enter(self.driver, self.raw);
            }
            Green::Owned(green) => Arc::clone(green),
            Green::Viewed(green) => green.upgrade().ok_or_else(|| self.partition_gone())?,
        };
        self.activate_holding(green)
    }

    /// `activate` for an SM partition's context: held by this thread first, then validated and
    /// made current; the scope releases the hold after it restored the previous context.
    fn activate_holding(&self, green: Arc<GreenContext>) -> Result<Activation> {
        let held = Held::new(green);
        self.validate()?;
        let mut scope = Activation::enter(self.driver, self.raw)?;
        scope.held = Some(held);
        Ok(scope)
    }

    #[cold]
    #[inline(never)]
    fn partition_gone(&self) -> Error {
        Error::cuda(CUDA_ERROR_CONTEXT_IS_DESTROYED, "validating the handle's context", self.partition_gone_text())
    }

    fn partition_gone_text(&self) -> String {
        format!("the SM partition (context id {}) this object was bound to has been destroyed", self.id)
    }

    /// `result` of a driver call made for this context, with a sticky error remembered for it (H11).
    #[inline]
    pub fn noted<T>(&self, result: Result<T>) -> Result<T> {
        if let Err(error) = &result {
            self.note(error);
        }
        result
    }

    /// Remembers `error` for this context if it is a sticky driver error (H11).
    pub fn note(&self, error: &Error) {
        if let Error::Cuda(failure) = error {
            sticky::record(self.id, failure.code, &failure.message, &failure.operation);
        }
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        if self.ownership == Ownership::RetainedPrimary {
            // Released by device, not by pointer, so this is safe even after a reset.
            release_primary(self.driver, self.device);
        }
        if let Green::Owned(green) = std::mem::replace(&mut self.green, Green::None) {
            // Only the last owner gets the partition back, so the release runs once.
            if let Some(green) = Arc::into_inner(green) {
                end_partition(self, green);
            }
        }
    }
}

/// Releases what higher floors keep for a partition's context (with the context current: nothing
/// else can hold it now), then destroys the green context (dropping `green`).
fn end_partition(ctx: &Context, green: GreenContext) {
    let releases = PARTITION_END.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
    match Activation::enter(ctx.driver, ctx.raw) {
        Ok(scope) => {
            for release in releases {
                release(ctx);
            }
            drop(scope);
        }
        Err(e) => log::warn!("releasing the streams and memory of an SM partition before destroying it: {e}"),
    }
    drop(green);
}

/// An SM partition's context held by this thread (see `green_context`), released when dropped.
struct Held(Option<Arc<GreenContext>>);

impl Held {
    fn new(green: Arc<GreenContext>) -> Held {
        green.hold();
        Held(Some(green))
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let Some(green) = self.0.take() else { return };
        green.release();
        // A view's activation (a library's use log waiting for a partition's stream) may outlive
        // every owner of the partition: then the partition ends here, as when its last owner drops.
        if let Some(green) = Arc::into_inner(green) {
            let ending = Context {
                raw: green.raw(),
                id: green.id(),
                device: green.device(),
                ownership: Ownership::Partition,
                driver: green.driver(),
                green: Green::None,
            };
            end_partition(&ending, green);
        }
    }
}

/// The thread's previous current context, restored when dropped. Switching is skipped when the
/// context is already current: even a `cuCtxSetCurrent` to the current context costs a driver
/// call (docs/performance-notes.md, "Activation").
///
/// Both switches use `cuCtxSetCurrent`, also when nothing was current: on an empty stack it puts
/// the context on as the only entry, and `cuCtxSetCurrent(NULL)` takes that entry off again (the
/// driver documents it as a pop, a no-op on an empty stack), so the thread's stack ends exactly as
/// it was, as with a push/pop pair, which is the slower of the two (docs/performance-notes.md).
#[must_use]
pub struct Activation {
    previous: CUcontext,
    switched: bool,
    driver: &'static Driver,
    /// An SM partition's context held by this thread: released after the drop below restored the
    /// previous context (fields drop after `drop`).
    held: Option<Held>,
}

impl Activation {
    #[inline(always)] // see `Context::activate`
    fn enter(driver: &'static Driver, ctx: CUcontext) -> Result<Activation> {
        let previous = current_context(driver)?;
        let switched = previous != ctx;
        if switched {
            // SAFETY: `ctx` was validated (or is being wrapped right after cuCtxGetId succeeded).
            unsafe { driver.cuCtxSetCurrent(ctx) }?;
        }
        Ok(Activation { previous, switched, driver, held: None })
    }
}

impl Drop for Activation {
    #[inline(always)] // see `Context::activate`; the failure is logged out of line
    fn drop(&mut self) {
        if !self.switched {
            return;
        }
        // SAFETY: puts back what was on top of the stack before `enter` (NULL: takes off the
        // entry `enter` put on the empty stack).
        if let Err(e) = unsafe { self.driver.cuCtxSetCurrent(self.previous) } {
            restore_failed(e);
        }
    }
}

#[cold]
#[inline(never)]
fn restore_failed(e: Error) {
    log::error!("restoring the caller's context: {e}");
}

pub fn current_context(driver: &Driver) -> Result<CUcontext> {
    let mut current = ptr::null_mut();
    // SAFETY: out-pointer is a valid local.
    unsafe { driver.cuCtxGetCurrent(&mut current) }?;
    Ok(current)
}

/// The unique id of `ctx` (`cuCtxGetId`).
///
/// # Safety
/// `ctx` is a context the driver gave out. One destroyed since is answered with
/// `CUDA_ERROR_CONTEXT_IS_DESTROYED` by the drivers measured, though the driver documents it as
/// undefined (see `Context::validate`).
pub unsafe fn context_id(driver: &Driver, ctx: CUcontext) -> Result<u64> {
    let mut id = 0;
    // SAFETY: the caller's contract; the out-pointer is a valid local.
    unsafe { driver.cuCtxGetId(ctx, &mut id) }?;
    Ok(id)
}

pub fn device_count(driver: &Driver) -> Result<i32> {
    let mut count = 0;
    // SAFETY: out-pointer is a valid local.
    unsafe { driver.cuDeviceGetCount(&mut count) }?;
    Ok(count)
}

/// Whether `device`'s primary context is active (retained by someone); true when that cannot be
/// read, so that nothing kept for it is forgotten on a guess.
pub fn primary_active(driver: &Driver, device: CUdevice) -> bool {
    primary_state(driver, device).map_or(true, |(_, active)| active)
}

/// The flags of `device`'s primary context and whether it is active (`cuDevicePrimaryCtxGetState`:
/// it neither creates nor retains it).
pub fn primary_state(driver: &Driver, device: CUdevice) -> Result<(u32, bool)> {
    let (mut flags, mut active) = (0, 0);
    // SAFETY: out-pointers are valid locals; the driver validates the device handle.
    unsafe { driver.cuDevicePrimaryCtxGetState(device, &mut flags, &mut active) }?;
    Ok((flags, active != 0))
}

fn retain_primary(driver: &Driver, device: CUdevice) -> Result<CUcontext> {
    let mut ctx = ptr::null_mut();
    // SAFETY: out-pointer is a valid local; `device` is a valid device handle.
    unsafe { driver.cuDevicePrimaryCtxRetain(&mut ctx, device) }?;
    Ok(ctx)
}

fn release_primary(driver: &Driver, device: CUdevice) {
    // SAFETY: balances exactly one successful retain of this device's primary context.
    if let Err(e) = unsafe { driver.cuDevicePrimaryCtxRelease(device) } {
        log::warn!("releasing the primary context of device {device}: {e}");
    }
}
