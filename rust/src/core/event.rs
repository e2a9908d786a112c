//! Events for ordering and timing work on a handle's stream.

use crate::core::context::Context;
use crate::core::error::Result;
use crate::core::handle::Handle;
use cudarc::driver::sys::CUevent;
use std::sync::Arc;

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
        // SAFETY: out-pointer valid; default flags (timing enabled); context active.
        ctx.check(unsafe { (ctx.driver().api.cuEventCreate)(&mut raw, 0) }, "cuEventCreate")?;
        Ok(Event { raw, ctx: Arc::clone(ctx) })
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    pub fn record(&self, handle: &Handle) -> Result<()> {
        let _scope = handle.activate()?;
        // SAFETY: event and stream belong to the active context (checked by the caller).
        self.ctx.check(unsafe { (self.ctx.driver().api.cuEventRecord)(self.raw, handle.stream()?) }, "cuEventRecord")
    }

    pub fn synchronize(&self) -> Result<()> {
        let _scope = self.ctx.activate()?;
        // SAFETY: the event belongs to the active context.
        self.ctx.check(unsafe { (self.ctx.driver().api.cuEventSynchronize)(self.raw) }, "cuEventSynchronize")
    }

    /// Milliseconds from `start` to `self` (both recorded and complete).
    pub fn elapsed_since(&self, start: &Event) -> Result<f32> {
        let _scope = self.ctx.activate()?;
        let mut ms = 0f32;
        // SAFETY: out-pointer valid; both events belong to the active context.
        self.ctx.check(unsafe { (self.ctx.driver().api.cuEventElapsedTime)(&mut ms, start.raw, self.raw) }, "cuEventElapsedTime")?;
        Ok(ms)
    }

    pub fn destroy(self) {
        if let Ok(_scope) = self.ctx.activate() {
            // SAFETY: created by us in this context, destroyed once.
            unsafe { (self.ctx.driver().api.cuEventDestroy)(self.raw) };
        }
    }
}
