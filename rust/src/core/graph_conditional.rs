//! Conditional nodes in a captured graph (CUDA 12.4+): an IF or WHILE node added to the capture's
//! graph after the work recorded so far (`cuGraphAddNode`), whose body the handle's calls are then
//! recorded into (`cuStreamBeginCaptureToGraph` on a second private stream), until `end_body`
//! routes them back. The condition is a `CUgraphConditionalHandle` that kernels set on the GPU
//! (`cudaGraphSetConditional`, the Java side's built-in setter kernel); every launch of the graph
//! starts it at its default value (`CU_GRAPH_COND_ASSIGN_DEFAULT`).
//!
//! Why CUDA 12.4 although the entry points arrived in 12.3: 12.4 is the first release whose
//! conditional nodes may be added to a graph under stream capture and whose WHILE bodies may hold
//! the kernel, memset and copy nodes a capture records; the feature is offered from there, and a
//! driver below it is refused with the version it needs.

use crate::core::driver::conditional_node::{ConditionalKind, ConditionalNodeParams, COND_ASSIGN_DEFAULT};
use crate::core::driver::version_string;
use crate::core::error::{Error, Result, CUDA_ERROR_NOT_SUPPORTED};
use crate::core::graph::{self, Body};
use crate::core::handle::Handle;
use crate::core::streams;
use cudarc::driver::sys::{CUgraph, CUgraphNode, CUstream, CUstreamCaptureMode, CUstreamCaptureStatus};

/// The first driver offered conditional nodes (see the module comment).
pub const CONDITIONAL_NODES_SINCE: i32 = 12040;
/// `CU_STREAM_SET_CAPTURE_DEPENDENCIES`.
const SET_CAPTURE_DEPENDENCIES: u32 = 1;
const CAPTURE_ACTIVE: i32 = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE as i32;
const CAPTURE_MODE_THREAD_LOCAL: i32 = CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL as i32;

/// Refuses a driver without conditional nodes, naming the version needed and the one loaded.
pub fn check_supported(handle: &Handle) -> Result<()> {
    let driver = handle.context().driver();
    if driver.version < CONDITIONAL_NODES_SINCE {
        return Err(Error::cuda(
            CUDA_ERROR_NOT_SUPPORTED,
            "conditional graph nodes",
            format!(
                "conditional graph nodes (IF, WHILE) need a driver of CUDA {} or newer; the driver {} is CUDA {}: update the NVIDIA driver",
                version_string(CONDITIONAL_NODES_SINCE),
                driver.path,
                version_string(driver.version)
            ),
        ));
    }
    Ok(())
}

/// The graph the handle's capture records into now (a body's, inside one), its stream, and the
/// nodes the next recorded work will depend on (the driver's array, valid until the next call on
/// the stream).
fn recording_graph(handle: &Handle, recording: CUstream) -> Result<(CUgraph, *const CUgraphNode, usize)> {
    let ctx = handle.context();
    let (mut status, mut id, mut graph, mut dependencies, mut count) = (0, 0u64, std::ptr::null_mut(), std::ptr::null(), 0usize);
    // SAFETY: the capture's stream in the active context; every out-pointer is a valid local.
    ctx.noted(unsafe { ctx.driver().cuStreamGetCaptureInfo(recording, &mut status, &mut id, &mut graph, &mut dependencies, &mut count) })?;
    if status != CAPTURE_ACTIVE || graph.is_null() {
        return Err(Error::invalid_state("the capture was invalidated by an earlier call; its graph will fail to end"));
    }
    Ok((graph, dependencies, count))
}

/// A new condition in the graph the handle's capture records into now, which each launch of the
/// graph starts at `default_value`; the setter kernel and the conditional node take its handle.
pub fn create_condition(handle: &Handle, default_value: u32) -> Result<u64> {
    check_supported(handle)?;
    let _scope = handle.activate()?;
    let ctx = handle.context();
    let recording = graph::capture_stream(handle)?;
    let (graph, _, _) = recording_graph(handle, recording)?;
    let mut condition = 0u64;
    // SAFETY: `graph` is the capture's graph, alive while it captures; the context is the active one.
    ctx.noted(unsafe {
        ctx.driver().cuGraphConditionalHandleCreate(&mut condition, graph, ctx.raw(), default_value, COND_ASSIGN_DEFAULT)
    })?;
    Ok(condition)
}

/// Adds a conditional node of `kind` on `condition` (from `create_condition`) after the work the
/// handle's capture recorded so far, and records the handle's later calls into the node's body
/// until `end_body`.
pub fn begin_body(handle: &Handle, kind: ConditionalKind, condition: u64) -> Result<()> {
    check_supported(handle)?;
    let _scope = handle.activate()?;
    let ctx = handle.context();
    let driver = ctx.driver();
    let mut slot = graph::capture_slot(handle)?;
    let capture = slot.as_mut().ok_or_else(|| Error::invalid_state("the handle is not capturing a graph"))?;
    let recording = capture.recording_stream();
    let (graph, dependencies, count) = recording_graph(handle, recording)?;
    let mut params = ConditionalNodeParams::new(condition, kind, ctx.raw());
    let mut node = std::ptr::null_mut();
    // SAFETY: `dependencies` is the driver's array of `count` nodes of `graph`, valid until the next
    // call on the stream (none came between); `params` is a valid conditional node description.
    ctx.noted(unsafe { driver.cuGraphAddNode(&mut node, graph, dependencies, count, &mut params) })?;
    let body = params.body();
    if body.is_null() {
        return Err(Error::invalid_state("cuGraphAddNode returned no body graph for the conditional node"));
    }
    // SAFETY: the capture's stream; `node` is the node just added to its graph.
    ctx.noted(unsafe { driver.cuStreamUpdateCaptureDependencies(recording, &mut node, 1, SET_CAPTURE_DEPENDENCIES) })?;
    let stream = streams::take_capture(ctx)?;
    // SAFETY: a private stream of the active context, not capturing; `body` is the node's body graph,
    // which lives as long as the capture's graph; no dependencies.
    let begun = ctx.noted(unsafe {
        driver.cuStreamBeginCaptureToGraph(stream, body, std::ptr::null(), std::ptr::null(), 0, CAPTURE_MODE_THREAD_LOCAL)
    });
    if let Err(e) = begun {
        streams::give_back_capture(ctx, stream);
        return Err(e);
    }
    let previous = handle.switch_capture_stream(stream as usize);
    capture.bodies.push(Body { stream: stream as usize, previous });
    Ok(())
}

/// Ends the innermost body's capture and records the handle's later calls where they went before
/// (after the conditional node).
pub fn end_body(handle: &Handle) -> Result<()> {
    let _scope = handle.activate()?;
    let mut slot = graph::capture_slot(handle)?;
    let capture = slot.as_mut().ok_or_else(|| Error::invalid_state("the handle is not capturing a graph"))?;
    let body = capture.bodies.pop().ok_or_else(|| Error::invalid_state("no conditional body is being captured"))?;
    handle.switch_capture_stream(body.previous);
    // The body graph belongs to its node: never destroyed here.
    graph::end_stream_capture(handle.context(), body.stream as _).0
}
