//! CUDA graphs of a handle's calls, recorded by stream capture and replayed with one launch.
//!
//! Capture never runs on the handle's own stream: frees of memory allocated on that stream go to
//! it in stream order (from the cleaner thread too), and the user may have set a stream that
//! other code uses. `begin_capture` takes a private capture stream of the context (`streams`),
//! routes the handle's calls to it, and `end_capture` / `abort_capture` route them back. Nothing
//! ever executes on the private stream, so it need not wait for the handle's stream first: a
//! replay (`Graph::launch`) runs on the replaying handle's stream, in order with its other work,
//! and notes the memory it uses on that stream (rules L3, L7), as any call does.
//!
//! Mode `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL`: while this thread captures, the driver refuses
//! this thread's "potentially unsafe" calls (synchronisations, `cuMemFree`), a backstop for raw
//! driver calls cuhandle cannot see. Other threads stay unaffected, which a library needs: the
//! cleaner thread or other handles may free memory at any time, and under the GLOBAL mode even
//! their stream-ordered frees could fail and invalidate the capture. RELAXED would drop the
//! backstop.

use crate::core::blas;
use crate::core::context::Context;
use crate::core::error::{Error, Result};
use crate::core::handle::{Attachment, Handle};
use crate::core::memory::device::DeviceMemory;
use crate::core::memory::pinned::PinnedMemory;
use crate::core::streams;
use crate::core::uses::UseLog;
use cudarc::driver::sys::{CUgraph, CUgraphExec, CUstream, CUstreamCaptureMode, CUstreamCaptureStatus};
use std::sync::{Arc, Mutex, MutexGuard};

/// `CU_STREAM_CAPTURE_MODE_THREAD_LOCAL` (see the module comment).
const CAPTURE_MODE_THREAD_LOCAL: i32 = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL as i32;

/// What a running capture must restore: the private stream and the stream the handle used before.
pub(crate) struct Capture {
    pub(crate) stream: usize,
    previous: usize,
    /// The conditional bodies being captured (`graph_conditional`), innermost last.
    pub(crate) bodies: Vec<Body>,
}

/// A conditional node's body being captured: its private stream, which the handle's calls go to,
/// and the stream they went to before (the capture's, or an enclosing body's).
pub(crate) struct Body {
    pub(crate) stream: usize,
    pub(crate) previous: usize,
}

impl Capture {
    /// The stream the capture records on now: the innermost body's, else its own.
    pub(crate) fn recording_stream(&self) -> CUstream {
        self.bodies.last().map_or(self.stream, |b| b.stream) as CUstream
    }
}

/// The capture state of one handle, attached to it on its first capture.
#[derive(Default)]
struct CaptureSlot(Mutex<Option<Capture>>);

impl Attachment for CaptureSlot {
    /// A capture still open when the handle closes (the Java side ends every capture, so only
    /// after a failure there) is ended, so that its private stream does not stay capturing.
    fn closing(&self, handle: &Handle) {
        if matches!(self.0.lock().map(|c| c.is_some()), Ok(true)) {
            if let Err(e) = abort_capture(handle) {
                log::warn!("closing a handle: ending its graph capture failed: {e}");
            }
        }
    }
}

/// The handle's capture state, locked.
pub(crate) fn capture_slot(handle: &Handle) -> Result<MutexGuard<'_, Option<Capture>>> {
    let slot = handle.attachment(|| Ok(CaptureSlot::default()))?;
    slot.0.lock().map_err(|_| Error::invalid_state("handle capture lock poisoned"))
}

/// An instantiated graph in one context, with the template it was instantiated from. The
/// executable graph does not depend on the template, but its nodes are named by the template's
/// (`cuGraphExecKernelNodeSetParams` takes a node of "the graph from which graphExec was
/// instantiated"), so the template lives as long as the graph for updates (`graph_node`).
pub struct Graph {
    exec: CUgraphExec,
    template: CUgraph,
    ctx: Arc<Context>,
    nodes: usize,
}

// SAFETY: executable graphs are driver handles usable from any thread; the driver
// orders concurrent launches of one executable graph.
unsafe impl Send for Graph {}
// SAFETY: as above.
unsafe impl Sync for Graph {}

/// Starts capturing the handle's calls (the caller refuses other threads' calls meanwhile).
pub fn begin_capture(handle: &Handle) -> Result<()> {
    let _scope = handle.activate()?;
    let mut slot = capture_slot(handle)?;
    if slot.is_some() {
        return Err(Error::invalid_state("the handle is already capturing a graph"));
    }
    blas::prepare_for_capture(handle)?;
    let ctx = handle.context();
    let stream = streams::take_capture(ctx)?;
    // SAFETY: a live stream of the active context; the mode is a valid CUstreamCaptureMode.
    if let Err(e) = ctx.noted(unsafe { ctx.driver().cuStreamBeginCapture(stream, CAPTURE_MODE_THREAD_LOCAL) }) {
        streams::give_back_capture(ctx, stream);
        return Err(e);
    }
    let previous = handle.begin_capture_stream(stream as usize);
    *slot = Some(Capture { stream: stream as usize, previous, bodies: Vec::new() });
    Ok(())
}

/// Ends the capture and instantiates the graph. On failure the partial graph is destroyed; either
/// way the handle's calls go to its previous stream again.
pub fn end_capture(handle: &Handle) -> Result<Graph> {
    let (ctx, graph) = finish(handle)?;
    let graph = graph?;
    let instantiated = instantiate(handle, &ctx, graph);
    if instantiated.is_err() {
        destroy_template(&ctx, graph);
    }
    instantiated
}

/// The executable form of `graph`, a template captured in `ctx` (the handle's context).
fn instantiate(handle: &Handle, ctx: &Arc<Context>, graph: CUgraph) -> Result<Graph> {
    // cuGraphInstantiate needs the context current (INVALID_CONTEXT otherwise, seen on driver 580).
    let _scope = handle.activate()?;
    let driver = ctx.driver();
    let mut nodes = 0usize;
    // SAFETY: a null node array asks for the count only; the out-pointer is valid; `graph` came
    // from cuStreamEndCapture and is not destroyed yet.
    ctx.noted(unsafe { driver.cuGraphGetNodes(graph, std::ptr::null_mut(), &mut nodes) })?;
    let mut exec = std::ptr::null_mut();
    // SAFETY: out-pointer valid; `graph` came from cuStreamEndCapture in this context, now active.
    ctx.noted(unsafe { driver.cuGraphInstantiateWithFlags(&mut exec, graph, 0) })?;
    Ok(Graph { exec, template: graph, ctx: Arc::clone(ctx), nodes })
}

/// Ends a capture whose work failed: destroys whatever was recorded and restores the stream.
pub fn abort_capture(handle: &Handle) -> Result<()> {
    let (ctx, graph) = finish(handle)?;
    if let Ok(graph) = graph {
        destroy_template(&ctx, graph);
    }
    Ok(())
}

/// The private stream the handle's running capture records on now (a conditional body's inside one).
pub(crate) fn capture_stream(handle: &Handle) -> Result<CUstream> {
    let slot = capture_slot(handle)?;
    let capture = slot.as_ref().ok_or_else(|| Error::invalid_state("the handle is not capturing a graph"))?;
    Ok(capture.recording_stream())
}

/// Ends the driver's capture on a private stream and gives the stream back if it stopped capturing;
/// whether it ended, and the graph it returned (null or not, also on failure).
pub(crate) fn end_stream_capture(ctx: &Arc<Context>, stream: CUstream) -> (Result<()>, CUgraph) {
    let driver = ctx.driver();
    let mut graph = std::ptr::null_mut();
    // SAFETY: a private capture stream of this context, which is active; out-pointer valid.
    let ended = ctx.noted(unsafe { driver.cuStreamEndCapture(stream, &mut graph) });
    let mut status = 0;
    // SAFETY: as above. Not capturing (CU_STREAM_CAPTURE_STATUS_NONE): safe to reuse the stream.
    let idle = unsafe { driver.cuStreamIsCapturing(stream, &mut status) }.is_ok()
        && status == CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE as i32;
    if idle {
        streams::give_back_capture(ctx, stream);
    } else {
        log::warn!("a capture stream is still capturing after cuStreamEndCapture; it is not reused");
    }
    (ended, graph)
}

/// Ends the driver's capture and restores the handle's stream; the outer error is about the
/// handle (not capturing, context gone), the inner one about the capture (invalidated, say).
fn finish(handle: &Handle) -> Result<(Arc<Context>, Result<CUgraph>)> {
    let _scope = handle.activate()?;
    let mut capture = capture_slot(handle)?.take().ok_or_else(|| Error::invalid_state("the handle is not capturing a graph"))?;
    let ctx = Arc::clone(handle.context());
    // Bodies still open (the Java side ends each; only after a failure there): their graphs belong
    // to their conditional nodes, which the capture's graph destroys with it.
    while let Some(body) = capture.bodies.pop() {
        if let (Err(e), _) = end_stream_capture(&ctx, body.stream as CUstream) {
            log::warn!("ending a conditional body's capture: {e}");
        }
    }
    handle.end_capture_stream(capture.previous);
    let graph = match end_stream_capture(&ctx, capture.stream as CUstream) {
        (Ok(()), graph) if graph.is_null() => Err(Error::invalid_state("cuStreamEndCapture returned no graph")),
        (Ok(()), graph) => Ok(graph),
        (Err(e), graph) => {
            if !graph.is_null() {
                destroy_template(&ctx, graph);
            }
            Err(e)
        }
    };
    Ok((ctx, graph))
}

fn destroy_template(ctx: &Context, graph: CUgraph) {
    // SAFETY: a graph from cuStreamEndCapture, destroyed once: either never instantiated, or by the
    // Drop of its Graph after the executable one (which is independent of its template once
    // instantiated, cuGraphInstantiate).
    if let Err(e) = unsafe { ctx.driver().cuGraphDestroy(graph) } {
        log::warn!("{e}");
    }
}

impl Graph {
    /// Nodes in the captured graph (kernels, copies, memsets).
    pub fn node_count(&self) -> usize {
        self.nodes
    }

    pub fn context(&self) -> &Arc<Context> {
        &self.ctx
    }

    /// The executable graph, for the updates of its nodes (`graph_node`).
    pub(crate) fn exec(&self) -> CUgraphExec {
        self.exec
    }

    /// Refuses a handle of another context than the graph's: a graph replays and changes only there.
    pub(crate) fn check_context(&self, handle: &Handle) -> Result<()> {
        if handle.context().id() != self.ctx.id() {
            return Err(Error::invalid_argument(format!(
                "the graph was captured in context id {} but the handle is bound to context id {}; a graph replays only in its own context",
                self.ctx.id(),
                handle.context().id()
            )));
        }
        Ok(())
    }

    /// Replays the graph on `handle`'s current stream, after the work queued there before. The
    /// device and pinned memory and the libraries the recorded calls use (the caller holds them
    /// open) note the replay's stream, so that their release waits for it (rules L3, L7).
    pub fn launch(&self, handle: &Handle, buffers: &[&DeviceMemory], pinned: &[&PinnedMemory], libraries: &[&UseLog]) -> Result<()> {
        self.check_context(handle)?;
        let _scope = handle.activate()?;
        let queue = handle.queue()?;
        for buffer in buffers {
            buffer.before_use(&queue)?;
        }
        for memory in pinned {
            memory.note_replay(handle.context(), &queue);
        }
        for library in libraries {
            library.note(handle.context(), &queue);
        }
        // SAFETY: an executable graph of the active context and a stream of it.
        self.ctx.noted(unsafe { self.ctx.driver().cuGraphLaunch(self.exec, queue.raw()) })
    }
}

impl Drop for Graph {
    /// Destroys the graph without waiting: the driver frees an executable graph whose replays are
    /// still queued once they finish (`cuGraphExecDestroy`). Never fails: a dead context took the
    /// graph with it (H8).
    fn drop(&mut self) {
        match self.ctx.activate() {
            Ok(_scope) => {
                // SAFETY: created by us in this context, destroyed once (Drop runs once). Replays
                // still queued complete first: the driver defers the release ("if the executable
                // graph is in-flight, it will not be terminated, but rather freed asynchronously
                // on completion", cuGraphExecDestroy).
                if let Err(e) = unsafe { self.ctx.driver().cuGraphExecDestroy(self.exec) } {
                    log::warn!("{e}");
                }
                destroy_template(&self.ctx, self.template);
            }
            Err(e) => log::debug!("not destroying a graph: its context is gone ({e})"),
        }
    }
}
