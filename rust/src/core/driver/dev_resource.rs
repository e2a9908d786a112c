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

/// Room each result of a split gets: more than any `CUdevResource` layout so far (144 bytes in the
/// 12.4 ABI), so a driver writing a larger one cannot overflow the room.
const ROOM_PER_RESOURCE: usize = 256;
/// The strides a split's results may have: the 12.4 ABI's 144 bytes, and 152 for a layout that
/// adds a pointer (`nextResource`). Which one the driver used is read back (see `settle`).
const STRIDES: [usize; 2] = [144, 152];

/// The results of one split into several groups (`cuDevSmResourceSplitByCount` with a result
/// array): written by the driver at its `CUdevResource` stride, found afterwards by reading each
/// result's type, so that the groups are read, and handed to `cuDevResourceGenerateDesc`, where the
/// driver put them.
pub struct DevResources {
    words: Vec<u64>,
    stride: usize,
}

impl DevResources {
    /// Zeroed room for `count` results.
    pub fn new(count: usize) -> DevResources {
        DevResources { words: vec![0; count.max(1) * ROOM_PER_RESOURCE / 8], stride: STRIDES[0] }
    }

    /// Where the driver writes the results.
    pub fn as_mut_ptr(&mut self) -> *mut DevResource {
        self.words.as_mut_ptr().cast()
    }

    /// After the driver wrote `written` results: finds the stride at which every one of them reads
    /// as an SM resource of at least `min_sms` SMs. False when none does (an unknown layout).
    pub fn settle(&mut self, written: usize, min_sms: u32) -> bool {
        for stride in STRIDES {
            self.stride = stride;
            if (0..written).all(|i| self.kind(i) == RESOURCE_TYPE_SM && self.sm_count(i) >= min_sms.max(1)) {
                return true;
            }
        }
        false
    }

    fn read_u32(&self, offset: usize) -> u32 {
        let bytes: &[u8] = bytemuck_bytes(&self.words);
        let mut word = [0u8; 4];
        word.copy_from_slice(&bytes[offset..offset + 4]);
        u32::from_ne_bytes(word)
    }

    fn kind(&self, i: usize) -> c_int {
        self.read_u32(i * self.stride) as c_int
    }

    /// The SMs of result `i`.
    pub fn sm_count(&self, i: usize) -> u32 {
        self.read_u32(i * self.stride + SM_COUNT_OFFSET)
    }

    /// Results `i..` as the driver's array, for `cuDevResourceGenerateDesc`.
    pub fn at(&mut self, i: usize) -> *mut DevResource {
        // SAFETY: `i * stride` lies inside the room of `i + 1 <= count` results (stride < ROOM_PER_RESOURCE).
        unsafe { self.words.as_mut_ptr().cast::<u8>().add(i * self.stride).cast() }
    }
}

/// The bytes of `words`.
fn bytemuck_bytes(words: &[u64]) -> &[u8] {
    // SAFETY: u8 has no alignment or validity requirements; the length covers exactly the words.
    unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), std::mem::size_of_val(words)) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(results: &mut DevResources, stride: usize, counts: &[u32]) {
        let base = results.as_mut_ptr().cast::<u8>();
        for (i, &count) in counts.iter().enumerate() {
            // SAFETY: inside the room of `counts.len()` results, which `results` was made for.
            unsafe {
                base.add(i * stride).cast::<i32>().write_unaligned(RESOURCE_TYPE_SM);
                base.add(i * stride + SM_COUNT_OFFSET).cast::<u32>().write_unaligned(count);
            }
        }
    }

    #[test]
    fn the_stride_the_driver_wrote_is_found_by_each_results_type() {
        for stride in STRIDES {
            let mut results = DevResources::new(4);
            write(&mut results, stride, &[32, 32, 32, 32]);
            assert!(results.settle(4, 8), "stride {stride}");
            assert_eq!((0..4).map(|i| results.sm_count(i)).collect::<Vec<_>>(), vec![32; 4]);
            assert_eq!(results.at(2) as usize - results.as_mut_ptr() as usize, 2 * stride);
        }
        let mut unknown = DevResources::new(3);
        write(&mut unknown, 200, &[8, 8, 8]);
        assert!(!unknown.settle(3, 8), "a layout of another stride is not read as groups");
    }
}
