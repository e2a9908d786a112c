//! `dev.cuhandle.NativeApi.batchCopy`: many Java arrays copied to or from as many device buffers
//! in one staged pass (`core::transfer::batch`). The arrays are reached one at a time, in order, as
//! the pipeline gets to them: each through bounded region copies (or a memcpy in a critical region
//! held for that copy alone), never while the thread waits for the GPU (rule L4).

use crate::core::error::Error;
use crate::core::memory::DeviceMemory;
use crate::core::transfer::batch::{self, Entry, Target};
use crate::jni::buffer::size;
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{BufferPtr, HandlePtr};
use crate::jni::raw::{self, convert};
use crate::jni::throw::JniResult;
use crate::jni::transfer::{queue_of, PlanArgs};
use jni::objects::{JClass, JLongArray, JObjectArray};
use jni::sys::{jboolean, jint, jlong, jobject, jobjectArray, jsize, JNIEnv};
use jni::{Env, EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[native!(
    static raw fn batch_copy(
        h: HandlePtr, buffers: jlong[], offsets: jlong[], lengths: jlong[], arrays: JObject[], type_code: jint, upload: jboolean, stream: jlong,
        chunk_bytes: jlong, depth: jint, slot_bytes: jlong, idle_slots: jint, wait_for_device: jboolean, critical_copy: jboolean,
        batched: jboolean
    )
)];

/// The arrays of a batch, reached one at a time: the element the pipeline is at is held as a local
/// reference, dropped when it moves on (a batch of 10,000 arrays must not fill the local reference
/// table).
struct Arrays {
    env: *mut JNIEnv,
    arrays: jobjectArray,
    type_code: jint,
    critical: bool,
    current: Option<(usize, jobject, raw::ArrayRegion)>,
}

impl Arrays {
    /// The region of array `index`, fetched when the pipeline first gets to it.
    fn region(&mut self, index: usize) -> Result<&raw::ArrayRegion, Error> {
        if self.current.as_ref().is_none_or(|c| c.0 != index) {
            self.release();
            // SAFETY: this thread's env and a live Object[] reference from the Java caller; `index`
            // is below its length (the batch has one target per array).
            let element = unsafe { ((**self.env).v1_1.GetObjectArrayElement)(self.env, self.arrays, index as jsize) };
            if element.is_null() {
                return Err(Error::invalid_argument(format!("array {index} of the batch is null")));
            }
            // SAFETY: this thread's env; `element` is a live local reference to an array of the
            // type `type_code` names (BatchTransfers passes the arrays of one typed overload).
            match unsafe { raw::ArrayRegion::new(self.env, element, self.type_code, self.critical) } {
                Ok(region) => self.current = Some((index, element, region)),
                Err(_) => {
                    // SAFETY: a local reference this function obtained.
                    unsafe { ((**self.env).v1_1.DeleteLocalRef)(self.env, element) };
                    return Err(Error::invalid_argument(format!("unsupported array element type code {}", self.type_code)));
                }
            }
        }
        match &self.current {
            Some((_, _, region)) => Ok(region),
            None => Err(Error::invalid_state("no array of the batch is held")),
        }
    }

    fn release(&mut self) {
        if let Some((_, element, _)) = self.current.take() {
            // SAFETY: a local reference `region` obtained and no longer uses.
            unsafe { ((**self.env).v1_1.DeleteLocalRef)(self.env, element) };
        }
    }
}

impl Drop for Arrays {
    fn drop(&mut self) {
        self.release();
    }
}

/// The batch as Java describes it: entered buffer pointers, their byte offsets, the arrays' byte
/// lengths.
struct Lists {
    buffers: Vec<jlong>,
    offsets: Vec<jlong>,
    lengths: Vec<jlong>,
}

impl Lists {
    fn read(
        env: &Env<'_>,
        buffers: &JLongArray<'_>,
        offsets: &JLongArray<'_>,
        lengths: &JLongArray<'_>,
        arrays: &JObjectArray<'_>,
    ) -> JniResult<Lists> {
        let lists = Lists {
            buffers: convert::read_longs(env, buffers)?,
            offsets: convert::read_longs(env, offsets)?,
            lengths: convert::read_longs(env, lengths)?,
        };
        let (raw, array_list) = (env.get_raw(), arrays.as_raw());
        // SAFETY: this thread's env and a live (or null) Object[] reference.
        let count = if array_list.is_null() { 0 } else { unsafe { ((**raw).v1_1.GetArrayLength)(raw, array_list) } };
        let n = lists.buffers.len();
        if lists.offsets.len() != n || lists.lengths.len() != n || usize::try_from(count).ok() != Some(n) {
            return Err(Error::invalid_argument(format!(
                "a batch of {n} buffers with {} offsets, {} lengths and {count} arrays; expected as many of each",
                lists.offsets.len(),
                lists.lengths.len()
            ))
            .into());
        }
        Ok(lists)
    }
}

/// A batch copy: every buffer must belong to the handle's context, every array's bytes fit its
/// buffer from the offset on (checked by the core), and all of it goes to one stream.
fn copy_batch(env: &Env<'_>, h: HandlePtr, lists: Lists, arrays: &JObjectArray<'_>, kind: Kind, plan: PlanArgs) -> JniResult<()> {
    let handle = h.get()?;
    // SAFETY: Java lists the native pointers of buffers it holds entered for the whole call.
    let pointers: Vec<BufferPtr> = lists.buffers.iter().map(|&a| unsafe { BufferPtr::from_address(a) }).collect();
    let mut targets = Vec::with_capacity(pointers.len());
    for (i, pointer) in pointers.iter().enumerate() {
        let memory: &DeviceMemory = pointer.get().map_err(|_| Error::invalid_state(format!("buffer {i} of the batch is closed")))?;
        if memory.context().id() != handle.context().id() {
            return Err(Error::invalid_argument(format!(
                "buffer {i} of the batch belongs to context id {} but the handle is bound to context id {}",
                memory.context().id(),
                handle.context().id()
            ))
            .into());
        }
        let (offset, len) = (size(lists.offsets[i], "a buffer offset")?, size(lists.lengths[i], "an array length")?);
        targets.push(Target { memory, offset, len });
    }
    let mut arrays =
        Arrays { env: env.get_raw(), arrays: arrays.as_raw(), type_code: kind.type_code, critical: plan.critical_copy, current: None };
    let element = raw::element_bytes(kind.type_code)?;
    let plan = plan.plan(element)?;
    let _scope = handle.activate()?;
    let queue = queue_of(handle, kind.stream, "a batch copy was")?;
    let entry = if kind.batched { Entry::Batched } else { Entry::PerPiece };
    if kind.upload {
        batch::upload(&targets, &queue, plan, entry, kind.wait_for_device, |i, done, piece| arrays.region(i)?.read(done, piece))?;
    } else {
        batch::download(&targets, &queue, plan, entry, |i, done, piece| arrays.region(i)?.write(done, piece))?;
    }
    Ok(())
}

/// Which way and where a batch goes, and how (the scalar arguments of `batchCopy`).
struct Kind {
    type_code: jint,
    upload: bool,
    wait_for_device: bool,
    stream: jlong,
    batched: bool,
}

/// A batch copy (see `copy_batch`).
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn batch_copy(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    buffers: JLongArray<'_>,
    offsets: JLongArray<'_>,
    lengths: JLongArray<'_>,
    arrays: JObjectArray<'_>,
    type_code: jint,
    upload: jboolean,
    stream: jlong,
    chunk_bytes: jlong,
    depth: jint,
    slot_bytes: jlong,
    idle_slots: jint,
    wait_for_device: jboolean,
    critical_copy: jboolean,
    batched: jboolean,
) {
    let kind = Kind { type_code, upload, wait_for_device, stream, batched };
    let plan = PlanArgs { chunk_bytes, depth, slot_bytes, max_idle_slots: idle_slots, critical_copy };
    entry!(env, |e| {
        let lists = Lists::read(e, &buffers, &offsets, &lengths, &arrays)?;
        copy_batch(e, h, lists, &arrays, kind, plan)
    })
}
