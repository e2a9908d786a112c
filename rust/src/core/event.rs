//! Events for ordering and timing work on a handle's stream.

use crate::core::context::Context;
use crate::core::error::Result;
use crate::core::handle::Handle;
use cudarc::driver::sys::{CUevent, CUevent_flags, CUevent_wait_flags};
use std::sync::Arc;

/// `cuEventQuery` of an event of `ctx` that the caller keeps alive: `Ok(true)` done,
/// `Ok(false)` still running, an error when its work failed or the context is gone.
pub(crate) fn query_raw(ctx: &Context, raw: CUevent) -> Result<bool> {
    let _scope = ctx.activate()?;
    // SAFETY: the event belongs to the context, which is active; the caller keeps it alive.
    ctx.noted(unsafe { ctx.driver().event_is_done(raw) })
}

pub struct Event {
    raw: CUevent,
    ctx: Arc<Context>,
}

// SAFETY: events are driver handles usable from any thread.
unsafe impl Send for Event {}
// SAFETY: as above.
unsafe impl Sync for Event {}

impl Event {
    pub fn create(handle: &Handle) -> Result<Event> {
        let _scope = handle.activate()?;
        let ctx = handle.context();
        let mut raw = std::ptr::null_mut();
        // Default flags: timing enabled.
        // SAFETY: out-pointer valid; context active.
        ctx.noted(unsafe { ctx.driver().cuEventCreate(&mut raw, CUevent_flags::CU_EVENT_DEFAULT as u32) })?;
        Ok(Event { raw, ctx: Arc::clone(ctx) })
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn record(&self, handle: &Handle) -> Result<()> {
        let _scope = handle.activate()?;
        // SAFETY: event and stream belong to the active context (checked by the caller).
        self.ctx.noted(unsafe { self.ctx.driver().cuEventRecord(self.raw, handle.stream()?) })
    }

    pub fn synchronize(&self) -> Result<()> {
        // An SM partition's context is not held across the wait (other threads of the partition
        // take turns holding it): cuEventSynchronize needs no current context (measured on driver
        // 580, docs/runs/2026-12-02-partition-probe.log).
        let _scope = if self.ctx.is_partition() { self.ctx.validate().map(|()| None)? } else { Some(self.ctx.activate()?) };
        // SAFETY: the event belongs to the active context.
        self.ctx.noted(unsafe { self.ctx.driver().cuEventSynchronize(self.raw) })
    }

    /// Whether the recorded work is done (`cuEventQuery`): `Ok(false)` while it runs, an error
    /// when it failed. An event never recorded counts as done.
    pub fn query(&self) -> Result<bool> {
        query_raw(&self.ctx, self.raw)
    }

    /// Makes work queued on `handle`'s stream from now on wait until this event's work is done
    /// (`cuStreamWaitEvent`), without blocking the host. The driver allows an event of another
    /// context, so handles of different devices can be ordered too.
    pub fn order_before(&self, handle: &Handle) -> Result<()> {
        self.ctx.validate()?;
        let _scope = handle.activate()?;
        let ctx = handle.context();
        // SAFETY: the stream belongs to the active context; the event is live (owned by self).
        ctx.noted(unsafe { ctx.driver().cuStreamWaitEvent(handle.stream()?, self.raw, CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT as u32) })
    }

    /// Milliseconds from `start` to `self` (both recorded and complete).
    pub fn elapsed_since(&self, start: &Event) -> Result<f32> {
        let _scope = self.ctx.activate()?;
        let mut ms = 0f32;
        // SAFETY: out-pointer valid; both events belong to the active context.
        self.ctx.noted(unsafe { self.ctx.driver().cuEventElapsedTime(&mut ms, start.raw, self.raw) })?;
        Ok(ms)
    }

    pub fn destroy(self) {
        if let Ok(_scope) = self.ctx.activate() {
            // SAFETY: created by us in this context, destroyed once.
            // Ignored as before the floor: a failed destroy leaves nothing to undo.
            let _ = unsafe { self.ctx.driver().cuEventDestroy(self.raw) };
        }
    }
}
