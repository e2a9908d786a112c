//! `dev.cuhandle.NativeApi`: copies between Java arrays and device memory through the pinned
//! staging pipeline (`core::transfer`), one range per call (Java runs the ranges of a large
//! array on several threads).

use crate::core::error::Error;
use crate::core::transfer::{self, Plan};
use crate::jni::buffer::{pair, size};
use crate::jni::raw;
use crate::jni::throw::{entry, JniResult};
use jni::sys::{jboolean, jclass, jint, jlong, jobject};
use jni::EnvUnowned;

/// The value of `stream` that means "the handle's current stream".
const HANDLE_STREAM: jlong = -1;

/// How a range is chunked, from Java's plan (`dev.cuhandle.TransferPlan`).
struct PlanArgs {
    chunk_bytes: jlong,
    depth: jint,
    slot_bytes: jlong,
    max_idle_slots: jint,
}

impl PlanArgs {
    /// The plan, with the chunk cut to whole elements so that no region copy splits one.
    fn plan(&self, element_bytes: usize) -> JniResult<Plan> {
        let chunk = size(self.chunk_bytes, "the chunk size")?;
        let chunk = (chunk - chunk % element_bytes).max(element_bytes);
        Ok(Plan {
            chunk_bytes: chunk,
            depth: size(self.depth.into(), "the pipeline depth")?,
            slot_bytes: size(self.slot_bytes, "the staging slot size")?,
            max_idle_slots: size(self.max_idle_slots.into(), "the idle staging slots")?,
        })
    }
}

/// Copies `bytes` between array bytes `[array_offset, ...)` and the buffer at `offset`, through
/// pinned staging: the array is only touched by JNI region copies (bounded, no pinning), never
/// while the thread waits for the GPU, so the garbage collector is never held up (rule L4).
#[allow(clippy::too_many_arguments)]
fn array_copy(env: *mut jni::sys::JNIEnv, h: jlong, b: jlong, offset: jlong, array: jobject, type_code: jint, array_offset: jlong, bytes: jlong, upload: bool, stream: jlong, plan: PlanArgs, wait_for_device: bool) -> JniResult<()> {
    // SAFETY: live pointers held (entered) by the Java Handle and DeviceBuffer (module contract).
    let (handle, buffer) = unsafe { pair(h, b)? };
    let (offset, array_offset, bytes) = (size(offset, "the buffer offset")?, size(array_offset, "the array offset")?, size(bytes, "the length")?);
    if array.is_null() {
        return Err(Error::invalid_argument("the Java array is null").into());
    }
    // SAFETY: `env` is this thread's and `array` a live local reference (module contract).
    let region = unsafe { raw::ArrayRegion::new(env, array, type_code)? };
    if array_offset.checked_add(bytes).is_none_or(|end| end > region.bytes()) || array_offset % region.element_bytes() != 0 || bytes % region.element_bytes() != 0 {
        return Err(Error::invalid_argument(format!("byte range [{array_offset}, {array_offset}+{bytes}) is not whole elements inside the Java array of {} bytes", region.bytes())).into());
    }
    let plan = plan.plan(region.element_bytes())?;
    let _scope = handle.activate()?;
    // The ranges of one array copy all go to the stream the handle had when the copy began: the
    // Java caller holds the handle entered across them, so no stream switch can come between (a
    // switch waits for calls in flight), and the handle's queue is that stream.
    let queue = handle.queue()?;
    if stream != HANDLE_STREAM && queue.raw() as usize as jlong != stream {
        return Err(Error::invalid_state(format!("an array copy's ranges were meant for stream {stream:#x}, but the handle's stream is now {:p}", queue.raw())).into());
    }
    if upload {
        transfer::upload(buffer, offset, bytes, &queue, plan, wait_for_device, |done, piece| region.read(array_offset + done, piece))?;
    } else {
        transfer::download(buffer, offset, bytes, &queue, plan, |done, piece| region.write(array_offset + done, piece))?;
    }
    Ok(())
}

/// One range of an array copy (see `array_copy`); `stream` is a raw stream of the handle's
/// context from `handleStream`, or -1 for the handle's current stream.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_arrayCopy<'l>(
    mut env: EnvUnowned<'l>,
    _c: jclass,
    h: jlong,
    b: jlong,
    offset: jlong,
    array: jobject,
    type_code: jint,
    array_offset: jlong,
    bytes: jlong,
    upload: jboolean,
    stream: jlong,
    chunk_bytes: jlong,
    depth: jint,
    slot_bytes: jlong,
    max_idle_slots: jint,
    wait_for_device: jboolean,
) {
    let plan = PlanArgs { chunk_bytes, depth, slot_bytes, max_idle_slots };
    entry!(env, |e| array_copy(e.get_raw(), h, b, offset, array, type_code, array_offset, bytes, upload, stream, plan, wait_for_device))
}
