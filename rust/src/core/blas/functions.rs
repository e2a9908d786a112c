//! The BLAS kernels: looked up once per process in the built-in library (`CUkernel`s are
//! context-independent), and their instances per context (`cuKernelGetFunction`), shared by the
//! handles of that context. Launching the context's own `CUfunction` spares the driver resolving
//! a `CUkernel` to it on every launch.

use super::op::{Op, Precision};
use crate::core::context::Context;
use crate::core::error::Result;
use crate::core::kernels;
use crate::core::launch;
use cudarc::driver::sys::{CUfunction, CUkernel};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

/// The 16 kernels, looked up once per process from the built-in library (by name alone: their
/// parameters are kernels/blas1.cu's, so nothing asks the driver for them).
struct Kernels([CUkernel; KERNEL_COUNT]);
// SAFETY: CUkernel handles are process-wide and context-independent.
unsafe impl Send for Kernels {}
// SAFETY: as above; the array is immutable after initialisation.
unsafe impl Sync for Kernels {}

const KERNEL_COUNT: usize = 16;
static KERNELS: OnceLock<Kernels> = OnceLock::new();

/// Where (op, precision) sits in `Kernels` and `Functions`.
fn kernel_index(op: Op, p: Precision) -> usize {
    Op::ALL.iter().position(|&o| o == op).unwrap_or(0) * 2 + (p == Precision::F64) as usize
}

fn kernels() -> Result<&'static Kernels> {
    if let Some(k) = KERNELS.get() {
        return Ok(k);
    }
    let library = kernels::builtin()?;
    let mut all = [std::ptr::null_mut(); KERNEL_COUNT];
    for op in Op::ALL {
        for p in [Precision::F32, Precision::F64] {
            all[kernel_index(op, p)] = library.kernel_ref(&op.kernel_name(p))?.raw();
        }
    }
    Ok(KERNELS.get_or_init(|| Kernels(all)))
}

/// The 16 kernels' instances in one context. Sound to keep while that context lives, because the
/// built-in library is never unloaded; a context id is never given to another context, and a
/// handle whose context was destroyed or reset fails validation (H8) before it could launch a
/// function of the old one.
pub struct Functions([CUfunction; KERNEL_COUNT]);
// SAFETY: CUfunction handles may be used from any thread in their context; immutable once made.
unsafe impl Send for Functions {}
// SAFETY: as above.
unsafe impl Sync for Functions {}

/// The functions made per context id, for as long as a handle of that context keeps them.
static BY_CONTEXT: Mutex<Vec<(u64, Weak<Functions>)>> = Mutex::new(Vec::new());

/// The functions of `ctx` if a handle of it still keeps them.
fn known(ctx: &Context) -> Option<Arc<Functions>> {
    let mut known = BY_CONTEXT.lock().unwrap_or_else(PoisonError::into_inner);
    known.retain(|(_, functions)| functions.strong_count() > 0);
    known.iter().find(|(id, _)| *id == ctx.id()).and_then(|(_, functions)| functions.upgrade())
}

impl Functions {
    /// The functions of `ctx`, made on the first use in that context; the context must be active.
    pub fn of(ctx: &Context) -> Result<Arc<Functions>> {
        if let Some(functions) = known(ctx) {
            return Ok(functions);
        }
        // Made without the lock, which no driver call is made under; two threads may both get
        // here: they make the same functions, and the first one kept is used by both.
        let kernels = kernels()?;
        let mut all = [std::ptr::null_mut(); KERNEL_COUNT];
        for (function, kernel) in all.iter_mut().zip(kernels.0) {
            *function = launch::function_in_active_context(ctx, kernel)?;
        }
        let mut known = BY_CONTEXT.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(functions) = known.iter().find(|(id, _)| *id == ctx.id()).and_then(|(_, functions)| functions.upgrade()) {
            return Ok(functions);
        }
        let functions = Arc::new(Functions(all));
        known.push((ctx.id(), Arc::downgrade(&functions)));
        Ok(functions)
    }

    /// The function to launch for (op, p).
    #[inline]
    pub fn get(&self, op: Op, p: Precision) -> CUfunction {
        self.0[kernel_index(op, p)]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kernel_has_its_own_slot() {
        let mut seen = [false; KERNEL_COUNT];
        for op in Op::ALL {
            for p in [Precision::F32, Precision::F64] {
                let i = kernel_index(op, p);
                assert!(i < KERNEL_COUNT && !seen[i], "{op:?} {p:?} -> {i}");
                seen[i] = true;
            }
        }
        assert!(seen.iter().all(|&s| s));
    }
}
