//! `dev.cuhandle.GreenContextTestApi`: test-only entry points that create and destroy green
//! contexts (CUDA 12.4+, "Green Contexts" of the driver API) so that the GPU suite can check what
//! a handle does with one. Looked up with `cuGetProcAddress` for the 12.4 ABI; a driver without
//! them makes `available()` false and the tests skip.

use crate::core::driver::{self, CuResult};
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::raw::convert;
use crate::jni::testing_entry_point::lookup;
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
use std::ffi::{c_int, c_uint, c_void};

/// The ABI version of the entry points and of `CUdevResource` that these calls use.
const GREEN_CONTEXT_ABI: i32 = 12040;
// The next two are written by hand: cudarc has them only with its cuda-12040 feature, and this crate
// builds against the 12.0 bindings. Both equal CUDA 12.4's cuda.h (CUdevResourceType, CUgreenCtxCreate_flags).
/// `CU_DEV_RESOURCE_TYPE_SM`.
const RESOURCE_TYPE_SM: c_int = 1;
/// `CU_GREEN_CTX_DEFAULT_STREAM`, required by `cuGreenCtxCreate`.
const GREEN_CTX_DEFAULT_STREAM: c_uint = 1;
/// Offset of `CUdevResource.sm.smCount` in the 12.4 layout: `type` (4 bytes), 92 bytes of
/// internal padding, then the union whose first member is the SM resource.
const SM_COUNT_OFFSET: usize = 96;

/// Room for one `CUdevResource` (144 bytes in the 12.4 ABI), generously sized and zeroed.
#[repr(C, align(8))]
struct DevResource([u8; 1024]);

impl DevResource {
    fn new() -> DevResource {
        DevResource([0; 1024])
    }

    fn sm_count(&self) -> u32 {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(&self.0[SM_COUNT_OFFSET..SM_COUNT_OFFSET + 4]);
        u32::from_ne_bytes(bytes)
    }
}

type DeviceGetDevResource = unsafe extern "C" fn(CUdevice, *mut DevResource, c_int) -> CuResult;
type SmResourceSplitByCount =
    unsafe extern "C" fn(*mut DevResource, *mut c_uint, *const DevResource, *mut DevResource, c_uint, c_uint) -> CuResult;
type ResourceGenerateDesc = unsafe extern "C" fn(*mut *mut c_void, *mut DevResource, c_uint) -> CuResult;
type GreenCtxCreate = unsafe extern "C" fn(*mut *mut c_void, *mut c_void, CUdevice, c_uint) -> CuResult;
type CtxFromGreenCtx = unsafe extern "C" fn(*mut CUcontext, *mut c_void) -> CuResult;
type GreenCtxDestroy = unsafe extern "C" fn(*mut c_void) -> CuResult;
type StreamGetGreenCtx = unsafe extern "C" fn(CUstream, *mut *mut c_void) -> CuResult;

struct GreenApi {
    device_get_dev_resource: DeviceGetDevResource,
    sm_resource_split_by_count: SmResourceSplitByCount,
    resource_generate_desc: ResourceGenerateDesc,
    green_ctx_create: GreenCtxCreate,
    ctx_from_green_ctx: CtxFromGreenCtx,
    green_ctx_destroy: GreenCtxDestroy,
    stream_get_green_ctx: StreamGetGreenCtx,
}

/// The green-context entry points, or `None` if the driver lacks any of them.
fn green_api() -> crate::core::error::Result<Option<GreenApi>> {
    // SAFETY (each lookup): the type is cuda.h's declaration of that entry point in CUDA 12.4.
    unsafe {
        let (Some(device_get_dev_resource), Some(sm_resource_split_by_count), Some(resource_generate_desc), Some(green_ctx_create)) = (
            lookup::<DeviceGetDevResource>("cuDeviceGetDevResource", GREEN_CONTEXT_ABI)?,
            lookup::<SmResourceSplitByCount>("cuDevSmResourceSplitByCount", GREEN_CONTEXT_ABI)?,
            lookup::<ResourceGenerateDesc>("cuDevResourceGenerateDesc", GREEN_CONTEXT_ABI)?,
            lookup::<GreenCtxCreate>("cuGreenCtxCreate", GREEN_CONTEXT_ABI)?,
        ) else {
            return Ok(None);
        };
        let (Some(ctx_from_green_ctx), Some(green_ctx_destroy), Some(stream_get_green_ctx)) = (
            lookup::<CtxFromGreenCtx>("cuCtxFromGreenCtx", GREEN_CONTEXT_ABI)?,
            lookup::<GreenCtxDestroy>("cuGreenCtxDestroy", GREEN_CONTEXT_ABI)?,
            lookup::<StreamGetGreenCtx>("cuStreamGetGreenCtx", GREEN_CONTEXT_ABI)?,
        ) else {
            return Ok(None);
        };
        Ok(Some(GreenApi {
            device_get_dev_resource,
            sm_resource_split_by_count,
            resource_generate_desc,
            green_ctx_create,
            ctx_from_green_ctx,
            green_ctx_destroy,
            stream_get_green_ctx,
        }))
    }
}

fn required() -> crate::core::error::Result<GreenApi> {
    green_api()?.ok_or_else(|| {
        crate::core::error::Error::invalid_state(
            "this driver has no green contexts (CUDA 12.4+); check GreenContextTestApi.available() first",
        )
    })
}

fn available(env: EnvUnowned<'_>, _: JClass<'_>) -> jboolean {
    entry!(env, |_e| Ok(green_api()?.is_some()))
}

/// Creates a green context on `ordinal` with one group of at least `min_sms` SMs split from the
/// device's; returns [CUgreenCtx, its CUcontext (cuCtxFromGreenCtx), the group's SM count, the
/// device's SM count]. Nothing is made current.
fn create<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint, min_sms: jint) -> JLongArray<'l> {
    entry!(env, |e| {
        let d = driver::initialised()?;
        let g = required()?;
        let device: CUdevice = crate::core::device::handle_of(d, ordinal)?;
        let mut whole = DevResource::new();
        // SAFETY: `whole` has room for a CUdevResource of the 12.4 ABI the entry point was looked up for.
        d.check(unsafe { (g.device_get_dev_resource)(device, &mut whole, RESOURCE_TYPE_SM) }, "cuDeviceGetDevResource")?;
        let mut group = DevResource::new();
        let mut groups: c_uint = 1;
        // SAFETY: `group` has room for the one result asked for; `whole` is the SM resource just
        // read; no remainder is wanted (NULL is allowed).
        d.check(
            unsafe { (g.sm_resource_split_by_count)(&mut group, &mut groups, &whole, std::ptr::null_mut(), 0, min_sms.max(0) as c_uint) },
            "cuDevSmResourceSplitByCount",
        )?;
        let mut desc: *mut c_void = std::ptr::null_mut();
        // SAFETY: one resource, written by the split above.
        d.check(unsafe { (g.resource_generate_desc)(&mut desc, &mut group, 1) }, "cuDevResourceGenerateDesc")?;
        let mut green: *mut c_void = std::ptr::null_mut();
        // SAFETY: `desc` came from cuDevResourceGenerateDesc; the default-stream flag is required.
        d.check(unsafe { (g.green_ctx_create)(&mut green, desc, device, GREEN_CTX_DEFAULT_STREAM) }, "cuGreenCtxCreate")?;
        let mut ctx: CUcontext = std::ptr::null_mut();
        // SAFETY: `green` is the green context just created; out-pointer valid.
        let rc = unsafe { (g.ctx_from_green_ctx)(&mut ctx, green) };
        if rc != 0 {
            // SAFETY: destroys the green context created above, once.
            unsafe { (g.green_ctx_destroy)(green) };
            d.check(rc, "cuCtxFromGreenCtx")?;
        }
        convert::long_array(e, &[green as i64, ctx as i64, group.sm_count() as i64, whole.sm_count() as i64])
    })
}

fn destroy(env: EnvUnowned<'_>, _: JClass<'_>, green: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let g = required()?;
        // SAFETY: the test destroys a green context it created, once.
        Ok(d.check(unsafe { (g.green_ctx_destroy)(green as *mut c_void) }, "cuGreenCtxDestroy")?)
    })
}

/// `cuStreamGetGreenCtx`: the green context `stream` was created in, 0 if none.
fn green_context_of_stream(env: EnvUnowned<'_>, _: JClass<'_>, stream: jlong) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let g = required()?;
        let mut green: *mut c_void = std::ptr::null_mut();
        // SAFETY: the test passes a live stream (a handle's); out-pointer valid.
        d.check(unsafe { (g.stream_get_green_ctx)(stream as CUstream, &mut green) }, "cuStreamGetGreenCtx")?;
        Ok(green as jlong)
    })
}
