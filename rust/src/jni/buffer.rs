//! `dev.cuhandle.NativeApi`: device memory entry points. Java checks ranges first (for clear
//! messages); the core checks them again so that nothing out of range ever reaches the driver.

use crate::core::error::Error;
use crate::core::handle::Handle;
use crate::core::memory::device::DeviceMemory;
use crate::jni::entry::{entry, entry_without_env};
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{BufferPtr, HandlePtr, LibraryPtr, Ptr};
use crate::jni::raw;
use crate::jni::throw::JniResult;
use jni::objects::{JByteBuffer, JClass};
use jni::sys::{jint, jlong};
use jni::{Env, EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn buffer_allocate(h: HandlePtr, bytes: jlong) -> BufferPtr),
    native!(static raw fn buffer_wrap(h: HandlePtr, address: jlong, bytes: jlong) -> BufferPtr),
    native!(static raw fn buffer_wrap_variable(h: HandlePtr, library: LibraryPtr, address: jlong, bytes: jlong) -> BufferPtr),
    native!(static raw fn buffer_address(b: BufferPtr) -> jlong),
    native!(static raw fn buffer_context_id(b: BufferPtr) -> jlong),
    native!(static raw fn buffer_free(b: BufferPtr)),
    native!(static raw fn upload_direct(h: HandlePtr, b: BufferPtr, offset: jlong, direct: JByteBuffer, direct_offset: jlong, bytes: jlong)),
    native!(static raw fn download_direct(h: HandlePtr, b: BufferPtr, offset: jlong, direct: JByteBuffer, direct_offset: jlong, bytes: jlong)),
    native!(static raw fn memset(h: HandlePtr, b: BufferPtr, offset: jlong, bytes: jlong, value: jint)),
    native!(static raw fn copy(h: HandlePtr, dst: BufferPtr, dst_offset: jlong, src: BufferPtr, src_offset: jlong, bytes: jlong)),
    native!(static raw fn direct_buffer_address(direct: JByteBuffer) -> jlong),
];

/// The handle and a buffer of its context, both live for the call.
pub(crate) fn pair<'a>(h: &'a HandlePtr, b: &'a BufferPtr) -> JniResult<(&'a Handle, &'a DeviceMemory)> {
    let (handle, buffer) = (h.get()?, b.get()?);
    if buffer.context().id() != handle.context().id() {
        return Err(Error::invalid_argument(format!(
            "the device buffer belongs to context id {} but the handle is bound to context id {}",
            buffer.context().id(),
            handle.context().id()
        ))
        .into());
    }
    Ok((handle, buffer))
}

pub(crate) fn size(value: jlong, what: &str) -> JniResult<usize> {
    usize::try_from(value).map_err(|_| Error::invalid_argument(format!("{what} is {value}; expected a value >= 0")).into())
}

fn buffer_allocate(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, bytes: jlong) -> BufferPtr {
    entry_without_env!(env, || Ok(Ptr::give(h.get()?.allocate(size(bytes, "the buffer size")?)?)))
}

fn buffer_wrap(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, address: jlong, bytes: jlong) -> BufferPtr {
    entry!(env, |_e| {
        let handle = h.get()?;
        handle.context().validate()?;
        Ok(BufferPtr::give(DeviceMemory::wrap(handle.context(), address as u64, size(bytes, "the buffer size")?)?))
    })
}

/// A view of a library's variable in the handle's context: its uses are noted for the library's
/// unload (rule L7). The library is entered by the Java caller.
fn buffer_wrap_variable(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, library: LibraryPtr, address: jlong, bytes: jlong) -> BufferPtr {
    entry!(env, |_e| {
        let (handle, library) = (h.get()?, library.get()?);
        handle.context().validate()?;
        Ok(BufferPtr::give(DeviceMemory::wrap_variable(
            handle.context(),
            address as u64,
            size(bytes, "the variable size")?,
            library.uses(),
        )?))
    })
}

fn buffer_address(env: EnvUnowned<'_>, _: JClass<'_>, b: BufferPtr) -> jlong {
    entry!(env, |_e| Ok(b.get()?.address() as jlong))
}

fn buffer_context_id(env: EnvUnowned<'_>, _: JClass<'_>, b: BufferPtr) -> jlong {
    entry!(env, |_e| Ok(b.get()?.context().id() as jlong))
}

/// Frees a buffer in stream order after the work queued on it (see `DeviceMemory`'s Drop); a
/// wrapped pointer is only forgotten. Called once per buffer, after the last call using it.
fn buffer_free(env: EnvUnowned<'_>, _: JClass<'_>, b: BufferPtr) {
    entry_without_env!(env, || b.release())
}

/// The address of bytes `[offset, offset + bytes)` of a direct ByteBuffer, checked against its
/// capacity; valid while the Java caller keeps the ByteBuffer reachable (for its call).
fn direct_range(env: &Env<'_>, direct: &JByteBuffer<'_>, offset: jlong, bytes: jlong) -> JniResult<(*mut u8, usize)> {
    let (offset, bytes) = (size(offset, "the ByteBuffer offset")?, size(bytes, "the length")?);
    // SAFETY: `env` is this thread's; `direct` was checked non-null by Java.
    let (ptr, capacity) = unsafe { raw::direct_buffer(env.get_raw(), direct.as_raw()) }
        .ok_or_else(|| Error::invalid_argument("the ByteBuffer is not a direct buffer"))?;
    if offset.checked_add(bytes).is_none_or(|end| end > capacity) {
        return Err(Error::invalid_argument(format!(
            "byte range [{offset}, {offset}+{bytes}) is outside the ByteBuffer's capacity of {capacity} bytes"
        ))
        .into());
    }
    // SAFETY: the offset lies inside the buffer's capacity (checked above).
    Ok((unsafe { ptr.add(offset) }, bytes))
}

/// A copy between a direct ByteBuffer's bytes and device memory, on the handle's stream;
/// `upload`: to the device (returns once the source may be reused), else to the host (returns
/// once the bytes are there).
fn direct_copy(
    env: &Env<'_>,
    (h, b): (HandlePtr, BufferPtr),
    offset: jlong,
    direct: &JByteBuffer<'_>,
    direct_offset: jlong,
    bytes: jlong,
    upload: bool,
) -> JniResult<()> {
    let (host, bytes) = direct_range(env, direct, direct_offset, bytes)?;
    let (handle, buffer) = pair(&h, &b)?;
    let offset = size(offset, "the buffer offset")?;
    let _scope = handle.activate()?;
    let queue = handle.queue()?;
    // SAFETY: `host` holds `bytes` bytes of the ByteBuffer, which the Java caller keeps reachable
    // for the call.
    unsafe {
        if upload {
            buffer.upload(offset, host, bytes, &queue)?;
        } else {
            buffer.download(offset, host, bytes, &queue)?;
        }
    }
    Ok(())
}

#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn upload_direct(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    b: BufferPtr,
    offset: jlong,
    direct: JByteBuffer<'_>,
    direct_offset: jlong,
    bytes: jlong,
) {
    entry!(env, |e| direct_copy(e, (h, b), offset, &direct, direct_offset, bytes, true))
}

#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn download_direct(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    b: BufferPtr,
    offset: jlong,
    direct: JByteBuffer<'_>,
    direct_offset: jlong,
    bytes: jlong,
) {
    entry!(env, |e| direct_copy(e, (h, b), offset, &direct, direct_offset, bytes, false))
}

fn memset(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, b: BufferPtr, offset: jlong, bytes: jlong, value: jint) {
    entry_without_env!(env, || {
        let (handle, buffer) = pair(&h, &b)?;
        let (offset, bytes) = (size(offset, "the offset")?, size(bytes, "the length")?);
        Ok(handle.in_stream_order(|on| buffer.memset(offset, bytes, value as u8, on))?)
    })
}

#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn copy(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    dst: BufferPtr,
    dst_offset: jlong,
    src: BufferPtr,
    src_offset: jlong,
    bytes: jlong,
) {
    entry!(env, |_e| {
        let ((handle, to), (_, from)) = (pair(&h, &dst)?, pair(&h, &src)?);
        let _scope = handle.activate()?;
        Ok(to.copy_from(
            size(dst_offset, "the destination offset")?,
            from,
            size(src_offset, "the source offset")?,
            size(bytes, "the length")?,
            &*handle.queue()?,
        )?)
    })
}

fn direct_buffer_address(env: EnvUnowned<'_>, _: JClass<'_>, direct: JByteBuffer<'_>) -> jlong {
    entry!(env, |e| {
        // SAFETY: `direct` checked non-null by Java; env is this thread's.
        let (ptr, _) = unsafe { raw::direct_buffer(e.get_raw(), direct.as_raw()) }
            .ok_or_else(|| Error::invalid_argument("the ByteBuffer is not a direct buffer"))?;
        Ok(ptr as jlong)
    })
}
