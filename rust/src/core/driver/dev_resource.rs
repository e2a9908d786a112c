//! `CUdevResource` (CUDA 12.4+, "Green Contexts" of the driver API): a device's SMs, or a group of
//! them split off, as the green-context entry points of the driver floor read and write it.
//!
//! Written by hand: cudarc has the type only with its cuda-12040 feature, and this crate builds
//! against the 12.0 bindings. The constants equal CUDA 12.4's cuda.h (`CUdevResourceType`,
//! `CUgreenCtxCreate_flags`); the layout is the 12.4 ABI the entry points are looked up for.

use std::ffi::{c_int, c_uint};

/// `CU_DEV_RESOURCE_TYPE_SM`.
pub const RESOURCE_TYPE_SM: c_int = 1;
/// `CU_GREEN_CTX_DEFAULT_STREAM`, required by `cuGreenCtxCreate`.
pub const GREEN_CTX_DEFAULT_STREAM: c_uint = 1;
/// `CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION` (915 in CUDA 12.4's cuda.h, absent from the 12.0
/// bindings this crate builds against): a split asked for more SMs than the input holds.
pub const CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION: i32 = 915;
/// Offset of `CUdevResource.sm.smCount` in the 12.4 layout: `type` (4 bytes), 92 bytes of
/// internal padding, then the union whose first member is the SM resource.
const SM_COUNT_OFFSET: usize = 96;

/// Room for one `CUdevResource` (144 bytes in the 12.4 ABI), generously sized and zeroed, so a
/// later driver's larger layout still fits what it writes.
#[repr(C, align(8))]
pub struct DevResource([u8; 1024]);

impl DevResource {
    pub fn new() -> DevResource {
        DevResource([0; 1024])
    }

    /// The SMs this resource holds (`sm.smCount`).
    pub fn sm_count(&self) -> u32 {
        let mut bytes = [0u8; 4];
        bytes.copy_from_slice(&self.0[SM_COUNT_OFFSET..SM_COUNT_OFFSET + 4]);
        u32::from_ne_bytes(bytes)
    }
}

impl Default for DevResource {
    fn default() -> DevResource {
        DevResource::new()
    }
}
