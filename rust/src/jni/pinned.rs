//! `dev.cuhandle.NativeApi`: pinned host memory (`HostBuffer`) and the asynchronous copies
//! between it and device memory. Java checks ranges first (for clear messages); the core checks
//! them again so that nothing out of range reaches the driver.

use crate::core::error::Error;
use crate::jni::buffer::{pair, size};
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{BufferPtr, HandlePtr, PinnedPtr, Ptr};
use crate::jni::raw::convert;
use jni::objects::{JByteBuffer, JClass};
use jni::sys::{jboolean, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn pinned_allocate(h: HandlePtr, bytes: jlong) -> PinnedPtr),
    native!(static raw fn pinned_address(p: PinnedPtr) -> jlong),
    native!(static raw fn pinned_free(p: PinnedPtr)),
    native!(static raw fn pinned_byte_buffer(p: PinnedPtr, offset: jlong, length: jlong) -> JByteBuffer),
    native!(static raw fn pinned_copy_async(h: HandlePtr, p: PinnedPtr, host_offset: jlong, b: BufferPtr, buffer_offset: jlong, bytes: jlong, upload: jboolean)),
];

fn pinned_allocate(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, bytes: jlong) -> PinnedPtr {
    entry!(env, |_e| Ok(Ptr::give(h.get()?.allocate_pinned(size(bytes, "the host buffer size")?)?)))
}

fn pinned_address(env: EnvUnowned<'_>, _: JClass<'_>, p: PinnedPtr) -> jlong {
    entry!(env, |_e| Ok(p.get()?.address() as jlong))
}

/// Releases the memory to the context's pinned cache once no call uses it (the Java HostBuffer's
/// close protocol); the cache reuses it after the GPU work that used it.
fn pinned_free(env: EnvUnowned<'_>, _: JClass<'_>, p: PinnedPtr) {
    entry!(env, |_e| p.release())
}

/// A direct ByteBuffer over `[offset, offset + length)` of the pinned memory (Java checked the
/// range and that `length` fits an int; checked again here).
fn pinned_byte_buffer<'l>(env: EnvUnowned<'l>, _: JClass<'l>, p: PinnedPtr, offset: jlong, length: jlong) -> JByteBuffer<'l> {
    entry!(env, |e| {
        let pinned = p.get()?;
        let (offset, length) = (size(offset, "the offset")?, size(length, "the length")?);
        if length > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("a ByteBuffer holds at most {} bytes; {length} were asked for", i32::MAX)).into());
        }
        let start = pinned.range(offset, length)?;
        let raw = e.get_raw();
        // SAFETY: `raw` is this thread's env; the range lies inside the live allocation.
        let buffer = unsafe { ((**raw).v1_4.NewDirectByteBuffer)(raw, start.cast(), length as jlong) };
        if buffer.is_null() {
            return Err(convert::pending());
        }
        // SAFETY: a new local reference to a ByteBuffer, owned by nothing else.
        Ok(unsafe { JByteBuffer::from_raw(e, buffer) })
    })
}

/// Queues a copy between pinned memory and device memory on the handle's stream and returns at
/// once (`upload`: host to device). Java keeps all three objects entered until the copy's
/// completion marker reports it done.
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn pinned_copy_async(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    p: PinnedPtr,
    host_offset: jlong,
    b: BufferPtr,
    buffer_offset: jlong,
    bytes: jlong,
    upload: jboolean,
) {
    entry!(env, |_e| {
        let ((handle, buffer), pinned) = (pair(&h, &b)?, p.get()?);
        let (host_offset, buffer_offset, bytes) =
            (size(host_offset, "the host offset")?, size(buffer_offset, "the buffer offset")?, size(bytes, "the length")?);
        let _scope = handle.activate()?;
        let queue = handle.queue()?;
        if upload {
            pinned.copy_to_device(host_offset, buffer, buffer_offset, bytes, &queue)?;
        } else {
            pinned.copy_from_device(host_offset, buffer, buffer_offset, bytes, &queue)?;
        }
        Ok(())
    })
}
