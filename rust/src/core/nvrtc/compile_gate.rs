//! One NVRTC compilation at a time, for NVRTC releases that need it, with a bounded wait.
//!
//! NVRTC 12 and later document that distinct programs may be compiled concurrently, so they get
//! no gate at all. Older releases (cuhandle accepts 11.2+) say nothing, so their compilations
//! take turns; a caller waits at most a bounded time for its turn and then fails with a
//! `CUDA_ERROR_TIMEOUT` that says why, instead of one slow compile stalling every other one
//! without end.

use crate::core::error::{Error, Result, CUDA_ERROR_TIMEOUT};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

pub struct CompileGate {
    busy: Mutex<bool>,
    freed: Condvar,
}

/// The turn of one compilation; the next waiter goes when it drops.
pub struct Turn<'a> {
    gate: &'a CompileGate,
}

impl CompileGate {
    pub const fn new() -> CompileGate {
        CompileGate { busy: Mutex::new(false), freed: Condvar::new() }
    }

    /// Waits up to `wait` for the gate; `None` when another compilation held it all that time.
    pub fn enter(&self, wait: Duration) -> Option<Turn<'_>> {
        // A panic while holding the flag's lock cannot leave it half-changed: it is one bool.
        let busy = self.busy.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let (mut busy, timeout) = self.freed.wait_timeout_while(busy, wait, |busy| *busy).unwrap_or_else(|poisoned| poisoned.into_inner());
        if timeout.timed_out() && *busy {
            return None;
        }
        *busy = true;
        Some(Turn { gate: self })
    }

    /// As [`enter`](Self::enter), failing with the error that names the wait and its reason.
    pub fn enter_or_fail(&self, wait: Duration, version: &str) -> Result<Turn<'_>> {
        self.enter(wait).ok_or_else(|| {
            Error::cuda(
                CUDA_ERROR_TIMEOUT,
                "nvrtcCompileProgram",
                format!(
                    "another NVRTC compilation in this process held NVRTC for over {wait:?}; NVRTC {version} compiles one program at a time \
                     (NVRTC 12 and later compile concurrently). Try again, or compile the slow program ahead of time"
                ),
            )
        })
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let mut busy = self.gate.busy.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        *busy = false;
        self.gate.freed.notify_one();
    }
}

/// Whether NVRTC `major`.x needs its compilations to take turns.
pub fn needs_turns(major: i32) -> bool {
    major < 12
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::time::Instant;

    #[test]
    fn a_second_compilation_waits_for_the_first_and_then_runs() {
        let gate = Arc::new(CompileGate::new());
        let first = gate.enter(Duration::from_secs(1)).expect("free gate");
        let waiter = {
            let gate = Arc::clone(&gate);
            std::thread::spawn(move || gate.enter(Duration::from_secs(30)).is_some())
        };
        std::thread::sleep(Duration::from_millis(50));
        drop(first);
        assert!(waiter.join().expect("no panic"), "the waiter got its turn once the first ended");
    }

    /// Issue 26 (3): one slow compile no longer stalls the others without end.
    #[test]
    fn a_wait_is_bounded_and_fails_with_a_timeout_that_says_why() {
        let gate = CompileGate::new();
        let _slow = gate.enter(Duration::from_secs(1)).expect("free gate");
        let start = Instant::now();
        let err = gate.enter_or_fail(Duration::from_millis(100), "11.8").err().expect("the gate stays held");
        assert!(start.elapsed() >= Duration::from_millis(100));
        assert_eq!(err.cuda_code(), Some(CUDA_ERROR_TIMEOUT));
        let text = err.to_string();
        assert!(text.contains("NVRTC 11.8 compiles one program at a time") && text.contains("over 100ms"), "{text}");
    }

    #[test]
    fn only_nvrtc_before_12_takes_turns() {
        assert!(needs_turns(11));
        assert!(!needs_turns(12));
        assert!(!needs_turns(13));
    }
}
