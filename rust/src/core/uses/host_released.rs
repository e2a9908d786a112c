//! Which streams used an object that is released on the host rather than in stream order: a
//! library's code and its variables (`cuLibraryUnload` must not run under a kernel of it). Its
//! release first waits on the host for that work (`UseLog::wait_for_all`), and only for that. (Device
//! memory is released in stream order instead: `uses::memory`.)

use crate::core::context::Context;
use crate::core::streams::{still_running_in, wait_for, StreamUse};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};

/// The streams, of any context, whose work uses something that is released on the host rather
/// than in stream order: a library's code and variables (`cuLibraryUnload` must not run under a
/// kernel of it). Its release first waits for that work (`wait_for_all`), and only for that.
pub struct UseLog {
    /// Unique among logs ever made, for the per-thread record of the last use noted.
    id: u64,
    /// One entry per stream of a context that ran work using the logged object.
    uses: Mutex<Vec<Noted>>,
}

/// A stream use, with the context it belongs to: `live`, the context of the handle that noted it
/// last (no retain), and `view`, the same context borrowed (for when that handle is gone).
struct Noted {
    live: Weak<Context>,
    view: Context,
    used: StreamUse,
}

static NEXT_LOG: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// The last (log, context id, stream, lease or attachment) this thread noted: a launch loop on
    /// one handle notes its stream once and then takes no lock (the launch path stays lock-free).
    /// Entries are never removed from a log before it is waited for, so a use found here is in it.
    static LAST_NOTED: std::cell::Cell<[u64; 4]> = const { std::cell::Cell::new([0; 4]) };
}

impl Default for UseLog {
    fn default() -> UseLog {
        UseLog { id: NEXT_LOG.fetch_add(1, Ordering::Relaxed), uses: Mutex::new(Vec::new()) }
    }
}

impl UseLog {
    /// Notes that work queued on `used`, a stream of `ctx`, uses the logged object. A capture
    /// stream is skipped: its graph's replays note themselves.
    pub fn note(&self, ctx: &Arc<Context>, used: &StreamUse) {
        if used.is_capture() {
            return;
        }
        let key = [self.id, ctx.id(), used.raw() as usize as u64, used.number()];
        if LAST_NOTED.with(|last| last.get() == key) {
            return; // noted before by this thread, under the same lease: still in the list
        }
        self.note_locked(ctx, used);
        LAST_NOTED.with(|last| last.set(key));
    }

    #[cold]
    fn note_locked(&self, ctx: &Arc<Context>, used: &StreamUse) {
        let mut uses = self.uses.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // One entry per (context, stream): bounded by the streams contexts ever had.
        match uses.iter_mut().find(|n| n.view.id() == ctx.id() && n.used.same_stream(used)) {
            Some(known) => {
                known.live = Arc::downgrade(ctx);
                known.used = used.clone();
            }
            None => uses.push(Noted { live: Arc::downgrade(ctx), view: ctx.borrowed_view(), used: used.clone() }),
        }
    }

    /// Waits on the host for the work noted so far that may still run.
    pub fn wait_for_all(&self) {
        let uses = std::mem::take(&mut *self.uses.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        for noted in uses {
            match noted.live.upgrade() {
                Some(ctx) => wait_for(&ctx, std::slice::from_ref(&noted.used)),
                // The handle that noted it is gone. A lease or attachment still current means
                // another handle of the context holds it (so the context lives) and may have queued
                // work under it; otherwise that work was synchronised when the lease ended.
                None if still_running_in(&noted.view, &noted.used) => wait_for(&noted.view, std::slice::from_ref(&noted.used)),
                None => {}
            }
        }
    }
}
