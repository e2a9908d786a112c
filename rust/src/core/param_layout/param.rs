//! One kernel parameter as the image readers (`ptx`, `cubin`) find it.

/// One kernel parameter: its offset in the parameter area and its size, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Param {
    pub offset: usize,
    pub size: usize,
}
