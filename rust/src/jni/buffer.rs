//! `dev.cuhandle.NativeApi`: device memory entry points. Java checks ranges first (for clear
//! messages); the core checks them again so that nothing out of range ever reaches the driver.

use crate::core::error::Error;
use crate::core::handle::Handle;
use crate::core::memory::DeviceMemory;
use crate::jni::raw;
use crate::jni::throw::{entry, JniResult};
use jni::sys::{jclass, jint, jlong, jobject};
use jni::EnvUnowned;

/// # Safety
/// Pointers as in `raw::borrow`: live handle and buffer pointers held by Java objects.
pub(crate) unsafe fn pair<'a>(h: jlong, b: jlong) -> JniResult<(&'a Handle, &'a DeviceMemory)> {
    // SAFETY: caller's contract.
    let (handle, buffer) = unsafe { (raw::borrow::<Handle>(h, "handle")?, raw::borrow::<DeviceMemory>(b, "device buffer")?) };
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

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_bufferAllocate<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, bytes: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle pointer (module contract).
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        let bytes = size(bytes, "the buffer size")?;
        let _scope = handle.activate()?;
        Ok(raw::give(handle.allocate(bytes)?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_bufferWrap<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, address: jlong, bytes: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle pointer (module contract).
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        handle.context().validate()?;
        Ok(raw::give(DeviceMemory::wrap(handle.context(), address as u64, size(bytes, "the buffer size")?)?))
    })
}

/// A view of a library's variable in the handle's context: its uses are noted for the library's
/// unload (rule L7). The library is entered by the Java caller.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_bufferWrapVariable<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, lib: jlong, address: jlong, bytes: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle and library pointers (module contract).
        let (handle, library) = unsafe { (raw::borrow::<Handle>(h, "handle")?, raw::borrow::<crate::core::library::Library>(lib, "library")?) };
        handle.context().validate()?;
        Ok(raw::give(DeviceMemory::wrap_variable(handle.context(), address as u64, size(bytes, "the variable size")?, library.uses())?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_bufferAddress<'l>(mut env: EnvUnowned<'l>, _c: jclass, b: jlong) -> jlong {
    // SAFETY: live buffer pointer (module contract).
    entry!(env, |_e| Ok(unsafe { raw::borrow::<DeviceMemory>(b, "device buffer")? }.address() as jlong))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_bufferContextId<'l>(mut env: EnvUnowned<'l>, _c: jclass, b: jlong) -> jlong {
    // SAFETY: live buffer pointer (module contract).
    entry!(env, |_e| Ok(unsafe { raw::borrow::<DeviceMemory>(b, "device buffer")? }.context().id() as jlong))
}

/// Frees a buffer in stream order after the work queued on it (see `DeviceMemory`'s Drop); a
/// wrapped pointer is only forgotten.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_bufferFree<'l>(mut env: EnvUnowned<'l>, _c: jclass, b: jlong) {
    entry!(env, |_e| {
        // SAFETY: Java calls this once per buffer, after the last call using it returned.
        drop(unsafe { raw::take::<DeviceMemory>(b) });
        Ok(())
    })
}

/// The address of bytes `[offset, offset + bytes)` of a direct ByteBuffer, checked against its
/// capacity; valid while the Java caller keeps the ByteBuffer reachable (for its call).
fn direct_range(env: *mut jni::sys::JNIEnv, direct: jobject, offset: jlong, bytes: jlong) -> JniResult<(*mut u8, usize)> {
    let (offset, bytes) = (size(offset, "the ByteBuffer offset")?, size(bytes, "the length")?);
    // SAFETY: `env` is this thread's; `direct` was checked non-null by Java.
    let (ptr, capacity) = unsafe { raw::direct_buffer(env, direct) }.ok_or_else(|| Error::invalid_argument("the ByteBuffer is not a direct buffer"))?;
    if offset.checked_add(bytes).is_none_or(|end| end > capacity) {
        return Err(Error::invalid_argument(format!("byte range [{offset}, {offset}+{bytes}) is outside the ByteBuffer's capacity of {capacity} bytes")).into());
    }
    // SAFETY: the offset lies inside the buffer's capacity (checked above).
    Ok((unsafe { ptr.add(offset) }, bytes))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_uploadDirect<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, b: jlong, offset: jlong, direct: jobject, direct_offset: jlong, bytes: jlong) {
    entry!(env, |e| {
        let (host, bytes) = direct_range(e.get_raw(), direct, direct_offset, bytes)?;
        // SAFETY: live pointers (module contract).
        let (handle, buffer) = unsafe { pair(h, b)? };
        let _scope = handle.activate()?;
        // SAFETY: `host` holds `bytes` readable bytes of the ByteBuffer the Java caller keeps reachable.
        unsafe { buffer.upload(size(offset, "the buffer offset")?, host, bytes, &*handle.queue()?)? };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_downloadDirect<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, b: jlong, offset: jlong, direct: jobject, direct_offset: jlong, bytes: jlong) {
    entry!(env, |e| {
        let (host, bytes) = direct_range(e.get_raw(), direct, direct_offset, bytes)?;
        // SAFETY: live pointers (module contract).
        let (handle, buffer) = unsafe { pair(h, b)? };
        let _scope = handle.activate()?;
        // SAFETY: `host` holds `bytes` writable bytes of the ByteBuffer the Java caller keeps reachable.
        unsafe { buffer.download(size(offset, "the buffer offset")?, host, bytes, &*handle.queue()?)? };
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_memset<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, b: jlong, offset: jlong, bytes: jlong, value: jint) {
    entry!(env, |_e| {
        // SAFETY: live pointers (module contract).
        let (handle, buffer) = unsafe { pair(h, b)? };
        let _scope = handle.activate()?;
        Ok(buffer.memset(size(offset, "the offset")?, size(bytes, "the length")?, value as u8, &*handle.queue()?)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_copy<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, dst: jlong, dst_offset: jlong, src: jlong, src_offset: jlong, bytes: jlong) {
    entry!(env, |_e| {
        // SAFETY: live pointers (module contract).
        let (handle, to) = unsafe { pair(h, dst)? };
        // SAFETY: as above.
        let (_, from) = unsafe { pair(h, src)? };
        let _scope = handle.activate()?;
        Ok(to.copy_from(size(dst_offset, "the destination offset")?, from, size(src_offset, "the source offset")?, size(bytes, "the length")?, &*handle.queue()?)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_directBufferAddress<'l>(mut env: EnvUnowned<'l>, _c: jclass, direct: jobject) -> jlong {
    entry!(env, |e| {
        // SAFETY: `direct` checked non-null by Java; env is this thread's.
        let (ptr, _) = unsafe { raw::direct_buffer(e.get_raw(), direct) }.ok_or_else(|| Error::invalid_argument("the ByteBuffer is not a direct buffer"))?;
        Ok(ptr as jlong)
    })
}
