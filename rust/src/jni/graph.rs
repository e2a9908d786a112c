//! `dev.cuhandle.NativeApi`: graph capture and replay. The Java `Handle` confines a capture to
//! one thread and ends it on every path; the Java `Graph` owns the graph pointer.

use crate::core::driver::conditional_node::ConditionalKind;
use crate::core::graph;
use crate::core::graph_conditional;
use crate::core::graph_node;
use crate::jni::entry::entry;
use crate::jni::launch;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{BufferPtr, GraphPtr, HandlePtr, Held, LibraryPtr, PinnedPtr, Ptr};
use crate::jni::raw::convert;
use crate::jni::throw::JniResult;
use jni::objects::{JClass, JLongArray};
use jni::sys::{jint, jlong};
use jni::{Env, EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn capture_begin(h: HandlePtr)),
    native!(static raw fn capture_end(h: HandlePtr) -> GraphPtr),
    native!(static raw fn capture_abort(h: HandlePtr)),
    native!(static raw fn graph_info(g: GraphPtr) -> jlong[]),
    native!(static raw fn graph_launch(g: GraphPtr, h: HandlePtr, buffers: jlong[], pinned: jlong[], libraries: jlong[])),
    native!(static raw fn graph_destroy(g: GraphPtr)),
    native!(static raw fn capture_last_node(h: HandlePtr) -> jlong),
    native!(static raw fn capture_create_condition(h: HandlePtr, default_value: jint) -> jlong),
    native!(static raw fn capture_begin_conditional(h: HandlePtr, kind: jint, condition: jlong)),
    native!(static raw fn capture_end_conditional(h: HandlePtr)),
    native!(
        static raw fn graph_set_kernel_node(
            g: GraphPtr, h: HandlePtr, node: jlong, function: jlong, gx: jint, gy: jint, gz: jint, bx: jint, by: jint, bz: jint, shared_bytes: jint,
            params: jlong, arg_count: jint
        )
    ),
];

fn capture_begin(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry!(env, |_e| Ok(graph::begin_capture(h.get()?)?))
}

fn capture_end(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) -> GraphPtr {
    entry!(env, |_e| Ok(GraphPtr::give(graph::end_capture(h.get()?)?)))
}

fn capture_abort(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry!(env, |_e| Ok(graph::abort_capture(h.get()?)?))
}

/// [context id, node count]
fn graph_info<'l>(env: EnvUnowned<'l>, _: JClass<'l>, g: GraphPtr) -> JLongArray<'l> {
    entry!(env, |e| {
        let graph = g.get()?;
        convert::long_array(e, &[graph.context().id() as i64, graph.node_count() as i64])
    })
}

/// The objects whose native pointers a Java `long[]` lists.
fn listed<T: Held>(env: &Env<'_>, array: &JLongArray<'_>) -> JniResult<Vec<Ptr<T>>> {
    let addresses = convert::read_longs(env, array)?;
    // SAFETY: the Java Graph lists the pointers of objects of this kind that it holds open
    // (entered) for the whole call.
    Ok(addresses.into_iter().map(|address| unsafe { Ptr::from_address(address) }).collect())
}

/// `buffers`, `pinned` and `libraries`: the native pointers of the device and pinned memory and
/// the libraries the graph's recorded calls use, each held open (entered) by the Java Graph for
/// the call.
fn graph_launch(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    g: GraphPtr,
    h: HandlePtr,
    buffers: JLongArray<'_>,
    pinned: JLongArray<'_>,
    libraries: JLongArray<'_>,
) {
    entry!(env, |e| {
        let (buffers, pinned, libraries): (Vec<BufferPtr>, Vec<PinnedPtr>, Vec<LibraryPtr>) =
            (listed(e, &buffers)?, listed(e, &pinned)?, listed(e, &libraries)?);
        let buffers = buffers.iter().map(Ptr::get).collect::<JniResult<Vec<_>>>()?;
        let pinned = pinned.iter().map(Ptr::get).collect::<JniResult<Vec<_>>>()?;
        let logs = libraries.iter().map(|l| l.get().map(|l| l.uses().as_ref())).collect::<JniResult<Vec<_>>>()?;
        Ok(g.get()?.launch(h.get()?, &buffers, &pinned, &logs)?)
    })
}

/// Called once per graph, after the last call in flight returned; `Graph`'s Drop destroys it
/// without waiting for queued replays.
fn graph_destroy(env: EnvUnowned<'_>, _: JClass<'_>, g: GraphPtr) {
    entry!(env, |_e| g.release())
}

/// The kernel node the handle's capture recorded last (the Java capture knows it is a launch).
fn capture_last_node(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) -> jlong {
    entry!(env, |_e| Ok(graph_node::last_captured_node(h.get()?)? as jlong))
}

/// New values for a kernel node of the graph, for the replays queued from now on.
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn graph_set_kernel_node(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    g: GraphPtr,
    h: HandlePtr,
    node: jlong,
    function: jlong,
    gx: jint,
    gy: jint,
    gz: jint,
    bx: jint,
    by: jint,
    bz: jint,
    shared: jint,
    params: jlong,
    arg_count: jint,
) {
    entry!(env, |_e| {
        let shape = launch::plain_shape([gx, gy, gz], [bx, by, bz], shared);
        // SAFETY: `node` is a kernel node of this graph's capture (the Java GraphNode, checked to
        // belong to this graph, holds it); `function` is its kernel's function in the handle's
        // context, the graph's (checked in Java and in `set_kernel_node`); `params` is the address of
        // the pointer array in the node's own launch object's direct buffer, each of its first
        // `arg_count` entries pointing at that argument's bytes in the same buffer, which the Java
        // caller keeps reachable and unchanged for the call.
        unsafe { g.get()?.set_kernel_node(h.get()?, node as usize, function as _, &shape, params as _, arg_count.max(0) as usize)? };
        Ok(())
    })
}

/// A new condition (`CUgraphConditionalHandle`) in the graph the handle's capture records into.
fn capture_create_condition(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, default_value: jint) -> jlong {
    entry!(env, |_e| Ok(graph_conditional::create_condition(h.get()?, default_value as u32)? as jlong))
}

/// Adds an IF (`kind` 0) or WHILE (1) node on `condition` to the handle's capture and records its
/// later calls into the node's body.
fn capture_begin_conditional(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, kind: jint, condition: jlong) {
    entry!(env, |_e| {
        let kind = match kind {
            0 => ConditionalKind::If,
            1 => ConditionalKind::While,
            other => {
                return Err(crate::core::error::Error::invalid_argument(format!(
                    "conditional kind {other} is neither IF (0) nor WHILE (1)"
                ))
                .into())
            }
        };
        Ok(graph_conditional::begin_body(h.get()?, kind, condition as u64)?)
    })
}

/// Ends the innermost conditional body's capture.
fn capture_end_conditional(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) {
    entry!(env, |_e| Ok(graph_conditional::end_body(h.get()?)?))
}
