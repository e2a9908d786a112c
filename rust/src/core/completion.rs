//! Completion markers: "tell me when the work queued so far on this stream is done" without a
//! thread waiting per question (rule A1).
//!
//! A marker is an event recorded on the stream plus a host function queued right after it
//! (`cuLaunchHostFunc`). The host function runs on a driver thread that must not call CUDA, so it
//! does the least possible: it pushes the marker's id onto a process-wide list and wakes the one
//! waiter (Java's `cuhandle-completion` thread, blocked in [`await_signals`]). That thread then
//! asks the marker's event for the outcome, which is where a fault of the stream shows up as a
//! CUDA error. The driver does not run host functions after a context fault, so the waiter also
//! sweeps its outstanding markers on a timeout: a marker is never left waiting for a signal that
//! cannot come.

use crate::core::context::Context;
use crate::core::error::Result;
use crate::core::event;
use crate::core::handle::Handle;
use cudarc::driver::sys::{CUevent, CUevent_flags};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// `CU_EVENT_DISABLE_TIMING`: cheaper to record and query, and markers never time anything.
const CU_EVENT_DISABLE_TIMING: u32 = CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;

struct Signals {
    ids: Vec<u64>,
    /// Set by [`wake`]: the waiter returns even without ids (new work to sweep, shutdown).
    woken: bool,
}

static SIGNALS: Mutex<Signals> = Mutex::new(Signals { ids: Vec::new(), woken: false });
static SIGNALLED: Condvar = Condvar::new();

/// The host function: runs on a driver thread after the stream passed the marker's event.
/// Touches only the signal list (no CUDA, no Java, no allocation beyond the list's growth).
unsafe extern "C" fn signal(user_data: *mut std::ffi::c_void) {
    let mut signals = SIGNALS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    signals.ids.push(user_data as usize as u64);
    drop(signals);
    SIGNALLED.notify_one();
}

/// Blocks for at most `timeout` until a marker signalled or [`wake`] was called; returns the ids
/// signalled since the last call (possibly none).
pub fn await_signals(timeout: Duration) -> Vec<u64> {
    let mut signals = SIGNALS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if signals.ids.is_empty() && !signals.woken {
        signals = match SIGNALLED.wait_timeout(signals, timeout) {
            Ok((guard, _)) => guard,
            Err(poisoned) => poisoned.into_inner().0,
        };
    }
    signals.woken = false;
    std::mem::take(&mut signals.ids)
}

/// Makes the current or next [`await_signals`] return at once.
pub fn wake() {
    SIGNALS.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).woken = true;
    SIGNALLED.notify_one();
}

pub struct Marker {
    event: CUevent,
    ctx: Arc<Context>,
}

// SAFETY: events are driver handles usable from any thread.
unsafe impl Send for Marker {}
// SAFETY: as above.
unsafe impl Sync for Marker {}

impl Marker {
    /// Marks the end of the work queued so far on `handle`'s stream; `id` is what the host
    /// function reports when the stream gets there.
    pub fn record(handle: &Handle, id: u64) -> Result<Marker> {
        let _scope = handle.activate()?;
        let ctx = handle.context();
        let driver = ctx.driver();
        let stream = handle.stream()?;
        let mut event = std::ptr::null_mut();
        // SAFETY: out-pointer valid; the context is active.
        ctx.noted(unsafe { driver.cuEventCreate(&mut event, CU_EVENT_DISABLE_TIMING) })?;
        // From here on dropping the marker destroys the event, also on the error paths below.
        let marker = Marker { event, ctx: Arc::clone(ctx) };
        // SAFETY: the event and the stream belong to the active context.
        ctx.noted(unsafe { driver.cuEventRecord(event, stream) })?;
        // SAFETY: `signal` is sound to call from any thread at any time; the user data is an
        // integer, not a pointer, so nothing it names can dangle.
        ctx.noted(unsafe { driver.cuLaunchHostFunc(stream, signal, id as usize as *mut std::ffi::c_void) })?;
        Ok(marker)
    }

    /// Whether the marked work is done: `Ok(true)` done, `Ok(false)` still running, an error if
    /// it failed (a sticky fault of the context) or the context is gone.
    pub fn query(&self) -> Result<bool> {
        event::query_raw(&self.ctx, self.event)
    }
}

impl Drop for Marker {
    fn drop(&mut self) {
        if let Ok(_scope) = self.ctx.activate() {
            // SAFETY: created by `record` in this context, destroyed once. Destroying an event
            // whose work is still queued is allowed: the driver releases it when done.
            // A failed destroy leaves nothing to undo.
            let _ = unsafe { self.ctx.driver().cuEventDestroy(self.event) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn signals_are_collected_and_a_wake_returns_without_any() {
        // SAFETY: `signal` only touches the static list.
        unsafe { signal(7usize as *mut std::ffi::c_void) };
        assert_eq!(await_signals(Duration::from_secs(5)), vec![7]);
        wake();
        assert!(await_signals(Duration::from_secs(5)).is_empty());
        let start = std::time::Instant::now();
        assert!(await_signals(Duration::from_millis(20)).is_empty());
        assert!(start.elapsed() >= Duration::from_millis(15));
    }
}
