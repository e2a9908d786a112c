//! The handle: a context binding, a stream and a reduction workspace (rules H1-H9).
//!
//! Liveness (close waits for calls in flight, calls after close fail) is enforced by the Java
//! object, which owns the only pointer to a `Handle`; everything here may be called from many
//! threads at once.

use crate::core::blas;
use crate::core::context::{Activation, Context};
use crate::core::device::{self, DeviceInfo};
use crate::core::error::{Error, Result};
use crate::core::host_result::HostResult;
use crate::core::graph::Capture;
use crate::core::memory::DeviceMemory;
use crate::core::raw_value;
use crate::core::stream_pool;
use cudarc::driver::sys::{CUcontext, CUstream};
use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Marks "the handle's own stream" in `current_stream` (0, 1 and 2 are real stream values:
/// legacy, `CU_STREAM_LEGACY` and `CU_STREAM_PER_THREAD`).
const OWN_STREAM: usize = usize::MAX;
/// `CU_STREAM_LEGACY`: the context's legacy default stream, like 0.
const CU_STREAM_LEGACY: usize = 1;
/// `CU_STREAM_PER_THREAD`: the calling thread's default stream.
const CU_STREAM_PER_THREAD: usize = 2;

/// Scratch memory for reductions: device partials + a counter, and a pinned host slot for
/// results read back by the host. One per handle; reductions on it are serialised by `lock`.
/// Dropping it frees both (the device part after the context's work is done).
pub struct Workspace {
    pub device: DeviceMemory,
    pub host: HostResult,
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let ctx = self.device.context();
        if let Ok(_scope) = ctx.activate() {
            // Every reduction that wrote the slot was waited for (handle.destroy synchronises).
            self.host.free(ctx);
        }
    }
}

pub struct Handle {
    ctx: Arc<Context>,
    device: &'static DeviceInfo,
    /// Created on first use, so that creating a handle costs only the context binding.
    own_stream: AtomicPtr<cudarc::driver::sys::CUstream_st>,
    current_stream: AtomicUsize,
    init_lock: Mutex<()>,
    workspace: Mutex<Option<Workspace>>,
    /// The BLAS kernels' functions in this handle's context, looked up on first use.
    blas_functions: OnceLock<blas::Functions>,
    /// The graph capture in progress, if any (see `graph`).
    capture: Mutex<Option<Capture>>,
}


impl Handle {
    pub fn new(ctx: Context) -> Result<Handle> {
        let device = device::info(ctx.device())?;
        Ok(Handle {
            ctx: Arc::new(ctx),
            device,
            own_stream: AtomicPtr::new(std::ptr::null_mut()),
            current_stream: AtomicUsize::new(OWN_STREAM),
            init_lock: Mutex::new(()),
            workspace: Mutex::new(None),
            blas_functions: OnceLock::new(),
            capture: Mutex::new(None),
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

    /// The handle's cache of the BLAS kernels' functions (see `blas::Functions`).
    pub fn blas_functions(&self) -> &OnceLock<blas::Functions> {
        &self.blas_functions
    }

    /// The stream work goes to. Call only with the context active.
    #[inline]
    pub fn stream(&self) -> Result<CUstream> {
        let current = self.current_stream.load(Ordering::Acquire);
        if current != OWN_STREAM {
            return Ok(current as CUstream);
        }
        let own = self.own_stream.load(Ordering::Acquire);
        if !own.is_null() {
            return Ok(own);
        }
        self.create_own_stream()
    }

    /// The handle's own stream when work goes to it (no `setStream`, no capture in progress) and
    /// it was already created: always a non-null stream of the handle's context, so stream-ordered
    /// calls on it may skip activation where the driver allows it (see `launch::launch`). `None`
    /// for a user stream (whose life the handle does not control), the legacy stream (which means
    /// "the current context's") or a capture stream.
    #[inline]
    pub fn own_stream_in_use(&self) -> Option<CUstream> {
        if self.current_stream.load(Ordering::Acquire) != OWN_STREAM {
            return None;
        }
        let own = self.own_stream.load(Ordering::Acquire);
        (!own.is_null()).then_some(own)
    }

    /// The handle's default stream, taken from its context's pool on first use (see
    /// `stream_pool`: handles share a few streams instead of each creating and destroying one).
    #[cold]
    fn create_own_stream(&self) -> Result<CUstream> {
        let _guard = self.init_lock.lock().map_err(|_| Error::invalid_state("handle lock poisoned"))?;
        let own = self.own_stream.load(Ordering::Acquire);
        if !own.is_null() {
            return Ok(own);
        }
        let stream = stream_pool::next_stream(&self.ctx)?;
        self.own_stream.store(stream, Ordering::Release);
        Ok(stream)
    }

    /// The stream as a raw value for interop (creates the own stream if needed).
    pub fn raw_stream(&self) -> Result<usize> {
        let _scope = self.activate()?;
        Ok(self.stream()? as usize)
    }

    /// Free bytes of device memory as the driver reports them in this handle's context.
    pub fn free_memory(&self) -> Result<usize> {
        let _scope = self.activate()?;
        let (mut free, mut total) = (0usize, 0usize);
        let api = &self.ctx.driver().api;
        // SAFETY: out-pointers are valid locals; the handle's context is active.
        self.ctx.check(unsafe { (api.cuMemGetInfo)(&mut free, &mut total) }, "cuMemGetInfo")?;
        Ok(free)
    }

    /// H9: work goes to `raw` from now on (0 or 1 = the context's legacy default stream). The
    /// previous stream is synchronised first, because the reduction workspace is reused in
    /// stream order. `CU_STREAM_PER_THREAD` is refused: it names another stream on every thread,
    /// so reductions from several threads would share the workspace unordered, and
    /// `synchronize()` or `close()` on one thread could not wait for the others' work.
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
            let api = &self.ctx.driver().api;
            // SAFETY: the value passed the checks above; the driver validates the handle further.
            self.ctx.check(unsafe { (api.cuStreamGetCtx)(raw as CUstream, &mut owner) }, "cuStreamGetCtx")?;
            if owner != self.ctx.raw() {
                return Err(Error::invalid_argument(format!(
                    "stream {raw:#x} belongs to context {owner:p}, but this handle is bound to context {:p}; a handle can only use streams of its own context",
                    self.ctx.raw()
                )));
            }
        }
        self.synchronize_active()?;
        self.current_stream.store(raw, Ordering::Release);
        Ok(())
    }

    /// Back to the handle's own stream.
    pub fn reset_stream(&self) -> Result<()> {
        let _scope = self.activate()?;
        self.synchronize_active()?;
        self.current_stream.store(OWN_STREAM, Ordering::Release);
        Ok(())
    }

    pub fn synchronize(&self) -> Result<()> {
        let _scope = self.activate()?;
        self.synchronize_active()
    }

    fn synchronize_active(&self) -> Result<()> {
        let current = self.current_stream.load(Ordering::Acquire);
        let stream = if current == OWN_STREAM { self.own_stream.load(Ordering::Acquire) } else { current as CUstream };
        if current == OWN_STREAM && stream.is_null() {
            return Ok(()); // nothing was ever queued
        }
        let api = &self.ctx.driver().api;
        // SAFETY: the stream belongs to the active context.
        self.ctx.check(unsafe { (api.cuStreamSynchronize)(stream) }, "cuStreamSynchronize")
    }

    /// H4 escape hatch: leaves the handle's context current on the calling thread.
    pub fn make_current(&self) -> Result<()> {
        self.ctx.validate()?;
        let api = &self.ctx.driver().api;
        // SAFETY: the context was validated just now.
        self.ctx.check(unsafe { (api.cuCtxSetCurrent)(self.ctx.raw()) }, "cuCtxSetCurrent")
    }

    /// The capture state, locked (for `graph` only).
    pub(crate) fn capture_slot(&self) -> Result<MutexGuard<'_, Option<Capture>>> {
        self.capture.lock().map_err(|_| Error::invalid_state("handle capture lock poisoned"))
    }

    /// Routes later calls to `raw` (a stream value as kept in `current_stream`) without
    /// synchronising, and returns the previous value: for graph capture, whose private stream
    /// executes nothing.
    pub(crate) fn swap_stream(&self, raw: usize) -> usize {
        self.current_stream.swap(raw, Ordering::AcqRel)
    }

    /// The reduction workspace, created on first use, locked for one reduction.
    /// Call only with the context active.
    pub fn workspace(&self, device_bytes: usize) -> Result<MutexGuard<'_, Option<Workspace>>> {
        let mut guard = self.workspace.lock().map_err(|_| Error::invalid_state("handle workspace lock poisoned"))?;
        if guard.is_none() {
            let stream = self.stream()?;
            // On any failure below, `device` is dropped and so freed (no leak on a failed setup).
            let device = DeviceMemory::allocate(&self.ctx, device_bytes)?;
            device.memset(0, device_bytes, 0, stream)?;
            *guard = Some(Workspace { device, host: HostResult::allocate(&self.ctx)? });
        }
        Ok(guard)
    }

    /// H6: synchronises the handle's stream, frees what the handle owns and releases the context
    /// binding. Never
    /// fails: a dead or reset context means there is nothing left to free (H8).
    pub fn destroy(self) {
        // Taken out first so that it is dropped (freed) with the context active below, or, when
        // the context is gone, dropped without freeing (its Drop finds the context invalid).
        let workspace = self.workspace.lock().ok().and_then(|mut ws| ws.take());
        // A capture still open (the Java side ends every capture, so only after a failure there)
        // is ended so that its private stream does not stay capturing.
        if matches!(self.capture.lock().map(|c| c.is_some()), Ok(true)) {
            if let Err(e) = crate::core::graph::abort_capture(&self) {
                log::warn!("closing a handle: ending its graph capture failed: {e}");
            }
        }
        match self.activate() {
            Ok(scope) => {
                if let Err(e) = self.synchronize_active() {
                    log::warn!("closing a handle: synchronising its stream failed: {e}");
                }
                drop(workspace);
                // The default stream belongs to the context's pool and stays for the next handle.
                drop(scope);
            }
            Err(e) => {
                log::debug!("closing a handle whose context is gone; nothing to free: {e}");
                drop(workspace);
            }
        }
        // Dropping the last Arc releases the primary-context retain (exactly once).
    }
}
