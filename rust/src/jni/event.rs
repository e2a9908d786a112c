//! `dev.cuhandle.NativeApi`: events.

use crate::core::error::Error;
use crate::core::event::Event;
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{EventPtr, HandlePtr};
use jni::objects::JClass;
use jni::sys::{jboolean, jfloat};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn event_create(h: HandlePtr) -> EventPtr),
    native!(static raw fn event_record(ev: EventPtr, h: HandlePtr)),
    native!(static raw fn event_synchronize(ev: EventPtr)),
    native!(static raw fn event_elapsed(start: EventPtr, end: EventPtr) -> jfloat),
    native!(static raw fn event_destroy(ev: EventPtr)),
    native!(static raw fn event_query(ev: EventPtr) -> jboolean),
    native!(static raw fn handle_wait_event(h: HandlePtr, ev: EventPtr)),
];

fn event_create(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr) -> EventPtr {
    entry!(env, |_e| Ok(EventPtr::give(Event::create(h.get()?)?)))
}

fn event_record(env: EnvUnowned<'_>, _: JClass<'_>, ev: EventPtr, h: HandlePtr) {
    entry!(env, |_e| {
        let (event, handle) = (ev.get()?, h.get()?);
        if event.context().id() != handle.context().id() {
            return Err(Error::invalid_argument("the event belongs to another context than the handle").into());
        }
        Ok(event.record(handle)?)
    })
}

fn event_synchronize(env: EnvUnowned<'_>, _: JClass<'_>, ev: EventPtr) {
    entry!(env, |_e| Ok(ev.get()?.synchronize()?))
}

fn event_elapsed(env: EnvUnowned<'_>, _: JClass<'_>, start: EventPtr, end: EventPtr) -> jfloat {
    entry!(env, |_e| Ok(end.get()?.elapsed_since(start.get()?)?))
}

/// Called once per event, after its last use.
fn event_destroy(env: EnvUnowned<'_>, _: JClass<'_>, ev: EventPtr) {
    entry!(env, |_e| ev.release_with(Event::destroy))
}

/// True when the recorded work is done, false while it runs; throws CudaException if it failed.
fn event_query(env: EnvUnowned<'_>, _: JClass<'_>, ev: EventPtr) -> jboolean {
    entry!(env, |_e| Ok(ev.get()?.query()?))
}

/// `cuStreamWaitEvent`: the handle's later work waits for the event, the host does not.
fn handle_wait_event(env: EnvUnowned<'_>, _: JClass<'_>, h: HandlePtr, ev: EventPtr) {
    entry!(env, |_e| Ok(ev.get()?.order_before(h.get()?)?))
}
