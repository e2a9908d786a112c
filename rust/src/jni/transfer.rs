//! `dev.cuhandle.NativeApi`: copies between Java arrays and device memory through the pinned
//! staging pipeline (`core::transfer`), one range per call (Java runs the ranges of a large
//! array on several threads).

use crate::core::error::Error;
use crate::core::handle::{Handle, Queue};
use crate::core::transfer::{self, Plan};
use crate::jni::buffer::{pair, size};
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{BufferPtr, HandlePtr};
use crate::jni::raw;
use crate::jni::throw::JniResult;
use jni::objects::{JClass, JObject};
use jni::sys::{jboolean, jint, jlong};
use jni::{Env, EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[native!(
    static raw fn array_copy(
        h: HandlePtr, b: BufferPtr, offset: jlong, array: JObject, type_code: jint, array_offset: jlong, bytes: jlong, upload: jboolean,
        stream: jlong, chunk_bytes: jlong, depth: jint, slot_bytes: jlong, idle_slots: jint, wait_for_device: jboolean, critical_copy: jboolean
    )
)];

/// The value of `stream` that means "the handle's current stream".
pub(crate) const HANDLE_STREAM: jlong = -1;

/// One range of an array copy as Java describes it: where in the buffer and the array, which way
/// (`upload`: to the device, which returns once the array may change again, or, with
/// `wait_for_device`, once the bytes are on the device), and the stream the copy's ranges go to
/// (`HANDLE_STREAM`, or a raw stream from `handleStream`).
struct Range {
    offset: jlong,
    type_code: jint,
    array_offset: jlong,
    bytes: jlong,
    upload: bool,
    wait_for_device: bool,
    stream: jlong,
}

/// How a range is chunked, from Java's plan (`dev.cuhandle.TransferPlan`).
pub(crate) struct PlanArgs {
    pub(crate) chunk_bytes: jlong,
    pub(crate) depth: jint,
    pub(crate) slot_bytes: jlong,
    pub(crate) max_idle_slots: jint,
    /// Chunks copied with `memcpy` in a critical region instead of JNI region copies (`raw::ArrayRegion`).
    pub(crate) critical_copy: bool,
}

impl PlanArgs {
    /// The plan, with the chunk cut to whole elements so that no region copy splits one.
    pub(crate) fn plan(&self, element_bytes: usize) -> JniResult<Plan> {
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

/// Copies a range between a Java array and the buffer through pinned staging: the array is only
/// touched by bounded copies of one chunk (JNI region copies, or a memcpy in a critical region
/// held for that copy alone), never while the thread waits for the GPU, so the garbage collector is
/// never held up behind GPU work (rule L4).
fn copy_range(env: &Env<'_>, (h, b): (HandlePtr, BufferPtr), array: &JObject<'_>, range: Range, plan: PlanArgs) -> JniResult<()> {
    let (handle, buffer) = pair(&h, &b)?;
    let (offset, array_offset, bytes) =
        (size(range.offset, "the buffer offset")?, size(range.array_offset, "the array offset")?, size(range.bytes, "the length")?);
    if array.is_null() {
        return Err(Error::invalid_argument("the Java array is null").into());
    }
    // SAFETY: `env` is this thread's and `array` a live local reference to a primitive array of
    // the type `type_code` names (ArrayTransfers passes them together).
    let region = unsafe { raw::ArrayRegion::new(env.get_raw(), array.as_raw(), range.type_code, plan.critical_copy)? };
    let element = region.element_bytes();
    if array_offset.checked_add(bytes).is_none_or(|end| end > region.bytes())
        || !array_offset.is_multiple_of(element)
        || !bytes.is_multiple_of(element)
    {
        return Err(Error::invalid_argument(format!(
            "byte range [{array_offset}, {array_offset}+{bytes}) is not whole elements inside the Java array of {} bytes",
            region.bytes()
        ))
        .into());
    }
    let plan = plan.plan(element)?;
    let _scope = handle.activate()?;
    let queue = queue_of(handle, range.stream, "an array copy's ranges were")?;
    if range.upload {
        transfer::upload(buffer, offset, bytes, &queue, plan, range.wait_for_device, |done, piece| {
            region.read(array_offset + done, piece)
        })?;
    } else {
        transfer::download(buffer, offset, bytes, &queue, plan, |done, piece| region.write(array_offset + done, piece))?;
    }
    Ok(())
}

/// The handle's queue, which must be `stream` unless that is `HANDLE_STREAM`: the ranges of one
/// array copy (or an asynchronous copy) all go to the stream the handle had when the copy began.
/// The Java caller holds the handle entered across them, so no stream switch can come between (a
/// switch waits for calls in flight), and the handle's queue is that stream. `what` begins the
/// message otherwise ("an array copy's ranges were"). Call with the handle's context active.
pub(crate) fn queue_of<'h>(handle: &'h Handle, stream: jlong, what: &str) -> JniResult<Queue<'h>> {
    let queue = handle.queue()?;
    if stream != HANDLE_STREAM && queue.raw() as usize as jlong != stream {
        return Err(
            Error::invalid_state(format!("{what} meant for stream {stream:#x}, but the handle's stream is now {:p}", queue.raw())).into()
        );
    }
    Ok(queue)
}

/// One range of an array copy (see `copy_range`).
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn array_copy(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    b: BufferPtr,
    offset: jlong,
    array: JObject<'_>,
    type_code: jint,
    array_offset: jlong,
    bytes: jlong,
    upload: jboolean,
    stream: jlong,
    chunk_bytes: jlong,
    depth: jint,
    slot_bytes: jlong,
    idle_slots: jint,
    wait_for_device: jboolean,
    critical_copy: jboolean,
) {
    let range = Range { offset, type_code, array_offset, bytes, upload, wait_for_device, stream };
    let plan = PlanArgs { chunk_bytes, depth, slot_bytes, max_idle_slots: idle_slots, critical_copy };
    entry!(env, |e| copy_range(e, (h, b), &array, range, plan))
}
