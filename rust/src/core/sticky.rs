//! Sticky errors (H11): after an illegal address, a failed launch and the like, the driver keeps
//! failing every call in the affected context. We remember which context it was so that every
//! later call of every handle bound to it fails fast, naming the original cause. Measured on the
//! H200 with driver 580: every *other* context of the process fails with the same code as well,
//! and a primary-context reset does not recover it; only a new process does. Handles of other
//! contexts therefore get the driver's own error (never a crash), and the message says so.

use crate::core::error::{Error, Result};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// Codes whose cuda.h documentation says the context (or process) is left unusable; the Java
/// enum `CudaError.isSticky()` marks the same set (a Java test compares them).
pub const STICKY_CODES: &[i32] = &[
    226, // CUDA_ERROR_CONTAINED
    700, // CUDA_ERROR_ILLEGAL_ADDRESS
    702, // CUDA_ERROR_LAUNCH_TIMEOUT
    710, // CUDA_ERROR_ASSERT ("the context cannot be used anymore")
    714, // CUDA_ERROR_HARDWARE_STACK_ERROR
    715, // CUDA_ERROR_ILLEGAL_INSTRUCTION
    716, // CUDA_ERROR_MISALIGNED_ADDRESS
    717, // CUDA_ERROR_INVALID_ADDRESS_SPACE
    718, // CUDA_ERROR_INVALID_PC
    719, // CUDA_ERROR_LAUNCH_FAILED
    721, // CUDA_ERROR_TENSOR_MEMORY_LEAK
    810, // CUDA_ERROR_MPS_CLIENT_TERMINATED
    911, // CUDA_ERROR_EXTERNAL_DEVICE
];

pub fn is_sticky(code: i32) -> bool {
    STICKY_CODES.contains(&code)
}

struct Poisoned {
    context_id: u64,
    code: i32,
    description: String,
    operation: String,
}

// The fast path reads only the flag: no lock unless some context was ever poisoned.
static ANY: AtomicBool = AtomicBool::new(false);
static POISONED: Mutex<Vec<Poisoned>> = Mutex::new(Vec::new());

/// Remembers a sticky `code` (with the driver's `description` of it) seen in `operation`.
pub fn record(context_id: u64, code: i32, description: &str, operation: &str) {
    if !is_sticky(code) {
        return;
    }
    let first = match POISONED.lock() {
        Ok(mut list) if !list.iter().any(|p| p.context_id == context_id) => {
            list.push(Poisoned { context_id, code, description: description.to_string(), operation: operation.to_string() });
            ANY.store(true, Ordering::Release);
            true
        }
        _ => false,
    };
    // Logged after the lock is released: no log sink may run under a lock of ours (rule L4).
    if first {
        log::error!("context id {context_id} hit sticky error {code} in {operation}; it is unusable from now on");
    }
}

/// H11's check on every activation: one atomic load while no context of the process has hit a
/// sticky error (always inlined; the look-up after one did is out of line).
#[inline(always)]
pub fn check(context_id: u64) -> Result<()> {
    if !ANY.load(Ordering::Acquire) {
        return Ok(());
    }
    check_poisoned(context_id)
}

#[cold]
#[inline(never)]
fn check_poisoned(context_id: u64) -> Result<()> {
    let list = match POISONED.lock() {
        Ok(l) => l,
        Err(_) => return Ok(()),
    };
    match list.iter().find(|p| p.context_id == context_id) {
        Some(p) => Err(Error::cuda(
            p.code,
            "using a context after a sticky error",
            format!(
                "context id {} hit {} in {}: the driver keeps failing every call in it (and, as measured on driver 580, in every other context of the process); restart the process",
                p.context_id, p.description, p.operation
            ),
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sticky_error_poisons_only_its_own_context() {
        // Context ids are unique per process; these are far from any real one.
        record(u64::MAX - 1, 1, "CUDA_ERROR_INVALID_VALUE (1)", "cuMemAlloc"); // not sticky
        assert!(check(u64::MAX - 1).is_ok());
        record(u64::MAX - 2, 700, "CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access", "cuStreamSynchronize");
        let err = check(u64::MAX - 2).expect_err("poisoned");
        assert_eq!(err.cuda_code(), Some(700));
        assert!(err.to_string().contains("cuStreamSynchronize") && err.to_string().contains("CUDA_ERROR_ILLEGAL_ADDRESS"), "{err}");
        assert!(check(u64::MAX - 3).is_ok());
    }
}
