//! `dev.cuhandle.NativeApi`: driver, device and logging entry points.

use crate::core::context;
use crate::core::{device, driver, sticky};
use crate::jni::raw::convert;
use crate::jni::throw::entry;
use jni::sys::{jboolean, jclass, jint, jlong, jobject, jstring};
use jni::EnvUnowned;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_configure<'l>(mut env: EnvUnowned<'l>, _c: jclass, driver_path: jstring, log_level: jint) {
    entry!(env, |e| {
        let raw = e.get_raw();
        // SAFETY: called from NativeApi on a Java thread; the env is this thread's.
        unsafe { crate::jni::logging::install(raw, log_level) };
        driver::set_driver_path(convert::string(raw, driver_path)?);
        Ok(())
    })
}

/// Memory settings (`-Dcuhandle.pool.releaseThreshold`, `-Dcuhandle.pool.enabled`), taken by
/// memory pools made from now on. A negative threshold means unlimited.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_configureMemory<'l>(mut env: EnvUnowned<'l>, _c: jclass, release_threshold: jlong, pools: jboolean) {
    entry!(env, |_e| {
        let threshold = u64::try_from(release_threshold).unwrap_or(crate::core::memory::pool::UNLIMITED);
        crate::core::memory::pool::configure(threshold, pools);
        Ok(())
    })
}

/// The version of the Java/native interface: `dev.cuhandle.Native` refuses a libcuhandle whose
/// number differs from its own (a library from another cuhandle version, e.g. through
/// `-Dcuhandle.library.path`), instead of failing later with `UnsatisfiedLinkError`s. Raise it
/// with every change of a `NativeApi` signature.
const ABI_VERSION: jint = 7;

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_abiVersion<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jint {
    entry!(env, |_e| Ok(ABI_VERSION))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_driverVersion<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jint {
    entry!(env, |_e| Ok(driver::loaded()?.version))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_driverPath<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jstring {
    entry!(env, |e| convert::new_string(e.get_raw(), &driver::loaded()?.path))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_missingDriverFeatures<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jstring {
    entry!(env, |e| convert::new_string(e.get_raw(), &driver::loaded()?.api.missing_optional().join(",")))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_initialise<'l>(mut env: EnvUnowned<'l>, _c: jclass) {
    entry!(env, |_e| {
        driver::initialised()?;
        Ok(())
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_deviceCount<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jint {
    entry!(env, |_e| Ok(context::device_count(driver::initialised()?)?))
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_deviceName<'l>(mut env: EnvUnowned<'l>, _c: jclass, ordinal: jint) -> jstring {
    entry!(env, |e| convert::new_string(e.get_raw(), &device::info(ordinal)?.name))
}

/// [total memory, cc major, cc minor, SMs, max threads/block, max block x y z, max grid x y z,
/// max shared/block, memory pools, max shared/block with opt-in, cooperative launch]
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_deviceInfo<'l>(mut env: EnvUnowned<'l>, _c: jclass, ordinal: jint) -> jobject {
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
        convert::long_array(e.get_raw(), &values)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_deviceAttribute<'l>(mut env: EnvUnowned<'l>, _c: jclass, ordinal: jint, attribute: jint) -> jint {
    entry!(env, |_e| {
        let driver = driver::initialised()?;
        let mut dev = 0;
        // SAFETY: out-pointer valid; the driver validates the ordinal.
        driver.check(unsafe { (driver.api.cuDeviceGet)(&mut dev, ordinal) }, "cuDeviceGet")?;
        let mut value = 0;
        // SAFETY: out-pointer valid; the driver validates the attribute.
        driver.check(unsafe { (driver.api.cuDeviceGetAttribute)(&mut value, attribute, dev) }, "cuDeviceGetAttribute")?;
        Ok(value)
    })
}

#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_stickyCodes<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jobject {
    entry!(env, |e| convert::int_array(e.get_raw(), sticky::STICKY_CODES))
}

/// The raw context current on this thread (0 if none).
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_currentContext<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jlong {
    entry!(env, |_e| Ok(context::current_context(driver::initialised()?)? as jlong))
}

/// The primary context of `ordinal` if it is active, else 0 (does not create or retain it).
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_primaryContextState<'l>(mut env: EnvUnowned<'l>, _c: jclass, ordinal: jint) -> jobject {
    entry!(env, |e| {
        let driver = driver::initialised()?;
        let (mut flags, mut active) = (0u32, 0i32);
        // SAFETY: out-pointers valid; the driver validates the ordinal.
        driver.check(unsafe { (driver.api.cuDevicePrimaryCtxGetState)(ordinal, &mut flags, &mut active) }, "cuDevicePrimaryCtxGetState")?;
        convert::long_array(e.get_raw(), &[flags as i64, active as i64])
    })
}

