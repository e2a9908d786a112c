//! `dev.cuhandle.NativeApi`: kernel launches, the hottest entry (beside `core/launch.rs`). The
//! launch arguments arrive as addresses inside the Java `KernelLaunch`'s direct buffer, which it
//! keeps reachable and unchanged for the call, so the path allocates nothing.

use crate::core::driver::launch_config::LaunchShape;
use crate::core::error::{self, Error};
use crate::core::launch;
use crate::core::streams::StreamUse;
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{BufferPtr, HandlePtr, LibraryPtr, Ptr};
use jni::objects::JClass;
use jni::sys::{jboolean, jint, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn kernel_max_cluster_size(h: HandlePtr, function: jlong, gx: jint, gy: jint, gz: jint, bx: jint, by: jint, bz: jint, shared_bytes: jint, non_portable_allowed: jboolean) -> jint),
    native!(
        static raw fn launch(
            h: HandlePtr, function: jlong, gx: jint, gy: jint, gz: jint, bx: jint, by: jint, bz: jint, shared_bytes: jint, params: jlong, arg_count: jint,
            cooperative: jboolean, cluster_x: jint, cluster_y: jint, cluster_z: jint, memory: jlong, memory_count: jint, library: LibraryPtr
        )
    ),
];

/// Grid, block and dynamic shared memory as Java passes them (checked there), without launch
/// attributes; user kernels are never dependent launches (they need not wait with
/// griddepcontrol.wait).
pub(crate) fn plain_shape(grid: [jint; 3], block: [jint; 3], shared: jint) -> LaunchShape {
    LaunchShape { grid: grid.map(|v| v as u32), block: block.map(|v| v as u32), shared_bytes: shared as u32, ..LaunchShape::linear(1, 1) }
}

/// The most blocks per cluster of `function` with this configuration; -1 where the driver cannot say.
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn kernel_max_cluster_size(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    function: jlong,
    gx: jint,
    gy: jint,
    gz: jint,
    bx: jint,
    by: jint,
    bz: jint,
    shared: jint,
    non_portable_allowed: jboolean,
) -> jint {
    entry!(env, |_e| {
        let shape = plain_shape([gx, gy, gz], [bx, by, bz], shared);
        Ok(launch::max_cluster_size(h.get()?, function as _, &shape, non_portable_allowed)?
            .map_or(-1, |blocks| blocks.min(i32::MAX as u32) as jint))
    })
}

#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn launch(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
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
    cooperative: jboolean,
    cx: jint,
    cy: jint,
    cz: jint,
    memory: jlong,
    memory_count: jint,
    lib: LibraryPtr,
) {
    entry!(env, |_e| {
        let (handle, library) = (h.get()?, lib.get()?);
        let shape =
            LaunchShape { cooperative, cluster: [cx as u32, cy as u32, cz as u32], ..plain_shape([gx, gy, gz], [bx, by, bz], shared) };
        // SAFETY: `memory` is the address of `memory_count` native DeviceMemory pointers in the
        // Java launch object's direct buffer: the buffer arguments, each entered (held open) by
        // the Java caller for the call; KernelLaunch writes the list before the call and not
        // during it.
        let buffers: &[BufferPtr] = unsafe { Ptr::list(memory, memory_count, launch::MAX_KERNEL_ARGS)? };
        let before_queuing = |on: &StreamUse| -> error::Result<()> {
            library.uses().note(handle.context(), on);
            for buffer in buffers {
                let buffer = buffer.get().map_err(|_| Error::invalid_state("a buffer argument is not a live device buffer"))?;
                buffer.before_use(on)?;
            }
            Ok(())
        };
        // SAFETY: `params` is the address of the pointer array in the Java launch object's direct
        // buffer: each of its first `arg_count` entries points at that argument's bytes inside the
        // same buffer (KernelLaunch writes them), which stays reachable during the call; `function`
        // is the kernel's function in this handle's context (Kernel.java keeps it per context id)
        // and its library is open (checked in Java).
        unsafe {
            launch::launch(handle, function as _, shape, params as *mut *mut std::ffi::c_void, arg_count.max(0) as usize, before_queuing)?
        };
        Ok(())
    })
}
