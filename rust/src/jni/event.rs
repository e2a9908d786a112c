//! `dev.cuhandle.NativeApi`: events.

use crate::core::error::Error;
use crate::core::event::Event;
use crate::core::handle::Handle;
use crate::jni::raw;
use crate::jni::throw::entry;
use jni::sys::{jclass, jfloat, jlong};
use jni::EnvUnowned;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_eventCreate<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong) -> jlong {
    entry!(env, |_e| {
        // SAFETY: live handle pointer held by a Java Handle.
        let handle = unsafe { raw::borrow::<Handle>(h, "handle")? };
        Ok(raw::give(Event::create(handle)?))
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_eventRecord<'l>(mut env: EnvUnowned<'l>, _c: jclass, ev: jlong, h: jlong) {
    entry!(env, |_e| {
        // SAFETY: live pointers held by Java objects.
        let (event, handle) = unsafe { (raw::borrow::<Event>(ev, "event")?, raw::borrow::<Handle>(h, "handle")?) };
        if event.context().id() != handle.context().id() {
            return Err(Error::invalid_argument("the event belongs to another context than the handle").into());
        }
        Ok(event.record(handle)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_eventSynchronize<'l>(mut env: EnvUnowned<'l>, _c: jclass, ev: jlong) {
    // SAFETY: live event pointer held by a Java Event.
    entry!(env, |_e| Ok(unsafe { raw::borrow::<Event>(ev, "event")? }.synchronize()?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_eventElapsed<'l>(mut env: EnvUnowned<'l>, _c: jclass, start: jlong, end: jlong) -> jfloat {
    entry!(env, |_e| {
        // SAFETY: live event pointers held by Java Events.
        let (start, end) = unsafe { (raw::borrow::<Event>(start, "start event")?, raw::borrow::<Event>(end, "end event")?) };
        Ok(end.elapsed_since(start)?)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_eventDestroy<'l>(mut env: EnvUnowned<'l>, _c: jclass, ev: jlong) {
    entry!(env, |_e| {
        // SAFETY: Java calls this once per event.
        if let Some(event) = unsafe { raw::take::<Event>(ev) } {
            event.destroy();
        }
        Ok(())
    })
}

/// True when the recorded work is done, false while it runs; throws CudaException if it failed.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_eventQuery<'l>(mut env: EnvUnowned<'l>, _c: jclass, ev: jlong) -> jni::sys::jboolean {
    // SAFETY: live event pointer held by a Java Event.
    entry!(env, |_e| Ok(unsafe { raw::borrow::<Event>(ev, "event")? }.query()?))
}

/// `cuStreamWaitEvent`: the handle's later work waits for the event, the host does not.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_handleWaitEvent<'l>(mut env: EnvUnowned<'l>, _c: jclass, h: jlong, ev: jlong) {
    entry!(env, |_e| {
        // SAFETY: live pointers held by a Java Handle and Event.
        let (handle, event) = unsafe { (raw::borrow::<Handle>(h, "handle")?, raw::borrow::<Event>(ev, "event")?) };
        Ok(event.order_before(handle)?)
    })
}
