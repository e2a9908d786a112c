//! The shape of a kernel launch and the `CUlaunchConfig` and `CUlaunchAttribute` structures of
//! cuda.h (laid out as there) that `cuLaunchKernelEx` takes, built on the stack: a launch
//! allocates nothing.

use cudarc::driver::sys::{CUlaunchAttributeID, CUstream};

// The attribute ids, from cudarc's bindgen of cuda.h rather than written by hand.
const LAUNCH_ATTRIBUTE_COOPERATIVE: u32 = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_COOPERATIVE as u32;
const LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION: u32 = CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION as u32;
const LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION: u32 =
    CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION as u32;

#[derive(Debug, Clone, Copy)]
pub struct LaunchShape {
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub shared_bytes: u32,
    /// Grid-wide synchronisation (`cooperative_groups::this_grid().sync()`) is allowed.
    pub cooperative: bool,
    /// Thread-block cluster size in blocks; `[0, 0, 0]` launches without clusters.
    pub cluster: [u32; 3],
    /// A programmatic dependent launch: the driver may schedule the kernel before the one ahead of
    /// it on the stream has completed. Only for kernels that execute `griddepcontrol.wait` before
    /// touching memory (kernels/blas1.cu's `cuh_dependent_launch_begin`, compute capability 9.0+),
    /// or they could read what the kernel ahead has not written yet.
    pub dependent: bool,
}

impl LaunchShape {
    /// A 1-D grid of `blocks` blocks of `threads` threads, no shared memory, no attributes.
    pub fn linear(blocks: u32, threads: u32) -> LaunchShape {
        LaunchShape {
            grid: [blocks, 1, 1],
            block: [threads, 1, 1],
            shared_bytes: 0,
            cooperative: false,
            cluster: [0, 0, 0],
            dependent: false,
        }
    }

    /// Whether the launch needs `cuLaunchKernelEx` (cooperative, clustered or dependent).
    pub fn needs_attributes(&self) -> bool {
        self.cooperative || self.cluster != [0, 0, 0] || self.dependent
    }
}

/// `CUlaunchAttribute` of cuda.h: a 4-byte id, padding to 8, and a 64-byte value union (which
/// holds pointers, hence the 8-byte alignment).
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub struct LaunchAttribute {
    id: u32,
    pad: u32,
    value: [u32; 16],
}

/// `CUlaunchConfig` of cuda.h.
#[repr(C)]
pub struct LaunchConfig {
    pub(super) grid: [u32; 3],
    pub(super) block: [u32; 3],
    pub(super) shared_bytes: u32,
    pub(super) stream: CUstream,
    pub(super) attrs: *mut LaunchAttribute,
    pub(super) num_attrs: u32,
}

/// The attributes a shape asks for, in a fixed array (no allocation); returns how many are used.
pub fn attributes(shape: &LaunchShape) -> ([LaunchAttribute; 3], u32) {
    let empty = LaunchAttribute { id: 0, pad: 0, value: [0; 16] };
    let mut attrs = [empty; 3];
    let mut n = 0;
    if shape.cooperative {
        attrs[n].id = LAUNCH_ATTRIBUTE_COOPERATIVE;
        attrs[n].value[0] = 1; // the `int cooperative` member
        n += 1;
    }
    if shape.cluster != [0, 0, 0] {
        attrs[n].id = LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
        attrs[n].value[..3].copy_from_slice(&shape.cluster); // `struct { unsigned x, y, z; } clusterDim`
        n += 1;
    }
    if shape.dependent {
        attrs[n].id = LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
        attrs[n].value[0] = 1; // `int programmaticStreamSerializationAllowed`
        n += 1;
    }
    (attrs, n as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn launch_structures_have_the_layout_of_cuda_h() {
        assert_eq!(std::mem::size_of::<LaunchAttribute>(), 72);
        assert_eq!(std::mem::size_of::<LaunchConfig>(), 56);
        assert_eq!(std::mem::offset_of!(LaunchConfig, stream), 32);
        assert_eq!(std::mem::offset_of!(LaunchConfig, attrs), 40);
        assert_eq!(std::mem::offset_of!(LaunchConfig, num_attrs), 48);
        assert_eq!(std::mem::offset_of!(LaunchAttribute, value), 8);
    }

    #[test]
    fn attributes_follow_the_shape() {
        let plain = LaunchShape::linear(4, 32);
        assert!(!plain.needs_attributes());
        let both = LaunchShape { cooperative: true, cluster: [2, 1, 1], ..plain };
        let (attrs, n) = attributes(&both);
        assert_eq!(n, 2);
        assert_eq!((attrs[0].id, attrs[0].value[0]), (LAUNCH_ATTRIBUTE_COOPERATIVE, 1));
        assert_eq!((attrs[1].id, &attrs[1].value[..3]), (LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &[2u32, 1, 1][..]));
        let dependent = LaunchShape { dependent: true, ..plain };
        assert!(dependent.needs_attributes());
        let (attrs, n) = attributes(&dependent);
        assert_eq!((n, attrs[0].id, attrs[0].value[0]), (1, LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION, 1));
    }
}
