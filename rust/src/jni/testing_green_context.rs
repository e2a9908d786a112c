//! `dev.cuhandle.GreenContextTestApi`: test-only entry points that create and destroy green
//! contexts (CUDA 12.4+, "Green Contexts" of the driver API) so that the GPU suite can check what
//! a handle does with one. The entry points are the driver floor's optional ones (12.4 ABI); a
//! driver without them makes `available()` false and the tests skip.

use crate::core::driver::dev_resource::{DevResource, GREEN_CTX_DEFAULT_STREAM, RESOURCE_TYPE_SM};
use crate::core::driver::{self, Driver, Optional};
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::raw::convert;
use cudarc::driver::sys::{CUcontext, CUdevice, CUstream};
use jni::objects::{JClass, JLongArray};
use jni::sys::{jboolean, jint, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn available() -> jboolean),
    native!(static raw fn create(ordinal: jint, min_sms: jint) -> jlong[]),
    native!(static raw fn destroy(green: jlong)),
    native!(static raw fn green_context_of_stream(stream: jlong) -> jlong),
];
use std::ffi::{c_uint, c_void};

/// Whether the driver has every green-context entry point these calls use: SM partitions' and
/// `cuStreamGetGreenCtx`.
fn has_green_contexts(d: &Driver) -> bool {
    crate::core::green_context::required_entries(d).is_ok() && d.supports(Optional::cuStreamGetGreenCtx)
}

fn available(env: EnvUnowned<'_>, _: JClass<'_>) -> jboolean {
    entry!(env, |_e| Ok(has_green_contexts(driver::initialised()?)))
}

/// Creates a green context on `ordinal` with one group of at least `min_sms` SMs split from the
/// device's; returns [CUgreenCtx, its CUcontext (cuCtxFromGreenCtx), the group's SM count, the
/// device's SM count]. Nothing is made current.
fn create<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint, min_sms: jint) -> JLongArray<'l> {
    entry!(env, |e| {
        let d = driver::initialised()?;
        let device: CUdevice = crate::core::device::handle_of(d, ordinal)?;
        let mut whole = DevResource::new();
        // SAFETY: `whole` has room for a CUdevResource of the 12.4 ABI the entry point was looked up for.
        unsafe { d.cuDeviceGetDevResource(device, &mut whole, RESOURCE_TYPE_SM) }?;
        let mut group = DevResource::new();
        let mut groups: c_uint = 1;
        // SAFETY: `group` has room for the one result asked for; `whole` is the SM resource just
        // read; no remainder is wanted (NULL is allowed).
        unsafe { d.cuDevSmResourceSplitByCount(&mut group, &mut groups, &whole, std::ptr::null_mut(), 0, min_sms.max(0) as c_uint) }?;
        let mut desc: *mut c_void = std::ptr::null_mut();
        // SAFETY: one resource, written by the split above.
        unsafe { d.cuDevResourceGenerateDesc(&mut desc, &mut group, 1) }?;
        let mut green: *mut c_void = std::ptr::null_mut();
        // SAFETY: `desc` came from cuDevResourceGenerateDesc; the default-stream flag is required.
        unsafe { d.cuGreenCtxCreate(&mut green, desc, device, GREEN_CTX_DEFAULT_STREAM) }?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: `green` is the green context just created; out-pointer valid.
        if let Err(e) = unsafe { d.cuCtxFromGreenCtx(&mut ctx, green) } {
            // SAFETY: destroys the green context created above, once; a failure leaves nothing to undo.
            let _ = unsafe { d.cuGreenCtxDestroy(green) };
            return Err(e.into());
        }
        convert::long_array(e, &[green as i64, ctx as i64, group.sm_count() as i64, whole.sm_count() as i64])
    })
}

fn destroy(env: EnvUnowned<'_>, _: JClass<'_>, green: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the test destroys a green context it created, once.
        Ok(unsafe { d.cuGreenCtxDestroy(green as *mut c_void) }?)
    })
}

/// `cuStreamGetGreenCtx`: the green context `stream` was created in, 0 if none.
fn green_context_of_stream(env: EnvUnowned<'_>, _: JClass<'_>, stream: jlong) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut green: *mut c_void = std::ptr::null_mut();
        // SAFETY: the test passes a live stream (a handle's); out-pointer valid.
        unsafe { d.cuStreamGetGreenCtx(stream as CUstream, &mut green) }?;
        Ok(green as jlong)
    })
}
