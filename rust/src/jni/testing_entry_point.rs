//! Test-only: driver entry points the library itself does not bind (green contexts, the module
//! loading mode), looked up by name with `cuGetProcAddress` for a given CUDA version. The tests use
//! them to probe what a driver does; the shipped library binds none of them.

use crate::core::driver;
use crate::core::error::Result;
use cudarc::driver::sys::{CUdriverProcAddressQueryResult, CUdriverProcAddress_flags};
use std::ffi::{c_char, c_int, c_void, CString};
use std::sync::OnceLock;

type GetProcAddress = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> c_int;

/// The loaded libcuda opened once more by its path (the dynamic linker hands back the mapping it
/// already has) with its `cuGetProcAddress_v2`; kept for the life of the process so that every
/// pointer looked up through it stays valid. `None` if the driver does not export it.
static GET_PROC_ADDRESS: OnceLock<Option<(libloading::Library, GetProcAddress)>> = OnceLock::new();

/// The entry point `symbol` in the version the driver gives callers built for `cuda_version`
/// (e.g. 12040), or `None` if this driver lacks it.
///
/// # Safety
/// `F` must be the `extern "C"` function pointer type that cuda.h of `cuda_version` declares for
/// `symbol`.
pub(crate) unsafe fn lookup<F: Copy>(symbol: &str, cuda_version: i32) -> Result<Option<F>> {
    const { assert!(std::mem::size_of::<F>() == std::mem::size_of::<*mut c_void>(), "entry points are plain function pointers") };
    let d = driver::initialised()?;
    let get_proc = GET_PROC_ADDRESS.get_or_init(|| {
        // SAFETY: the library is the driver this process already loaded and initialised; opening it
        // again runs no initialiser a second time.
        let library = unsafe { libloading::Library::new(&d.path) }.ok()?;
        // SAFETY: cuGetProcAddress_v2 has this signature in every driver that exports it (12.0+).
        let get_proc = unsafe { library.get::<GetProcAddress>(b"cuGetProcAddress_v2\0") }.ok().map(|s| *s)?;
        Some((library, get_proc))
    });
    let Some((_, get_proc)) = get_proc else {
        return Ok(None);
    };
    let Ok(name) = CString::new(symbol) else {
        return Ok(None);
    };
    let mut pfn: *mut c_void = std::ptr::null_mut();
    let mut status: c_int = 0;
    // SAFETY: `name` is NUL-terminated; the out-pointers are valid locals.
    let rc = unsafe {
        get_proc(name.as_ptr(), &mut pfn, cuda_version, CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT as u64, &mut status)
    };
    if rc != 0 || status != CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS as c_int || pfn.is_null() {
        return Ok(None);
    }
    // SAFETY: the sizes are equal (checked at compile time above) and the caller promises that `F` is the entry
    // point's type.
    Ok(Some(unsafe { std::mem::transmute_copy::<*mut c_void, F>(&pfn) }))
}
