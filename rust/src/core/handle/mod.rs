//! The handle: a context binding and the stream its work goes to (rules H1-H9), with the
//! context's memory. What higher layers keep per handle (BLAS's workspace, a graph capture) hangs
//! off it as [`attachments`], whose types the handle does not know.
//!
//! Liveness (close waits for calls in flight, calls after close fail) is enforced by the Java
//! object, which owns the only pointer to a `Handle`; everything here may be called from many
//! threads at once.

pub mod attachments;

use crate::core::context::{primary_active, Activation, Context, Ownership};
use crate::core::device::{self, DeviceInfo};
use crate::core::error::{Error, Result, CUDA_ERROR_INVALID_CONTEXT};
use crate::core::memory::context_memory::{self, ContextMemory};
use crate::core::memory::device::DeviceMemory;
use crate::core::memory::pinned::PinnedMemory;
use crate::core::memory::pool::PoolStats;
use crate::core::raw_value;
use crate::core::streams::{self, StreamUse};
use attachments::{AsAny, Attachments};
use cudarc::driver::sys::{CUcontext, CUstream};
use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// State a higher layer keeps per handle, attached on the layer's first use of the handle.
pub trait Attachment: Any + Send + Sync {
    /// Called first when the handle closes, while its calls are still routed as before: ends what
    /// must not outlive the handle (a graph capture left open). The attachment is dropped later,
    /// after the handle's stream's work is done and before the stream is given back, so device
    /// memory it holds is freed in stream order on that stream.
    fn closing(&self, _handle: &Handle) {}
}

impl AsAny for dyn Attachment {
    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Marks "the handle's own stream" in `current_stream` (0, 1 and 2 are real stream values:
/// legacy, `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`).
const OWN_STREAM: usize = usize::MAX;
// The two special stream handles are cast macros in cuda.h (`#define CU_STREAM_LEGACY ((CUstream)0x1)`,
// `#define CU_STREAM_PER_THREAD ((CUstream)0x2)`), which bindgen does not translate, so cudarc has no
// constant for them: these are checked against the header by hand.
/// `CU_STREAM_LEGACY`: the context's legacy default stream, like 0.
const CU_STREAM_LEGACY: usize = 1;
/// `CU_STREAM_PER_THREAD`: the calling thread's default stream.
const CU_STREAM_PER_THREAD: usize = 2;

/// The stream one call queues its work on, read once per call so that the work and the use
/// tracking agree: the handle's own stream (borrowed, the common case: nothing is copied) or
/// another one.
pub enum Queue<'a> {
    Own(&'a StreamUse),
    Other(StreamUse),
}

impl std::ops::Deref for Queue<'_> {
    type Target = StreamUse;
    fn deref(&self) -> &StreamUse {
        match self {
            Queue::Own(used) => used,
            Queue::Other(used) => used,
        }
    }
}

/// What the context's memory holds for `Handle::memory_stats`.
#[derive(Debug, Clone, Copy, Default)]
pub struct MemoryStats {
    /// The stream-ordered pool (zero without pools).
    pub pool: PoolStats,
    /// Pinned host bytes released and kept for reuse.
    pub pinned_cached: u64,
    /// Whether device memory comes from a pool (else `cuMemAlloc`).
    pub stream_ordered: bool,
}

pub struct Handle {
    /// The context's memory, taken on the first allocation. Declared before `ctx` so that it is
    /// dropped (and, if it was the last reference, released) while the context is still held.
    memory: OnceLock<Arc<ContextMemory>>,
    ctx: Arc<Context>,
    device: &'static DeviceInfo,
    /// The handle's own stream and lease, taken on first use, so that creating a handle costs
    /// only the context binding.
    own: OnceLock<StreamUse>,
    /// `OWN_STREAM`, or the raw stream work goes to (a user stream, the legacy stream, or the
    /// private stream of a capture in progress).
    current_stream: AtomicUsize,
    /// The attachment number of the user stream in `current_stream` (see `streams::attach`).
    user_attachment: AtomicU64,
    /// A capture is in progress: `current_stream` is its private stream.
    capturing: AtomicBool,
    init_lock: Mutex<()>,
    /// What higher layers keep for this handle (see `attachments`).
    attachments: Attachments<dyn Attachment>,
}

impl Handle {
    pub fn new(ctx: Context) -> Result<Handle> {
        let device = device::info(ctx.device())?;
        Ok(Handle {
            memory: OnceLock::new(),
            ctx: Arc::new(ctx),
            device,
            own: OnceLock::new(),
            current_stream: AtomicUsize::new(OWN_STREAM),
            user_attachment: AtomicU64::new(0),
            capturing: AtomicBool::new(false),
            init_lock: Mutex::new(()),
            attachments: Attachments::default(),
        })
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }
    pub fn device(&self) -> &'static DeviceInfo {
        self.device
    }

    /// Validates and activates the handle's context for one operation (H4, H8).
    #[inline]
    pub fn activate(&self) -> Result<Activation> {
        self.ctx.activate()
    }

    /// The attachment of type `T`, made by `make` on the first call for this handle (see
    /// [`Attachment`]).
    #[inline]
    pub fn attachment<T: Attachment>(&self, make: impl FnOnce() -> Result<T>) -> Result<&T> {
        self.attachments.get_or_try_insert(|| Ok(Box::new(make()?) as Box<dyn Attachment>))
    }

    /// Where this call's work goes. Call only with the context active (the own stream is made on
    /// first use).
    #[inline]
    pub fn queue(&self) -> Result<Queue<'_>> {
        let current = self.current_stream.load(Ordering::Acquire);
        if current == OWN_STREAM {
            return Ok(Queue::Own(self.own_use()?));
        }
        Ok(Queue::Other(if self.capturing.load(Ordering::Acquire) {
            StreamUse::Capture { raw: current }
        } else if current <= CU_STREAM_LEGACY {
            StreamUse::Legacy { raw: current }
        } else {
            StreamUse::User { raw: current, attachment: self.user_attachment.load(Ordering::Acquire) }
        }))
    }

    /// The raw stream work goes to. Call only with the context active.
    #[inline]
    pub fn stream(&self) -> Result<CUstream> {
        Ok(self.queue()?.raw())
    }

    #[inline]
    fn own_use(&self) -> Result<&StreamUse> {
        match self.own.get() {
            Some(own) => Ok(own),
            None => self.lease_own_stream(),
        }
    }

    /// The handle's own stream when work goes to it (no `setStream`, no capture in progress) and
    /// it was already leased: always a non-null stream of the handle's context, so stream-ordered
    /// calls on it may skip activation where the driver allows it (see `launch::launch`). `None`
    /// for a user stream (whose life the handle does not control), the legacy stream (which means
    /// "the current context's") or a capture stream.
    #[inline]
    pub fn own_stream_in_use(&self) -> Option<&StreamUse> {
        if self.current_stream.load(Ordering::Acquire) != OWN_STREAM {
            return None;
        }
        self.own.get()
    }

    /// The handle's own stream, validated (H8, H11), for a stream-ordered call that skips
    /// activating the context: where the driver takes a call's context from its stream
    /// (`driver::stream_context`) and work goes to the own stream ([`own_stream_in_use`](Self::own_stream_in_use)).
    /// `None`: activate as usual.
    #[inline]
    pub fn unactivated_own_stream(&self) -> Result<Option<&StreamUse>> {
        match self.own_stream_in_use() {
            // A destroyed, reset or poisoned context is refused before the driver sees its stream.
            Some(own) if self.ctx.validate_without_activation()? => Ok(Some(own)),
            _ => Ok(None),
        }
    }

    /// Runs `call`, stream-ordered work queued on the stream it is given, on the handle's stream:
    /// on its own stream without activating the context where [`unactivated_own_stream`](Self::unactivated_own_stream)
    /// allows, activated otherwise, and activated again when the driver asks for a current
    /// context after all (`CUDA_ERROR_INVALID_CONTEXT`, answered before anything is queued).
    #[inline]
    pub fn in_stream_order<T>(&self, call: impl Fn(&StreamUse) -> Result<T>) -> Result<T> {
        if let Some(own) = self.unactivated_own_stream()? {
            match call(own) {
                Err(e) if e.cuda_code() == Some(CUDA_ERROR_INVALID_CONTEXT) => {}
                done => return done,
            }
        }
        let _scope = self.activate()?;
        call(&*self.queue()?)
    }

    /// Leases the handle's own stream (see `streams`: no other live handle uses it).
    #[cold]
    fn lease_own_stream(&self) -> Result<&StreamUse> {
        let _guard = self.init_lock.lock().map_err(|_| Error::invalid_state("handle lock poisoned"))?;
        if let Some(own) = self.own.get() {
            return Ok(own);
        }
        let lease = streams::lease(&self.ctx)?;
        Ok(self.own.get_or_init(|| StreamUse::Pooled(lease)))
    }

    /// The context's memory (pool and pinned cache), taken on first use, with the context made
    /// current for that.
    fn memory(&self) -> Result<&Arc<ContextMemory>> {
        if let Some(memory) = self.memory.get() {
            return Ok(memory);
        }
        let _scope = self.activate()?;
        let memory = context_memory::of(&self.ctx, self.device)?;
        Ok(self.memory.get_or_init(|| memory))
    }

    /// `bytes` of device memory, in stream order on the handle's stream where the context has a
    /// memory pool (see [`in_stream_order`](Self::in_stream_order)).
    pub fn allocate(&self, bytes: usize) -> Result<DeviceMemory> {
        let memory = self.memory()?;
        self.in_stream_order(|on| DeviceMemory::allocate(memory, &self.ctx, bytes, on))
    }

    /// `bytes` of pinned host memory from the context's cache.
    pub fn allocate_pinned(&self, bytes: usize) -> Result<PinnedMemory> {
        let _scope = self.activate()?;
        PinnedMemory::allocate(self.memory()?, &self.ctx, bytes)
    }

    /// What the context's memory pool and pinned cache hold (M1).
    pub fn memory_stats(&self) -> Result<MemoryStats> {
        let _scope = self.activate()?;
        let memory = self.memory()?;
        let (pool, pinned_cached) = memory.stats(&self.ctx)?;
        Ok(MemoryStats { pool, pinned_cached, stream_ordered: memory.pool().is_some() })
    }

    /// Gives the context's cached device and pinned memory (the array copies' idle staging chunks
    /// included) back to the driver (M1).
    pub fn trim_memory(&self) -> Result<()> {
        let _scope = self.activate()?;
        crate::core::transfer::staging_pool(&self.ctx).trim(&self.ctx);
        self.memory()?.trim(&self.ctx)
    }

    /// The stream as a raw value for interop (leases the own stream if needed).
    pub fn raw_stream(&self) -> Result<usize> {
        let _scope = self.activate()?;
        Ok(self.stream()? as usize)
    }

    /// Free bytes of device memory as the driver reports them in this handle's context.
    pub fn free_memory(&self) -> Result<usize> {
        let _scope = self.activate()?;
        let (mut free, mut total) = (0usize, 0usize);
        let driver = self.ctx.driver();
        // SAFETY: out-pointers are valid locals; the handle's context is active.
        self.ctx.noted(unsafe { driver.cuMemGetInfo(&mut free, &mut total) })?;
        Ok(free)
    }

    /// H9: work goes to `raw` from now on (0 or 1 = the context's legacy default stream). The
    /// previous stream is synchronised first, because what the handle's attachments keep (the
    /// reduction workspace) is reused in stream order, and a user stream left is detached (see
    /// `streams::attach`).
    /// `CU_STREAM_PER_THREAD` is refused: it names another stream on every thread, so reductions
    /// from several threads would share the workspace unordered, and `synchronize()` or `close()`
    /// on one thread could not wait for the others' work. The Java handle makes this call
    /// exclusive: no other call on the handle is in flight meanwhile.
    pub fn set_stream(&self, raw: usize) -> Result<()> {
        match raw {
            0 | CU_STREAM_LEGACY => {}
            CU_STREAM_PER_THREAD => {
                return Err(Error::invalid_argument(
                    "CU_STREAM_PER_THREAD (2) is a different stream on every calling thread, so a handle cannot order its work on it; \
                     create a stream per thread (cuStreamCreate) and pass that, or use one handle per thread",
                ))
            }
            other => raw_value::check_object(other as u64, "the CUstream")?,
        }
        let _scope = self.activate()?;
        if raw > CU_STREAM_PER_THREAD {
            let mut owner: CUcontext = std::ptr::null_mut();
            let driver = self.ctx.driver();
            // SAFETY: the value passed the checks above; the driver validates the handle further.
            self.ctx.noted(unsafe { driver.cuStreamGetCtx(raw as CUstream, &mut owner) })?;
            if owner != self.ctx.raw() {
                return Err(Error::invalid_argument(format!(
                    "stream {raw:#x} belongs to context {owner:p}, but this handle is bound to context {:p}; a handle can only use streams of its own context",
                    self.ctx.raw()
                )));
            }
        }
        self.leave_current_stream()?;
        if raw > CU_STREAM_PER_THREAD {
            self.user_attachment.store(streams::attach(&self.ctx, raw), Ordering::Release);
        }
        self.current_stream.store(raw, Ordering::Release);
        Ok(())
    }

    /// Back to the handle's own stream.
    pub fn reset_stream(&self) -> Result<()> {
        let _scope = self.activate()?;
        self.leave_current_stream()?;
        self.current_stream.store(OWN_STREAM, Ordering::Release);
        Ok(())
    }

    /// Synchronises the stream work goes to now and, if it is a user stream, detaches from it.
    /// The context is active.
    fn leave_current_stream(&self) -> Result<()> {
        self.synchronize_active()?;
        let current = self.current_stream.load(Ordering::Acquire);
        if current != OWN_STREAM && current > CU_STREAM_PER_THREAD {
            streams::detach(&self.ctx, current);
        }
        Ok(())
    }

    pub fn synchronize(&self) -> Result<()> {
        if self.ctx.is_partition() {
            // Waits without making the partition's context current: a thread holding it for the
            // wait would keep every other thread of the partition from its own short calls.
            if let Some(own) = self.unactivated_own_stream()? {
                let driver = self.ctx.driver();
                // SAFETY: the handle's own stream, live while the handle is (validated above).
                return self.ctx.noted(unsafe { driver.cuStreamSynchronize(own.raw()) });
            }
        }
        let _scope = self.activate()?;
        self.synchronize_active()
    }

    fn synchronize_active(&self) -> Result<()> {
        let current = self.current_stream.load(Ordering::Acquire);
        let stream = if current == OWN_STREAM {
            match self.own.get() {
                Some(own) => own.raw(),
                None => return Ok(()), // nothing was ever queued
            }
        } else {
            current as CUstream
        };
        let driver = self.ctx.driver();
        // SAFETY: the stream belongs to the active context.
        self.ctx.noted(unsafe { driver.cuStreamSynchronize(stream) })
    }

    /// H4 escape hatch: leaves the handle's context current on the calling thread.
    pub fn make_current(&self) -> Result<()> {
        if self.ctx.is_partition() {
            return Err(Error::invalid_state(
                "a handle of an SM partition cannot leave its context current: NVIDIA allows a green context to be current on one thread at a time, \
                 so cuhandle makes it current only inside its own calls; launch through the handle, or use an ordinary handle for code that needs a current context",
            ));
        }
        self.ctx.validate()?;
        let driver = self.ctx.driver();
        // SAFETY: the context was validated just now.
        self.ctx.noted(unsafe { driver.cuCtxSetCurrent(self.ctx.raw()) })
    }

    /// Routes later calls to capture stream `raw` without synchronising, and returns the previous
    /// value: for graph capture, whose private stream executes nothing.
    pub(crate) fn begin_capture_stream(&self, raw: usize) -> usize {
        self.capturing.store(true, Ordering::Release);
        self.current_stream.swap(raw, Ordering::AcqRel)
    }

    /// Routes later calls of a running capture to another of its streams (a conditional node's
    /// body, and back); returns the stream used before.
    pub(crate) fn switch_capture_stream(&self, raw: usize) -> usize {
        self.current_stream.swap(raw, Ordering::AcqRel)
    }

    /// Routes later calls back to `previous` (from `begin_capture_stream`).
    pub(crate) fn end_capture_stream(&self, previous: usize) {
        self.current_stream.store(previous, Ordering::Release);
        self.capturing.store(false, Ordering::Release);
    }

    /// H6: synchronises the handle's stream, frees what the handle owns, gives its stream back
    /// and releases the context binding. Never fails: a dead or reset context means there is
    /// nothing left to free (H8).
    pub fn destroy(mut self) {
        for attachment in self.attachments.iter() {
            attachment.closing(&self);
        }
        // Taken out so that they are dropped (what they hold freed) with the context active
        // below, or, when the context is gone, dropped without freeing (their memory's Drop finds
        // the context invalid).
        let attachments = self.attachments.take_all();
        if attachments.is_empty() && self.own.get().is_none() && self.current_stream.load(Ordering::Acquire) == OWN_STREAM {
            // Nothing was ever queued through this handle and it holds nothing to free in its
            // context: no stream to wait for or give back, so no activation (four driver calls of
            // a create + close while another context is current, docs/performance-notes.md).
            self.release_binding();
            return;
        }
        if self.ctx.is_partition() {
            // The wait for the handle's work happens here, without holding the partition's context
            // (see `synchronize`); the one under activation below then finds the stream idle.
            if let Err(e) = self.synchronize() {
                log::debug!("closing a handle of an SM partition: waiting for its stream: {e}");
            }
        }
        match self.activate() {
            Ok(scope) => {
                if let Err(e) = self.leave_current_stream() {
                    log::warn!("closing a handle: synchronising its stream failed: {e}");
                }
                // Freed in stream order on the own stream, before the stream is given back.
                drop(attachments);
                if let Some(StreamUse::Pooled(lease)) = self.own.get() {
                    // The own stream was synchronised when the handle last left it (a stream
                    // switch) or just now: nothing queued under this lease is still running.
                    streams::give_back(&self.ctx, lease.clone());
                }
                drop(scope);
            }
            Err(e) => {
                log::debug!("closing a handle whose context is gone; nothing to free: {e}");
                drop(attachments);
            }
        }
        self.release_binding();
    }

    /// Drops the handle, and with it its context binding (the primary-context retain, exactly once).
    /// If that left the primary context inactive, it is gone with its streams: forget them.
    fn release_binding(self) {
        let (device, primary, id) = (self.ctx.device(), self.ctx.ownership() == Ownership::RetainedPrimary, self.ctx.id());
        let driver = self.ctx.driver();
        drop(self);
        // The pool is looked at first (a lock) and the driver asked only when it keeps streams of
        // this context: most closes leave the context active with no stream to forget.
        if primary && streams::kept_for(id) && !primary_active(driver, device) {
            streams::forget(id);
        }
    }
}
