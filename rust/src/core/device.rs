//! Device properties, read once per device and process (the launch path checks limits against
//! them without calling the driver).

use crate::core::driver::{self, Driver};
use crate::core::error::Result;
use cudarc::driver::sys::{CUdevice, CUdevice_attribute};
use std::ffi::CStr;
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Mutex, OnceLock};

#[derive(Debug, Clone)]
pub struct DeviceInfo {
    pub ordinal: CUdevice,
    pub name: String,
    pub total_memory: usize,
    pub compute_capability: (i32, i32),
    pub multiprocessors: i32,
    pub max_threads_per_block: i32,
    pub max_block: [i32; 3],
    pub max_grid: [i32; 3],
    pub max_shared_per_block: i32,
    pub memory_pools: bool,
    /// The most shared memory a block can have once a kernel opts in
    /// (`CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES`); above `max_shared_per_block` on Volta and newer.
    pub max_shared_per_block_optin: i32,
    pub cooperative_launch: bool,
}

/// The properties read so far of devices at or above `KEPT` (the others are in `KNOWN`); its lock
/// also makes the first reads of every device one at a time.
static CACHE: Mutex<Vec<(CUdevice, &'static DeviceInfo)>> = Mutex::new(Vec::new());

/// The devices below this ordinal have their properties and handles found again without a lock or a
/// driver call: every `Handle.create` asks for both (docs/performance-notes.md, "Activation").
const KEPT: usize = 64;
/// The properties read so far, by ordinal, of devices below `KEPT`.
static KNOWN: [OnceLock<&'static DeviceInfo>; KEPT] = [const { OnceLock::new() }; KEPT];
/// The handles the driver gave so far, by ordinal, plus one (0: not asked yet). A device's handle
/// does not change while the process lives.
static HANDLES: [AtomicI32; KEPT] = [const { AtomicI32::new(0) }; KEPT];

fn kept<T>(table: &[T; KEPT], ordinal: i32) -> Option<&T> {
    usize::try_from(ordinal).ok().and_then(|i| table.get(i))
}

/// The handle of device `ordinal` if the driver gave it before (see [`handle_of`]).
#[inline]
pub fn known_handle(ordinal: i32) -> Option<CUdevice> {
    kept(&HANDLES, ordinal).map(|h| h.load(Ordering::Relaxed) - 1).filter(|&h| h >= 0)
}

/// The properties of device `ordinal` (validated against the device count by the driver).
///
/// Read under the cache's lock, so that threads creating their first handles on a device at once
/// read it once and leak one entry, not one each. Nothing under the lock can leave the list half
/// updated (one push), so a poisoned lock is used as it is instead of reading the device again.
pub fn info(ordinal: CUdevice) -> Result<&'static DeviceInfo> {
    if let Some(info) = kept(&KNOWN, ordinal).and_then(OnceLock::get) {
        return Ok(info);
    }
    let mut others = CACHE.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let slot = kept(&KNOWN, ordinal);
    // Another thread may have read it while this one waited for the lock.
    let known = match slot {
        Some(slot) => slot.get().copied(),
        None => others.iter().find(|(o, _)| *o == ordinal).map(|(_, info)| *info),
    };
    if let Some(info) = known {
        return Ok(info);
    }
    let driver = driver::initialised()?;
    let info: &'static DeviceInfo = Box::leak(Box::new(read(driver, ordinal)?));
    match slot {
        Some(slot) => {
            let _ = slot.set(info); // under the lock: empty until now
        }
        None => others.push((ordinal, info)),
    }
    Ok(info)
}

pub fn attribute(driver: &Driver, device: CUdevice, attribute: CUdevice_attribute) -> Result<i32> {
    attribute_number(driver, device, attribute as i32)
}

/// The driver's handle of device `ordinal` (`cuDeviceGet`; the driver validates the ordinal). The one
/// place that asks for it: device properties, primary contexts and the JNI seam all come here.
pub fn handle_of(driver: &Driver, ordinal: i32) -> Result<CUdevice> {
    if let Some(device) = known_handle(ordinal) {
        return Ok(device);
    }
    let mut device = 0;
    // SAFETY: out-pointer is a valid local; the driver validates the ordinal.
    unsafe { driver.cuDeviceGet(&mut device, ordinal) }?;
    if let (Some(slot), Some(plus_one)) = (kept(&HANDLES, ordinal), device.checked_add(1)) {
        slot.store(plus_one, Ordering::Relaxed);
    }
    Ok(device)
}

/// Attribute number `attribute` (a raw `CUdevice_attribute`, as Java passes it) of device `ordinal`.
pub fn attribute_of(driver: &Driver, ordinal: i32, attribute: i32) -> Result<i32> {
    attribute_number(driver, handle_of(driver, ordinal)?, attribute)
}

fn attribute_number(driver: &Driver, device: CUdevice, attribute: i32) -> Result<i32> {
    let mut value = 0;
    // SAFETY: out-pointer is a valid local; the driver validates `device` and the attribute number.
    unsafe { driver.cuDeviceGetAttribute(&mut value, attribute, device) }?;
    Ok(value)
}

fn read(driver: &Driver, ordinal: CUdevice) -> Result<DeviceInfo> {
    use CUdevice_attribute::*;
    let device = handle_of(driver, ordinal)?;
    let mut name = [0 as std::ffi::c_char; 256];
    // SAFETY: the buffer holds 256 bytes and the driver writes at most that many, NUL-terminated.
    unsafe { driver.cuDeviceGetName(name.as_mut_ptr(), name.len() as i32, device) }?;
    // SAFETY: the driver NUL-terminated the name inside the buffer.
    let name = unsafe { CStr::from_ptr(name.as_ptr()) }.to_string_lossy().into_owned();
    let mut total_memory = 0;
    // SAFETY: out-pointer is a valid local.
    unsafe { driver.cuDeviceTotalMem(&mut total_memory, device) }?;
    let a = |attr| attribute(driver, device, attr);
    Ok(DeviceInfo {
        ordinal,
        name,
        total_memory,
        compute_capability: (a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?, a(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?),
        multiprocessors: a(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
        max_threads_per_block: a(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
        max_block: [
            a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
            a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
            a(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
        ],
        max_grid: [a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?, a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?, a(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?],
        max_shared_per_block: a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
        memory_pools: a(CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED)? != 0,
        max_shared_per_block_optin: a(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
        cooperative_launch: a(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH)? != 0,
    })
}
