//! Which streams used a piece of memory, so that its release waits for exactly that work and
//! nothing else (rule L3, stream-ordered; the model is PyTorch's `record_stream` and cudarc's
//! per-slice events).
//!
//! Device memory is allocated in stream order on its *home* stream (the allocating handle's). Work
//! on that stream, under the same lease or attachment, needs nothing: stream order covers it, and
//! the release goes to that stream or waits for it, which keeps the common case (one handle, one
//! stream) a comparison, with no lock and no allocation. The first use on another
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
    /// Other streams that used the memory, one entry per stream (the latest lease).
    others: Mutex<Vec<StreamUse>>,
}

impl Uses {
    /// Tracking for memory allocated in stream order on `home`.
    pub fn at_home(home: StreamUse) -> Uses {
        Uses { home, others: Mutex::new(Vec::new()) }
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
        if self.covered_by_home(used) || used.is_capture() {
            return Ok(());
        }
        self.note_other(ctx, used)
    }

    /// Whether work on `used` needs no note: the home stream under the home lease or attachment.
    /// Only the same *use* will do, not just the same raw stream: the release of memory whose home
    /// is a user stream waits for that stream only while the home attachment lasts (after that it
    /// goes to the release stream), so a later attachment to the same stream (a second
    /// `setStream` to it) must be noted, or the free would not wait for its work (rule L3).
    #[inline]
    fn covered_by_home(&self, used: &StreamUse) -> bool {
        self.home.same_use(used)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::streams::{Lease, PooledStream};
    use std::sync::Arc;

    #[test]
    fn only_the_home_use_itself_goes_unnoted() {
        let user = Uses::at_home(StreamUse::User { raw: 0x200, attachment: 3 });
        assert!(user.covered_by_home(&StreamUse::User { raw: 0x200, attachment: 3 }));
        assert!(
            !user.covered_by_home(&StreamUse::User { raw: 0x200, attachment: 4 }),
            "a later attachment of the same stream must be noted"
        );
        let stream = Arc::new(PooledStream::for_test(0x100, 1));
        let pooled = Uses::at_home(StreamUse::Pooled(Lease { stream: Arc::clone(&stream), number: 1 }));
        assert!(pooled.covered_by_home(&StreamUse::Pooled(Lease { stream: Arc::clone(&stream), number: 1 })));
        assert!(!pooled.covered_by_home(&StreamUse::User { raw: 0x100, attachment: 1 }));
        assert!(Uses::at_home(StreamUse::Legacy { raw: 0 }).covered_by_home(&StreamUse::Legacy { raw: 0 }));
    }
}
