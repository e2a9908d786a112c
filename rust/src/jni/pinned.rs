//! `dev.cuhandle.NativeApi`: pinned host memory (`HostBuffer`) and the asynchronous copies
//! between it and device memory. Java checks ranges first (for clear messages); the core checks
//! them again so that nothing out of range reaches the driver.

use crate::core::error::Error;
use crate::core::handle::Handle;
use crate::core::memory::DeviceMemory;
use crate::core::memory::pinned::PinnedMemory;
use crate::jni::raw::{self, convert};
use crate::jni::buffer::size;
use crate::jni::throw::entry;
use jni::sys::{jboolean, jclass, jlong, jobject};
use jni::EnvUnowned;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_pinnedAllocate<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, bytes: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held (entered) by a Java Handle.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        let bytes = size(bytes, "the host buffer size")?;
        let _scope = handle.activate()?;
        Ok(raw::give(handle.allocate_pinned(bytes)?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_pinnedAddress<'l>(mut env: EnvUnowned<'l>, _c: jclass, p: jlong) -> jlong {
    // SAFETY: live pointer held by a Java HostBuffer.
    entry!(env, |_e| Ok(unsafe { raw::borrow::<PinnedMemory>(p, "host buffer")? }.address() as jlong))
}

/// Releases the memory to the context's pinned cache once no call uses it (the Java HostBuffer's
/// close protocol); the cache reuses it after the GPU work that used it.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_pinnedFree<'l>(mut env: EnvUnowned<'l>, _c: jclass, p: jlong) {
    entry!(env, |_e| {
        // SAFETY: Java calls this once per host buffer, after the last use returned.
        drop(unsafe { raw::take::<PinnedMemory>(p) });
        Ok(())
    })
}

/// A direct ByteBuffer over `[offset, offset + length)` of the pinned memory (Java checked the
/// range and that `length` fits an int; checked again here).
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_pinnedByteBuffer<'l>(mut env: EnvUnowned<'l>, _c: jclass, p: jlong, offset: jlong, length: jlong) -> jobject {
    entry!(env, |e| {
        // SAFETY: live pointer held (entered) by a Java HostBuffer.
        let pinned = unsafe { raw::borrow::<PinnedMemory>(p, "host buffer")? };
        let (offset, length) = (size(offset, "the offset")?, size(length, "the length")?);
        if length > i32::MAX as usize {
            return Err(Error::invalid_argument(format!("a ByteBuffer holds at most {} bytes; {length} were asked for", i32::MAX)).into());
        }
        let start = pinned.range(offset, length)?;
        let env = e.get_raw();
        // SAFETY: `env` is this thread's; the range lies inside the live allocation.
        let buffer = unsafe { ((**env).v1_4.NewDirectByteBuffer)(env, start.cast(), length as jlong) };
        if buffer.is_null() {
            return Err(convert::pending());
        }
        Ok(buffer)
    })
}

/// Queues a copy between pinned memory and device memory on the handle's stream and returns at
/// once (`upload`: host to device). Java keeps all three objects entered until the copy's
/// completion marker reports it done.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_pinnedCopyAsync<'l>(
    mut env: EnvUnowned<'l>,
    _c: jclass,
    h: jlong,
    p: jlong,
    host_offset: jlong,
    b: jlong,
    buffer_offset: jlong,
    bytes: jlong,
    upload: jboolean,
) {
    entry!(env, |_e| {
        // SAFETY: live pointers held (entered) by the Java Handle, HostBuffer and DeviceBuffer.
        let (handle, pinned, buffer) = unsafe {
            (raw::borrow::<Handle>(h, "handle")?, raw::borrow::<PinnedMemory>(p, "host buffer")?, raw::borrow::<DeviceMemory>(b, "device buffer")?)
        };
        if buffer.context().id() != handle.context().id() {
            return Err(Error::invalid_argument("the device buffer belongs to another context than the handle").into());
        }
        let (host_offset, buffer_offset, bytes) = (size(host_offset, "the host offset")?, size(buffer_offset, "the buffer offset")?, size(bytes, "the length")?);
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
