//! `dev.cuhandle.NativeApi`: driver, device and logging entry points.

use crate::core::context;
use crate::core::{device, driver, sticky};
use crate::jni::entry::entry;
use crate::jni::native_entry::native;
use crate::jni::raw::convert;
use jni::objects::{JClass, JIntArray, JLongArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn configure(driver_path: JString, log_level: jint)),
    native!(static raw fn configure_memory(release_threshold: jlong, pools: jboolean)),
    native!(static raw fn driver_version() -> jint),
    native!(static raw fn driver_path() -> JString),
    native!(static raw fn missing_driver_features() -> JString),
    native!(static raw fn initialise()),
    native!(static raw fn device_count() -> jint),
    native!(static raw fn device_name(ordinal: jint) -> JString),
    native!(static raw fn device_info(ordinal: jint) -> jlong[]),
    native!(static raw fn device_attribute(ordinal: jint, attribute: jint) -> jint),
    native!(static raw fn sticky_codes() -> jint[]),
    native!(static raw fn current_context() -> jlong),
    native!(static raw fn primary_context_state(ordinal: jint) -> jlong[]),
];

fn configure(env: EnvUnowned<'_>, _: JClass<'_>, driver_path: JString<'_>, log_level: jint) {
    entry!(env, |e| {
        // SAFETY: called from NativeApi on a Java thread; the env is this thread's.
        unsafe { crate::jni::logging::install(e.get_raw(), log_level) };
        driver::set_driver_path(convert::string(e, &driver_path)?);
        Ok(())
    })
}

/// Memory settings (`-Dcuhandle.pool.releaseThreshold`, `-Dcuhandle.pool.enabled`), taken by
/// memory pools made from now on. A negative threshold means unlimited.
fn configure_memory(env: EnvUnowned<'_>, _: JClass<'_>, release_threshold: jlong, pools: jboolean) {
    entry!(env, |_e| {
        let threshold = u64::try_from(release_threshold).unwrap_or(crate::core::memory::pool::UNLIMITED);
        crate::core::memory::pool::configure(threshold, pools);
        Ok(())
    })
}

fn driver_version(env: EnvUnowned<'_>, _: JClass<'_>) -> jint {
    entry!(env, |_e| Ok(driver::loaded()?.version))
}

fn driver_path<'l>(env: EnvUnowned<'l>, _: JClass<'l>) -> JString<'l> {
    entry!(env, |e| convert::new_string(e, &driver::loaded()?.path))
}

fn missing_driver_features<'l>(env: EnvUnowned<'l>, _: JClass<'l>) -> JString<'l> {
    entry!(env, |e| convert::new_string(e, &driver::loaded()?.missing_optional().join(",")))
}

fn initialise(env: EnvUnowned<'_>, _: JClass<'_>) {
    entry!(env, |_e| {
        driver::initialised()?;
        Ok(())
    })
}

fn device_count(env: EnvUnowned<'_>, _: JClass<'_>) -> jint {
    entry!(env, |_e| Ok(context::device_count(driver::initialised()?)?))
}

fn device_name<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint) -> JString<'l> {
    entry!(env, |e| convert::new_string(e, &device::info(ordinal)?.name))
}

/// [total memory, cc major, cc minor, SMs, max threads/block, max block x y z, max grid x y z,
/// max shared/block, memory pools, max shared/block with opt-in, cooperative launch]
fn device_info<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint) -> JLongArray<'l> {
    entry!(env, |e| {
        let d = device::info(ordinal)?;
        let values = [
            d.total_memory as i64,
            d.compute_capability.0 as i64,
            d.compute_capability.1 as i64,
            d.multiprocessors as i64,
            d.max_threads_per_block as i64,
            d.max_block[0] as i64,
            d.max_block[1] as i64,
            d.max_block[2] as i64,
            d.max_grid[0] as i64,
            d.max_grid[1] as i64,
            d.max_grid[2] as i64,
            d.max_shared_per_block as i64,
            d.memory_pools as i64,
            d.max_shared_per_block_optin as i64,
            d.cooperative_launch as i64,
        ];
        convert::long_array(e, &values)
    })
}

fn device_attribute(env: EnvUnowned<'_>, _: JClass<'_>, ordinal: jint, attribute: jint) -> jint {
    entry!(env, |_e| Ok(device::attribute_of(driver::initialised()?, ordinal, attribute)?))
}

fn sticky_codes<'l>(env: EnvUnowned<'l>, _: JClass<'l>) -> JIntArray<'l> {
    entry!(env, |e| convert::int_array(e, sticky::STICKY_CODES))
}

/// The raw context current on this thread (0 if none).
fn current_context(env: EnvUnowned<'_>, _: JClass<'_>) -> jlong {
    entry!(env, |_e| Ok(context::current_context(driver::initialised()?)? as jlong))
}

/// [flags, active] of the primary context of `ordinal` (does not create or retain it).
fn primary_context_state<'l>(env: EnvUnowned<'l>, _: JClass<'l>, ordinal: jint) -> JLongArray<'l> {
    entry!(env, |e| {
        let driver = driver::initialised()?;
        let (flags, active) = context::primary_state(driver, device::handle_of(driver, ordinal)?)?;
        convert::long_array(e, &[flags as i64, active as i64])
    })
}
