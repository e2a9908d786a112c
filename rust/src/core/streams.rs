//! The streams cuhandle queues work on, and how one of them is made to wait for another.
//!
//! **A stream of its own for every live handle (rule H9).** A handle leases a non-blocking
//! stream of its context on first use and gives it back when it closes (after synchronising it),
//! so no two live handles share a stream and a handle never waits for another one's work. Streams
//! that are given back are reused by later handles, never destroyed: the driver keeps the device
//! memory of a destroyed stream cached while its context lives (docs/design.md, H9; the figures
//! are in docs/performance-notes.md). So a context holds at most as many streams as handles were
//! ever alive *at once*, however many come and go.
//!
//! **Leases.** Each lease of a pooled stream has a number. Memory remembers the streams (and lease
//! numbers) that used it (`uses`); a use whose lease has ended needs no waiting for, because
//! the handle synchronised the stream before giving it back. Streams a user hands to
//! `Handle.setStream` are counted the same way while some handle is attached to them: detaching
//! synchronises first, so a use of a user stream nobody is attached to any more is finished, and
//! cuhandle never touches a user stream it is not attached to (the user may have destroyed it).
//!
//! **Capture streams** come from a separate spare list: a stream being captured must never see
//! another thread's work (a free, an ordering event), or the capture would record or break on it.
//!
//! Everything here is kept per context id, so a reset or re-created context starts afresh.

use crate::core::context::Context;
use crate::core::error::Result;
use cudarc::driver::sys::{CUevent, CUevent_flags, CUevent_wait_flags, CUstream, CUstream_flags};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// `CU_STREAM_NON_BLOCKING`: handle work must not serialise with the legacy default stream.
const CU_STREAM_NON_BLOCKING: u32 = CUstream_flags::CU_STREAM_NON_BLOCKING as u32;
/// `CU_EVENT_DISABLE_TIMING`: ordering events time nothing, which makes them cheaper.
const CU_EVENT_DISABLE_TIMING: u32 = CUevent_flags::CU_EVENT_DISABLE_TIMING as u32;

/// A non-blocking stream that cuhandle created in one context and never destroys.
#[derive(Debug)]
pub struct PooledStream {
    raw: usize,
    /// The number of the current lease; bumped when the stream goes back to the free list.
    lease: AtomicU64,
}

impl PooledStream {
    pub fn raw(&self) -> CUstream {
        self.raw as CUstream
    }
    pub fn lease(&self) -> u64 {
        self.lease.load(Ordering::Acquire)
    }

    /// A stream value no driver call sees, under lease `lease` (for tests of use tracking).
    #[cfg(test)]
    pub(crate) fn for_test(raw: usize, lease: u64) -> PooledStream {
        PooledStream { raw, lease: AtomicU64::new(lease) }
    }
}

/// A leased stream: the stream and the number of this lease.
#[derive(Debug, Clone)]
pub struct Lease {
    pub stream: Arc<PooledStream>,
    pub number: u64,
}

/// The stream one piece of work went to, as use tracking must know it to wait for that work later.
#[derive(Debug, Clone)]
pub enum StreamUse {
    /// A handle's own stream, under the lease the handle holds.
    Pooled(Lease),
    /// A stream given to `Handle.setStream`, under the attachment it was used in.
    User { raw: usize, attachment: u64 },
    /// The context's legacy default stream (0 or `CU_STREAM_LEGACY`): always valid.
    Legacy { raw: usize },
    /// A stream being captured into a graph: its work runs only when the graph is replayed, and
    /// the replay notes its own uses, so nothing is tracked for it.
    Capture { raw: usize },
}

impl StreamUse {
    pub fn raw(&self) -> CUstream {
        match self {
            StreamUse::Pooled(lease) => lease.stream.raw(),
            StreamUse::User { raw, .. } | StreamUse::Legacy { raw } | StreamUse::Capture { raw } => *raw as CUstream,
        }
    }

    pub fn is_capture(&self) -> bool {
        matches!(self, StreamUse::Capture { .. })
    }

    /// Whether both name the same driver stream (whatever the lease or attachment).
    pub fn same_stream(&self, other: &StreamUse) -> bool {
        self.raw() == other.raw()
    }

    /// The lease or attachment number (0 for the legacy and capture streams).
    pub fn number(&self) -> u64 {
        match self {
            StreamUse::Pooled(lease) => lease.number,
            StreamUse::User { attachment, .. } => *attachment,
            StreamUse::Legacy { .. } | StreamUse::Capture { .. } => 0,
        }
    }

    /// Whether `self` is the same stream under the same lease or attachment as `other`.
    pub fn same_use(&self, other: &StreamUse) -> bool {
        match (self, other) {
            (StreamUse::Pooled(a), StreamUse::Pooled(b)) => Arc::ptr_eq(&a.stream, &b.stream) && a.number == b.number,
            (StreamUse::User { raw: a, attachment: x }, StreamUse::User { raw: b, attachment: y }) => a == b && x == y,
            _ => self.same_stream(other) && std::mem::discriminant(self) == std::mem::discriminant(other),
        }
    }
}

/// A user stream some handles of the context are attached to.
struct Attachment {
    raw: usize,
    handles: u32,
    number: u64,
}

/// What is kept for one context id.
struct ContextStreams {
    context_id: u64,
    free: Vec<Arc<PooledStream>>,
    spare_capture: Vec<usize>,
    attachments: Vec<Attachment>,
    spare_events: Vec<usize>,
    /// For frees whose own stream can no longer be used (see `release_stream`).
    release: Option<Arc<PooledStream>>,
}

static CONTEXTS: Mutex<Vec<ContextStreams>> = Mutex::new(Vec::new());
static NEXT_ATTACHMENT: AtomicU64 = AtomicU64::new(1);

fn lock() -> MutexGuard<'static, Vec<ContextStreams>> {
    // A panic while holding the lock leaves consistent data behind (every update is one push or
    // pop), so a poisoned lock is taken over rather than failing every later call.
    CONTEXTS.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn of<'a>(all: &'a mut Vec<ContextStreams>, ctx: &Context) -> &'a mut ContextStreams {
    let index = match all.iter().position(|c| c.context_id == ctx.id()) {
        Some(i) => i,
        None => {
            all.push(ContextStreams {
                context_id: ctx.id(),
                free: Vec::new(),
                spare_capture: Vec::new(),
                attachments: Vec::new(),
                spare_events: Vec::new(),
                release: None,
            });
            all.len() - 1
        }
    };
    &mut all[index]
}

fn create_stream(ctx: &Context) -> Result<usize> {
    let mut stream = std::ptr::null_mut();
    // SAFETY: the out-pointer is a valid local; the context is active (every caller's contract).
    // No Java code runs under the registry lock: log records made meanwhile wait for the JNI
    // entry to return.
    ctx.noted(unsafe { ctx.driver().cuStreamCreate(&mut stream, CU_STREAM_NON_BLOCKING) })?;
    Ok(stream as usize)
}

/// A stream of `ctx` for one handle alone until [`give_back`]. The context must be active.
pub fn lease(ctx: &Context) -> Result<Lease> {
    let mut all = lock();
    let streams = of(&mut all, ctx);
    let stream = match streams.free.pop() {
        Some(stream) => stream,
        None => Arc::new(PooledStream { raw: create_stream(ctx)?, lease: AtomicU64::new(1) }),
    };
    let number = stream.lease();
    Ok(Lease { stream, number })
}

/// Ends a lease. The holder has synchronised the stream (or its context is gone): nothing it
/// queued is still running, so uses recorded under this lease need no waiting for.
pub fn give_back(ctx: &Context, lease: Lease) {
    lease.stream.lease.fetch_add(1, Ordering::AcqRel);
    of(&mut lock(), ctx).free.push(lease.stream);
}

/// A non-blocking stream of `ctx` that nothing else uses until [`give_back_capture`]. The
/// context must be active.
pub fn take_capture(ctx: &Context) -> Result<CUstream> {
    let mut all = lock();
    let streams = of(&mut all, ctx);
    match streams.spare_capture.pop() {
        Some(stream) => Ok(stream as CUstream),
        None => Ok(create_stream(ctx)? as CUstream),
    }
}

/// Returns a stream from [`take_capture`] for reuse; it must no longer be capturing.
pub fn give_back_capture(ctx: &Context, stream: CUstream) {
    of(&mut lock(), ctx).spare_capture.push(stream as usize);
}

/// Records that one more handle sends its work to user stream `raw`; returns the attachment
/// number uses of it are tracked under.
pub fn attach(ctx: &Context, raw: usize) -> u64 {
    let mut all = lock();
    let streams = of(&mut all, ctx);
    if let Some(a) = streams.attachments.iter_mut().find(|a| a.raw == raw) {
        a.handles += 1;
        return a.number;
    }
    let number = NEXT_ATTACHMENT.fetch_add(1, Ordering::Relaxed);
    streams.attachments.push(Attachment { raw, handles: 1, number });
    number
}

/// Records that a handle no longer sends work to user stream `raw`. The handle synchronised it
/// first: once no handle is attached, cuhandle's work on it is finished and cuhandle never
/// touches it again (the user may destroy it).
pub fn detach(ctx: &Context, raw: usize) {
    let mut all = lock();
    let streams = of(&mut all, ctx);
    if let Some(i) = streams.attachments.iter().position(|a| a.raw == raw) {
        streams.attachments[i].handles -= 1;
        if streams.attachments[i].handles == 0 {
            streams.attachments.swap_remove(i);
        }
    }
}

/// Whether work recorded under `used` may still be queued on a stream cuhandle may touch.
fn still_running(streams: &ContextStreams, used: &StreamUse) -> bool {
    match used {
        StreamUse::Pooled(lease) => lease.stream.lease() == lease.number,
        StreamUse::User { raw, attachment } => streams.attachments.iter().any(|a| a.raw == *raw && a.number == *attachment),
        StreamUse::Legacy { .. } => true,
        StreamUse::Capture { .. } => false,
    }
}

/// Makes work queued on `waiter` from now on wait (on the GPU, not the host) until the work
/// queued so far under each of `uses` is done: an event recorded on each such stream and
/// `cuStreamWaitEvent`. Uses whose lease or attachment has ended are skipped (their work is
/// done), and so is `waiter` itself (its own order covers it). The context must be active.
///
/// # Safety
/// `waiter` is a live stream of `ctx` (the uses' streams are checked here).
pub unsafe fn order_after<'a>(ctx: &Context, waiter: CUstream, uses: impl IntoIterator<Item = &'a StreamUse>) -> Result<()> {
    // Held across the driver calls: a user stream's attachment cannot end (and the stream be
    // destroyed) between the check and the event record.
    let mut all = lock();
    let streams = of(&mut all, ctx);
    for used in uses {
        if used.raw() == waiter || !still_running(streams, used) {
            continue;
        }
        let event = spare_event(streams, ctx)?;
        let driver = ctx.driver();
        // SAFETY: the event and both streams belong to the active context; the used stream is
        // pooled (never destroyed), legacy, or a user stream a handle is attached to (checked
        // above under the lock that guards detaching).
        let recorded = ctx.noted(unsafe { driver.cuEventRecord(event, used.raw()) });
        // SAFETY: as above, and `waiter` is live (the caller's contract). The wait applies to the
        // event's state now; re-recording it later for
        // another wait does not change this one (cuStreamWaitEvent), so it can go back at once.
        let waited = recorded
            .and_then(|()| ctx.noted(unsafe { driver.cuStreamWaitEvent(waiter, event, CUevent_wait_flags::CU_EVENT_WAIT_DEFAULT as u32) }));
        streams.spare_events.push(event as usize);
        waited?;
    }
    Ok(())
}

/// Records, on each stream of `uses` that may still run work, an event the host can query, and
/// returns them (for pinned memory, whose reuse the host decides). Events go back with
/// [`give_back_events`]. The context must be active.
pub fn mark<'a>(ctx: &Context, uses: impl IntoIterator<Item = &'a StreamUse>) -> Result<Vec<usize>> {
    let mut all = lock();
    let streams = of(&mut all, ctx);
    let mut marks = Vec::new();
    for used in uses {
        if !still_running(streams, used) {
            continue;
        }
        let event = match spare_event(streams, ctx) {
            Ok(event) => event,
            Err(e) => {
                streams.spare_events.extend(marks);
                return Err(e);
            }
        };
        // SAFETY: as in `order_after`.
        if let Err(e) = ctx.noted(unsafe { ctx.driver().cuEventRecord(event, used.raw()) }) {
            streams.spare_events.push(event as usize);
            streams.spare_events.extend(marks);
            return Err(e);
        }
        marks.push(event as usize);
    }
    Ok(marks)
}

/// Returns events from [`mark`] once they are no longer needed.
pub fn give_back_events(ctx: &Context, events: Vec<usize>) {
    of(&mut lock(), ctx).spare_events.extend(events);
}

/// A spare ordering event of the context, or a new one. The context must be active.
fn spare_event(streams: &mut ContextStreams, ctx: &Context) -> Result<CUevent> {
    match streams.spare_events.pop() {
        Some(event) => Ok(event as CUevent),
        None => new_event(ctx),
    }
}

fn new_event(ctx: &Context) -> Result<CUevent> {
    let mut event = std::ptr::null_mut();
    // SAFETY: the out-pointer is a valid local; the context is active (callers' contract).
    ctx.noted(unsafe { ctx.driver().cuEventCreate(&mut event, CU_EVENT_DISABLE_TIMING) })?;
    Ok(event)
}

/// A pooled stream of `ctx` that no handle leases, for frees whose home stream cannot take them
/// (a user stream nobody is attached to any more). Made on first use and kept. The context must
/// be active.
pub fn release_stream(ctx: &Context) -> Result<Arc<PooledStream>> {
    let mut all = lock();
    let streams = of(&mut all, ctx);
    if let Some(stream) = &streams.release {
        return Ok(Arc::clone(stream));
    }
    let stream = Arc::new(PooledStream { raw: create_stream(ctx)?, lease: AtomicU64::new(1) });
    streams.release = Some(Arc::clone(&stream));
    Ok(stream)
}

/// Waits on the host until the work queued so far under each of `uses` (streams of `ctx`) is
/// done. Uses whose lease or attachment ended are done already; a context that is gone took its
/// work with it.
pub fn wait_for(ctx: &Context, uses: &[StreamUse]) {
    let Ok(_scope) = ctx.activate() else { return };
    match mark(ctx, uses) {
        Ok(marks) => {
            for &event in &marks {
                // SAFETY: an event of the active context, just recorded by `mark`.
                if let Err(e) = unsafe { ctx.driver().cuEventSynchronize(event as CUevent) } {
                    log::debug!("waiting for work on a stream: {e}");
                }
            }
            give_back_events(ctx, marks);
        }
        Err(e) => log::warn!("waiting for work on a stream failed: {e}"),
    }
}

/// Whether work under `used` (a pooled lease or a user-stream attachment of `ctx`) may still run;
/// false for the legacy stream, whose handle synchronised it when it closed.
pub(crate) fn still_running_in(ctx: &Context, used: &StreamUse) -> bool {
    match used {
        StreamUse::Legacy { .. } | StreamUse::Capture { .. } => false,
        _ => still_running(of(&mut lock(), ctx), used),
    }
}

/// Destroys the streams and events kept for `ctx`, which is about to be destroyed itself (an SM
/// partition's: destroying a green context leaves its streams behind, detached), and forgets them.
/// No handle of `ctx` is left, so none of its streams is leased. The context is active.
pub fn release_context(ctx: &Context) {
    let kept = {
        let mut all = lock();
        let Some(index) = all.iter().position(|c| c.context_id == ctx.id()) else { return };
        all.swap_remove(index)
    };
    let driver = ctx.driver();
    let streams = kept.free.iter().map(|s| s.raw).chain(kept.spare_capture.iter().copied()).chain(kept.release.iter().map(|s| s.raw));
    for stream in streams {
        // SAFETY: a stream cuhandle created in `ctx`, idle (no lease, no capture), destroyed once.
        if let Err(e) = unsafe { driver.cuStreamDestroy(stream as CUstream) } {
            log::debug!("destroying a stream of a context that ends: {e}");
        }
    }
    for event in kept.spare_events {
        // SAFETY: an ordering event cuhandle created in `ctx`, not in use (it is spare), destroyed once.
        if let Err(e) = unsafe { driver.cuEventDestroy(event as CUevent) } {
            log::debug!("destroying an event of a context that ends: {e}");
        }
    }
}

/// Forgets what was kept for a context id that no longer exists (a primary context that went
/// inactive when the last retain was released): its streams and events went with it.
pub fn forget(context_id: u64) {
    lock().retain(|c| c.context_id != context_id);
}

/// Whether anything is kept for context id `context_id` (see [`forget`]).
pub fn kept_for(context_id: u64) -> bool {
    lock().iter().any(|c| c.context_id == context_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pooled(raw: usize, lease: u64) -> StreamUse {
        let stream = Arc::new(PooledStream::for_test(raw, lease));
        StreamUse::Pooled(Lease { stream, number: lease })
    }

    #[test]
    fn a_use_is_the_same_only_under_the_same_lease_or_attachment() {
        let a = pooled(0x100, 1);
        let StreamUse::Pooled(lease) = &a else { unreachable!() };
        let a_again = StreamUse::Pooled(lease.clone());
        let a_later = StreamUse::Pooled(Lease { stream: Arc::clone(&lease.stream), number: 2 });
        assert!(a.same_use(&a_again));
        assert!(a.same_stream(&a_later) && !a.same_use(&a_later));
        let user = StreamUse::User { raw: 0x100, attachment: 7 };
        assert!(user.same_stream(&a) && !user.same_use(&a));
        assert!(user.same_use(&StreamUse::User { raw: 0x100, attachment: 7 }));
        assert!(!user.same_use(&StreamUse::User { raw: 0x100, attachment: 8 }));
        assert!(StreamUse::Capture { raw: 5 }.is_capture() && !user.is_capture());
    }

    #[test]
    fn only_current_leases_and_attachments_still_run() {
        let mut streams = ContextStreams {
            context_id: 1,
            free: Vec::new(),
            spare_capture: Vec::new(),
            attachments: vec![Attachment { raw: 0x200, handles: 1, number: 3 }],
            spare_events: Vec::new(),
            release: None,
        };
        let current = pooled(0x100, 1);
        assert!(still_running(&streams, &current));
        let StreamUse::Pooled(lease) = &current else { unreachable!() };
        lease.stream.lease.fetch_add(1, Ordering::AcqRel); // given back: the holder synchronised
        assert!(!still_running(&streams, &current));
        assert!(still_running(&streams, &StreamUse::User { raw: 0x200, attachment: 3 }));
        assert!(!still_running(&streams, &StreamUse::User { raw: 0x200, attachment: 2 }), "an older attachment ended with a detach");
        streams.attachments.clear();
        assert!(!still_running(&streams, &StreamUse::User { raw: 0x200, attachment: 3 }));
        assert!(still_running(&streams, &StreamUse::Legacy { raw: 0 }));
        assert!(!still_running(&streams, &StreamUse::Capture { raw: 9 }));
    }
}
