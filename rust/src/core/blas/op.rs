//! The BLAS operations and precisions, and the names of their kernels in `kernels/blas1.cu`.

use crate::core::error::{Error, Result};
use crate::core::kernels::abi;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F32,
    F64,
}

impl Precision {
    pub fn from_code(code: i32) -> Result<Precision> {
        match code {
            4 => Ok(Precision::F32),
            8 => Ok(Precision::F64),
            other => Err(Error::invalid_argument(format!("element size {other}; expected 4 (float) or 8 (double)"))),
        }
    }
    pub fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
    fn prefix(self) -> char {
        match self {
            Precision::F32 => 's',
            Precision::F64 => 'd',
        }
    }
    pub(super) fn reduce_elements_per_thread(self) -> usize {
        match self {
            Precision::F32 => abi::CUH_REDUCE_ELEMENTS_PER_THREAD_F32,
            Precision::F64 => abi::CUH_REDUCE_ELEMENTS_PER_THREAD_F64,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Scal,
    Axpy,
    Copy,
    Swap,
    Dot,
    Nrm2,
    Asum,
    Iamax,
}

impl Op {
    pub(super) const ALL: [Op; 8] = [Op::Scal, Op::Axpy, Op::Copy, Op::Swap, Op::Dot, Op::Nrm2, Op::Asum, Op::Iamax];
    fn name(self) -> &'static str {
        match self {
            Op::Scal => "scal",
            Op::Axpy => "axpy",
            Op::Copy => "copy",
            Op::Swap => "swap",
            Op::Dot => "dot",
            Op::Nrm2 => "nrm2",
            Op::Asum => "asum",
            Op::Iamax => "amax",
        }
    }
    pub(super) fn is_reduction(self) -> bool {
        matches!(self, Op::Dot | Op::Nrm2 | Op::Asum | Op::Iamax)
    }
    /// The kernel's C name, e.g. cuh_saxpy, cuh_idamax.
    pub(super) fn kernel_name(self, p: Precision) -> String {
        match self {
            Op::Iamax => format!("cuh_i{}amax", p.prefix()),
            _ => format!("cuh_{}{}", p.prefix(), self.name()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_names_match_blas1_cu() {
        assert_eq!(Op::Axpy.kernel_name(Precision::F32), "cuh_saxpy");
        assert_eq!(Op::Iamax.kernel_name(Precision::F64), "cuh_idamax");
        assert_eq!(Op::Nrm2.kernel_name(Precision::F64), "cuh_dnrm2");
        let source = include_str!("../../../../kernels/blas1.cu");
        for op in Op::ALL {
            for p in [Precision::F32, Precision::F64] {
                let name = op.kernel_name(p);
                assert!(source.contains(&format!(" {name}(")), "blas1.cu defines {name}");
            }
        }
    }
}
