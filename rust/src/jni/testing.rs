//! `dev.cuhandle.NativeTestApi`: entry points for the test suite only (raw contexts, resets,
//! a deliberate panic, the native table's own checks). They are part of the library so that the
//! GPU suite needs no other native code; the Java class that declares them is in the test sources.

use crate::core::library::KernelRef;
use crate::core::{context, driver, image, kernels, param_layout::ImageLayouts};
use crate::jni::entry::{entry, entry_without_env};
use crate::jni::java_arrays;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{HandlePtr, LibraryPtr};
use crate::jni::raw::convert;
use crate::jni::registration;
use jni::objects::{JByteArray, JClass, JLongArray, JObjectArray, JString};
use jni::sys::{jint, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn noop(value: jlong) -> jlong),
    native!(static raw fn log(level: jint, message: JString)),
    native!(static raw fn panic(message: JString) -> jint),
    native!(static raw fn without_env(mode: jint) -> jlong),
    native!(static raw fn activation_driver_calls(ctx: jlong, id: jlong) -> jlong),
    native!(static raw fn create_context(device: jint) -> jlong),
    native!(static raw fn image_param_layouts(image: jbyte[]) -> JString),
    native!(static raw fn builtin_image() -> jbyte[]),
    native!(static raw fn driver_param_layout(h: HandlePtr, lib: LibraryPtr, kernel: jlong) -> jlong[]),
    native!(static raw fn destroy_context(ctx: jlong)),
    native!(static raw fn set_current(ctx: jlong)),
    native!(static raw fn current_context() -> jlong),
    native!(static raw fn reset_primary(device: jint)),
    native!(static raw fn retain_primary(device: jint) -> jlong),
    native!(static raw fn release_primary(device: jint)),
    native!(static raw fn context_id(ctx: jlong) -> jlong),
    native!(static raw fn stream_create() -> jlong),
    native!(static raw fn stream_destroy(stream: jlong)),
    native!(static raw fn mem_alloc(bytes: jlong) -> jlong),
    native!(static raw fn mem_free(ptr: jlong)),
    native!(static raw fn registered_methods(class_name: JString) -> JString[]),
    native!(static raw fn register_noop_as(name: JString, signature: JString) -> JString),
];

fn panic(env: EnvUnowned<'_>, _: JClass<'_>, message: JString<'_>) -> jint {
    entry!(env, |e| {
        let text = convert::string(e, &message)?.unwrap_or_default();
        panic!("{text}")
    })
}

/// `entry_without_env!` each way out: mode 0 returns 42, 1 fails with an invalid argument, 2 panics.
fn without_env(env: EnvUnowned<'_>, _: JClass<'_>, mode: jint) -> jlong {
    entry_without_env!(env, || match mode {
        0 => Ok(42),
        1 => Err(crate::core::error::Error::invalid_argument("deliberate bad argument without env").into()),
        _ => panic!("deliberate test panic without env"),
    })
}

/// The driver calls beneath a handle call's activation, made in the order the handle makes them and
/// checked as it checks them, without cuhandle's own code: `cuCtxGetId` on `ctx` (compared with `id`,
/// rule H8), `cuCtxGetCurrent`, and where another context is current a `cuCtxSetCurrent` to `ctx` and
/// one back (tests/bench/activation_floor.c's sequence). Entered as `Handle.stream()` is
/// (`entry_without_env!`), so that HandleBenchmark can time the driver's floor in the same JVM and
/// rounds as the call above it. Returns the number of switches made (0 or 2). A failed switch back is
/// thrown and leaves `ctx` current (as a handle's activation, which logs it, cannot undo it either).
fn activation_driver_calls(env: EnvUnowned<'_>, _: JClass<'_>, ctx: jlong, id: jlong) -> jlong {
    entry_without_env!(env, || {
        let d = driver::initialised()?;
        let ctx = ctx as cudarc::driver::sys::CUcontext;
        let mut read = 0;
        // SAFETY: cuCtxGetId only reads the context's id. The caller (HandleBenchmark, the test) passes a
        // primary context it holds retained, so it is a context the driver knows; a destroyed one would be
        // undefined behaviour, as for the other raw-context entries of this test API.
        unsafe { d.cuCtxGetId(ctx, &mut read) }?;
        if read != id as u64 {
            return Err(crate::core::error::Error::invalid_argument(format!("context id {read} is not the expected {id}")).into());
        }
        let previous = context::current_context(d)?;
        if previous == ctx {
            return Ok(0);
        }
        // SAFETY: `ctx` is the retained context whose id was just read (the caller's contract above).
        unsafe { d.cuCtxSetCurrent(ctx) }?;
        // SAFETY: `previous` was current on this thread a moment ago, so it is a context the driver knows.
        unsafe { d.cuCtxSetCurrent(previous) }?;
        Ok(2)
    })
}

/// Does nothing: the cost of a bare JNI call through `entry!`, for the handle benchmark.
fn noop(env: EnvUnowned<'_>, _: JClass<'_>, value: jlong) -> jlong {
    entry!(env, |_e| Ok(value))
}

/// Emits a Rust `log` record at `level` (1 = error .. 5 = trace), to test the logging bridge.
fn log(env: EnvUnowned<'_>, _: JClass<'_>, level: jint, message: JString<'_>) {
    entry!(env, |e| {
        let text = convert::string(e, &message)?.unwrap_or_default();
        let level = match level {
            1 => log::Level::Error,
            2 => log::Level::Warn,
            3 => log::Level::Info,
            4 => log::Level::Debug,
            _ => log::Level::Trace,
        };
        log::log!(level, "{text}");
        Ok(())
    })
}

/// cuCtxCreate on `device`; the new context is left current, as the driver does.
fn create_context(env: EnvUnowned<'_>, _: JClass<'_>, device: jint) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer valid; the driver validates the device.
        unsafe { d.cuCtxCreate(&mut ctx, cudarc::driver::sys::CUctx_flags::CU_CTX_SCHED_AUTO as u32, device) }?;
        Ok(ctx as jlong)
    })
}

fn destroy_context(env: EnvUnowned<'_>, _: JClass<'_>, ctx: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the test passes a context it created and destroys it once.
        Ok(unsafe { d.cuCtxDestroy(ctx as _) }?)
    })
}

fn set_current(env: EnvUnowned<'_>, _: JClass<'_>, ctx: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the test passes a live context or 0.
        Ok(unsafe { d.cuCtxSetCurrent(ctx as _) }?)
    })
}

fn current_context(env: EnvUnowned<'_>, _: JClass<'_>) -> jlong {
    entry!(env, |_e| Ok(context::current_context(driver::initialised()?)? as jlong))
}

fn reset_primary(env: EnvUnowned<'_>, _: JClass<'_>, device: jint) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: resets the device's primary context; handles bound to it detect the new id.
        Ok(unsafe { d.cuDevicePrimaryCtxReset(device) }?)
    })
}

fn retain_primary(env: EnvUnowned<'_>, _: JClass<'_>, device: jint) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut ctx = std::ptr::null_mut();
        // SAFETY: out-pointer valid; balanced by releasePrimary in the test.
        unsafe { d.cuDevicePrimaryCtxRetain(&mut ctx, device) }?;
        Ok(ctx as jlong)
    })
}

fn release_primary(env: EnvUnowned<'_>, _: JClass<'_>, device: jint) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: balances a retainPrimary of the test.
        Ok(unsafe { d.cuDevicePrimaryCtxRelease(device) }?)
    })
}

fn context_id(env: EnvUnowned<'_>, _: JClass<'_>, ctx: jlong) -> jlong {
    // SAFETY: the test passes a context it created (possibly destroyed since, which is what it probes).
    entry!(env, |_e| Ok(unsafe { context::context_id(driver::initialised()?, ctx as _)? } as jlong))
}

fn stream_create(env: EnvUnowned<'_>, _: JClass<'_>) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut s = std::ptr::null_mut();
        // SAFETY: creates a stream in the current context (the test made one current).
        unsafe { d.cuStreamCreate(&mut s, 1) }?;
        Ok(s as jlong)
    })
}

fn stream_destroy(env: EnvUnowned<'_>, _: JClass<'_>, s: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: the test destroys a stream it created, once.
        Ok(unsafe { d.cuStreamDestroy(s as _) }?)
    })
}

fn mem_alloc(env: EnvUnowned<'_>, _: JClass<'_>, bytes: jlong) -> jlong {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        let mut p = 0;
        // SAFETY: allocates in the current context (the test made one current).
        unsafe { d.cuMemAlloc(&mut p, bytes as usize) }?;
        Ok(p as jlong)
    })
}

fn mem_free(env: EnvUnowned<'_>, _: JClass<'_>, p: jlong) {
    entry!(env, |_e| {
        let d = driver::initialised()?;
        // SAFETY: frees memory the test allocated, once.
        Ok(unsafe { d.cuMemFree(p as u64) }?)
    })
}

/// The parameter layouts `core::param_layout` reads from a module image: one line per kernel,
/// `name offset:size ...`, sorted (for the test that compares them with the driver's).
fn image_param_layouts<'l>(env: EnvUnowned<'l>, _: JClass<'l>, image: JByteArray<'l>) -> JString<'l> {
    entry!(env, |e| {
        let bytes = convert::bytes(e, &image)?;
        let kind = image::check(&bytes)?.kind;
        convert::new_string(e, &ImageLayouts::read(&bytes, kind).describe())
    })
}

/// `cuKernelGetParamInfo`'s layout of a kernel, probed in the handle's context: [offset, size, ...],
/// or null where the driver lacks the call.
fn driver_param_layout<'l>(env: EnvUnowned<'l>, _: JClass<'l>, h: HandlePtr, lib: LibraryPtr, kernel: jlong) -> JLongArray<'l> {
    entry!(env, |e| {
        let (handle, library) = (h.get()?, lib.get()?);
        let _scope = handle.activate()?;
        // SAFETY: `kernel` came from this library (the test's Kernel), which the Java caller holds open.
        match library.driver_param_layout(unsafe { KernelRef::from_raw(kernel as _) })? {
            Some(layout) => convert::long_array(e, &layout.iter().flat_map(|p| [p.offset as i64, p.size as i64]).collect::<Vec<_>>()),
            None => Ok(JLongArray::default()),
        }
    })
}

/// The built-in kernels' fatbin as embedded in the library (for tests that compare what
/// `core::param_layout` reads from it with what the driver reports).
fn builtin_image<'l>(env: EnvUnowned<'l>, _: JClass<'l>) -> JByteArray<'l> {
    entry!(env, |e| java_arrays::new_bytes(e, kernels::FATBIN))
}

/// "name signature" of every method the library registered for `class_name` (as JNI names it,
/// `dev/cuhandle/NativeApi`) when it loaded: the test compares them with the class's native methods.
fn registered_methods<'l>(env: EnvUnowned<'l>, _: JClass<'l>, class_name: JString<'l>) -> JObjectArray<'l, JString<'l>> {
    entry!(env, |e| {
        let class_name = convert::string(e, &class_name)?.unwrap_or_default();
        convert::string_array(e, &registration::registered_at_load(&class_name))
    })
}

/// Registers this class's `noop` function as `name` with JNI signature `signature`, through the
/// checks the library's load makes, and returns their refusal, or null when the entry fits (which
/// it only can as `noop` with `(J)J`, its own entry: any other name or signature is refused before
/// the function is bound).
fn register_noop_as<'l>(env: EnvUnowned<'l>, _: JClass<'l>, name: JString<'l>, signature: JString<'l>) -> JString<'l> {
    entry!(env, |e| {
        let (name, signature) = (convert::string(e, &name)?.unwrap_or_default(), convert::string(e, &signature)?.unwrap_or_default());
        // SAFETY: this thread's env, with no exception pending.
        match unsafe { registration::register_renamed(e.get_raw(), "dev/cuhandle/NativeTestApi", METHODS, "noop", &name, &signature) } {
            Ok(()) => Ok(JString::default()),
            Err(refusal) => convert::new_string(e, &refusal),
        }
    })
}
