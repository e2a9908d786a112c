//! `dev.cuhandle.NativeApi`: graph capture and replay. The Java `Handle` confines a capture to
//! one thread and ends it on every path; the Java `Graph` owns the graph pointer.

use crate::core::graph::{self, Graph};
use crate::core::handle::Handle;
use crate::core::memory::pinned::PinnedMemory;
use crate::core::library::Library;
use crate::core::memory::DeviceMemory;
use crate::jni::raw::{self, convert};
use crate::jni::throw::{entry, JniResult};
use jni::sys::{jclass, jlong, jlongArray};
use jni::EnvUnowned;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_captureBegin<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong) {
    // SAFETY: live handle pointer held by a Java Handle.
    entry!(env, |_e| Ok(graph::begin_capture(unsafe { raw::borrow::<Handle>(h, "handle")? })?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_captureEnd<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held by a Java Handle.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        Ok(raw::give(graph::end_capture(handle)?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_captureAbort<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong) {
    // SAFETY: live handle pointer held by a Java Handle.
    entry!(env, |_e| Ok(graph::abort_capture(unsafe { raw::borrow::<Handle>(h, "handle")? })?))
}

/// [context id, node count]
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_graphInfo<'l>(mut env: EnvUnowned<'l>, _c: jclass, g: jlong) -> jni::sys::jobject {
    entry!(env, |e| {
        // SAFETY: live graph pointer held by a Java Graph.
        let graph = unsafe { raw::borrow::<Graph>(g, "graph")? };
        raw::convert::long_array(e.get_raw(), &[graph.context().id() as i64, graph.node_count() as i64])
    })
}

/// `buffers` and `pinned`: the native pointers of the device and pinned memory the graph's
/// recorded calls use, each held open (entered) by the Java Graph for the call.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_graphLaunch<'l>(mut env: EnvUnowned<'l>, _c: jclass, g: jlong, h: jlong, buffers: jlongArray, pinned: jlongArray, libraries: jlongArray) {
    entry!(env, |e| {
        // SAFETY: live pointers held by a Java Graph and a Java Handle.
        let (graph, handle) = unsafe { (raw::borrow::<Graph>(g, "graph")?, raw::borrow::<Handle>(h, "handle")?) };
        let (buffers, pinned, libraries) = (convert::read_longs(e.get_raw(), buffers)?, convert::read_longs(e.get_raw(), pinned)?, convert::read_longs(e.get_raw(), libraries)?);
        // SAFETY: each pointer is held open by the Java Graph for this call (see above).
        let buffers = buffers.iter().map(|&b| unsafe { raw::borrow::<DeviceMemory>(b, "device buffer") }).collect::<JniResult<Vec<_>>>()?;
        // SAFETY: as above.
        let pinned = pinned.iter().map(|&p| unsafe { raw::borrow::<PinnedMemory>(p, "host buffer") }).collect::<JniResult<Vec<_>>>()?;
        // SAFETY: as above.
        let libraries = libraries.iter().map(|&l| unsafe { raw::borrow::<Library>(l, "library") }).collect::<JniResult<Vec<_>>>()?;
        let logs: Vec<_> = libraries.iter().map(|l| l.uses().as_ref()).collect();
        Ok(graph.launch(handle, &buffers, &pinned, &logs)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_graphDestroy<'l>(mut env: EnvUnowned<'l>, _c: jclass, g: jlong) {
    entry!(env, |_e| {
        // SAFETY: Java calls this once per graph, after the last call in flight returned.
        if let Some(graph) = unsafe { raw::take::<Graph>(g) } {
            graph.destroy();
        }
        Ok(())
    })
}
