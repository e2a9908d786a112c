//! Which streams used a piece of memory, so that its release waits for exactly that work and
//! nothing else (rule L3, stream-ordered; the model is PyTorch's `record_stream` and cudarc's
//! per-slice events).
//!
//! Device memory is allocated in stream order on its *home* stream (the allocating handle's). Work
//! on that stream needs nothing: stream order covers it, which keeps the common case (one handle,
//! one stream) a single comparison, with no lock and no allocation. The first use on another
//! stream makes that stream wait for the home stream to pass the allocation (stream-ordered
//! memory is only valid there from that point), and notes the stream. The release then makes the
//! freeing stream wait for each noted stream whose work may still run (`streams::order_after`),
//! and frees in stream order: the host never waits.

use crate::core::context::Context;
use crate::core::error::Result;
use crate::core::streams::{self, StreamUse};
use std::sync::{Mutex, MutexGuard};

pub struct Uses {
    /// Where the memory was allocated.
    home: StreamUse,
    /// `home`'s raw stream, for the lock-free check of the common case.
    home_raw: usize,
    /// Other streams that used the memory, one entry per stream (the latest lease).
    others: Mutex<Vec<StreamUse>>,
}

impl Uses {
    /// Tracking for memory allocated in stream order on `home`.
    pub fn at_home(home: StreamUse) -> Uses {
        let home_raw = home.raw() as usize;
        Uses { home, home_raw, others: Mutex::new(Vec::new()) }
    }

    pub fn home(&self) -> &StreamUse {
        &self.home
    }

    fn others(&self) -> MutexGuard<'_, Vec<StreamUse>> {
        // Each update is one push or one replacement: a panic elsewhere leaves the list valid.
        self.others.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Call before queuing work on `used` that touches the memory. On a stream other than the
    /// home stream, the first use orders that stream after the allocation (on the GPU); later ones
    /// only update the lease. `ctx` is the memory's context; it is activated when needed.
    #[inline]
    pub fn before_use(&self, ctx: &Context, used: &StreamUse) -> Result<()> {
        if self.home_raw == used.raw() as usize || used.is_capture() {
            return Ok(());
        }
        self.note_other(ctx, used)
    }

    #[cold]
    fn note_other(&self, ctx: &Context, used: &StreamUse) -> Result<()> {
        let mut others = self.others();
        if let Some(known) = others.iter_mut().find(|u| u.same_stream(used)) {
            // A new lease or attachment of the same stream: the old one ended with a
            // synchronisation, so only the new one can still run work.
            if !known.same_use(used) {
                *known = used.clone();
            }
            return Ok(());
        }
        let _scope = ctx.activate()?;
        // SAFETY: `used` is the stream the caller is about to queue on: live, of this context.
        unsafe { streams::order_after(ctx, used.raw(), [&self.home])? };
        others.push(used.clone());
        Ok(())
    }

    /// Whether no stream but the home stream used the memory.
    pub fn only_home(&self) -> bool {
        self.others().is_empty()
    }

    /// Every stream that used the memory (the home stream first), for the release.
    pub fn all(&self) -> Vec<StreamUse> {
        std::iter::once(self.home.clone()).chain(self.others().iter().cloned()).collect()
    }
}
