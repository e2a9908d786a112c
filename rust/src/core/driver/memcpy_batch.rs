//! `CUmemcpyAttributes` (CUDA 12.8+, "Memory Management" of the driver API): the attributes a
//! batch of copies takes in `cuMemcpyBatchAsync`, as the driver floor passes them.
//!
//! Written by hand: cudarc has the type only with its cuda-12080 feature, and this crate builds
//! against the 12.0 bindings. The layout is CUDA 12.8's cuda.h:
//!
//! ```c
//! typedef struct CUmemLocation_st { CUmemLocationType type; int id; } CUmemLocation;
//! typedef struct CUmemcpyAttributes_st {
//!     CUmemcpySrcAccessOrder srcAccessOrder;  // enum: 4 bytes
//!     CUmemLocation srcLocHint;               // 8 bytes
//!     CUmemLocation dstLocHint;               // 8 bytes
//!     unsigned int flags;
//! } CUmemcpyAttributes;                       // 24 bytes, 4-byte aligned
//! ```
//!
//! The entry point is looked up for CUDA 12.8 (`since 12080` in the table), whose ABI is
//! `cuMemcpyBatchAsync(dsts, srcs, sizes, count, attrs, attrsIdxs, numAttrs, failIdx, hStream)`;
//! CUDA 13.0's header maps the name to `cuMemcpyBatchAsync_v2`, the same without `failIdx`, which
//! `cuGetProcAddress` hands out only to callers that ask for 13.0 or later.

use std::ffi::{c_int, c_uint};

/// `CU_MEMCPY_SRC_ACCESS_ORDER_STREAM`: the source is read in stream order, as a plain
/// `cuMemcpyHtoDAsync` reads it (the staging slot was filled before the call, and a download's
/// device source was written by work queued before it).
pub const SRC_ACCESS_ORDER_STREAM: c_uint = 1;

/// `CUmemLocation`: a location hint; `type` 0 (`CU_MEM_LOCATION_TYPE_INVALID`) gives none, which
/// is what pinned staging memory and device allocations take (the hints are for managed memory).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MemLocation {
    pub kind: c_int,
    pub id: c_int,
}

/// `CUmemcpyAttributes` in the 12.8 layout (the module comment shows it).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct MemcpyAttributes {
    pub src_access_order: c_uint,
    pub src_loc_hint: MemLocation,
    pub dst_loc_hint: MemLocation,
    pub flags: c_uint,
}

impl MemcpyAttributes {
    /// Copies read in stream order, no location hints, no flags: what every copy of a staged batch
    /// takes.
    pub fn stream_ordered() -> MemcpyAttributes {
        MemcpyAttributes { src_access_order: SRC_ACCESS_ORDER_STREAM, ..MemcpyAttributes::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_attributes_have_cuda_12_8_s_layout() {
        assert_eq!(std::mem::size_of::<MemLocation>(), 8);
        assert_eq!(std::mem::size_of::<MemcpyAttributes>(), 24);
        assert_eq!(std::mem::align_of::<MemcpyAttributes>(), 4);
        assert_eq!(std::mem::offset_of!(MemcpyAttributes, src_loc_hint), 4);
        assert_eq!(std::mem::offset_of!(MemcpyAttributes, dst_loc_hint), 12);
        assert_eq!(std::mem::offset_of!(MemcpyAttributes, flags), 20);
    }
}
