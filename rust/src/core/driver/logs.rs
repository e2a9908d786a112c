//! The driver's own words about a failure (CUDA 12.9+, "Error Log Management" of the driver API).
//!
//! A driver that has the logs API explains many failures in its error log, often naming the
//! parameter at fault, where `cuGetErrorString` gives only the code's generic text. cuhandle
//! registers one callback after `cuInit` (`cuLogsRegisterCallback`; unregistered when the library is
//! unloaded); the callback keeps the latest error-level lines with the thread that logged them, and a
//! failed call takes the lines its own thread logged since that thread's previous failure
//! (`Driver::check`, the error path only: the success path does not look). Lines of another thread
//! are never attached, so a driver that logged from a thread of its own would attach nothing rather
//! than something wrong. The log is the process's: a failure of another CUDA library (the runtime,
//! cuBLAS, JCuda) on the same thread since that thread's last cuhandle failure would be attached too.

use crate::core::thread_number::this_thread;
use std::collections::VecDeque;
use std::ffi::{c_char, c_int, c_void};
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Mutex;

/// `CUlogsCallback`: `(user data, CUlogLevel, message, length)`.
pub type LogsCallback = unsafe extern "C" fn(*mut c_void, c_int, *mut c_char, usize);

/// Lines kept for all threads together: a failure's lines are taken at once, so this only bounds
/// what other threads leave behind (failures of other CUDA libraries, threads that ended).
const KEPT_LINES: usize = 64;
/// The longest line kept, in bytes (the driver's lines are a sentence or two).
const LONGEST_LINE: usize = 1024;

struct Line {
    thread: u64,
    text: String,
}

/// `CU_LOG_LEVEL_ERROR`: lines of this level explain a failure; warnings (`CU_LOG_LEVEL_WARNING`) may
/// come from calls that succeeded, so they are not kept.
const LEVEL_ERROR: c_int = 0;

static LINES: Mutex<VecDeque<Line>> = Mutex::new(VecDeque::new());
/// The registration's `CUlogsCallbackHandle` (null: none).
static REGISTRATION: AtomicPtr<c_void> = AtomicPtr::new(std::ptr::null_mut());

/// The callback the driver calls with each error log line. It must not unwind into the driver, and
/// it does not: it copies the line, takes a lock that nothing holds while calling the driver, and
/// pushes. Nothing is logged from here (the log sink may call into Java).
///
/// # Safety
/// Called by the driver with `message` pointing to `length` readable bytes (or null).
pub unsafe extern "C" fn on_driver_log(_data: *mut c_void, level: c_int, message: *mut c_char, length: usize) {
    if level != LEVEL_ERROR || message.is_null() || length == 0 {
        return;
    }
    // SAFETY: the driver hands `length` readable bytes at `message` for the duration of the call.
    let bytes = unsafe { std::slice::from_raw_parts(message.cast::<u8>(), length.min(LONGEST_LINE)) };
    let text = String::from_utf8_lossy(bytes).trim_end_matches(['\0', '\n', ' ']).to_string();
    if text.is_empty() {
        return;
    }
    let thread = this_thread();
    let mut lines = LINES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if lines.len() == KEPT_LINES {
        lines.pop_front();
    }
    lines.push_back(Line { thread, text });
}

/// Keeps the registration's handle for `take_registration`.
pub fn remember_registration(handle: *mut c_void) {
    REGISTRATION.store(handle, Ordering::Release);
}

/// The registration's handle, once (None when there is none, or it was taken).
pub fn take_registration() -> Option<*mut c_void> {
    let handle = REGISTRATION.swap(std::ptr::null_mut(), Ordering::AcqRel);
    (!handle.is_null()).then_some(handle)
}

/// The lines this thread logged since it last took them, oldest first, joined by "; " (empty when
/// there are none, or the driver has no logs API).
pub fn take_for_this_thread() -> String {
    let thread = this_thread();
    let mut lines = LINES.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    if lines.is_empty() {
        return String::new();
    }
    let (mine, others): (VecDeque<Line>, VecDeque<Line>) = std::mem::take(&mut *lines).into_iter().partition(|l| l.thread == thread);
    *lines = others;
    drop(lines);
    mine.into_iter().map(|line| line.text).collect::<Vec<_>>().join("; ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(text: &str) {
        let mut bytes = text.as_bytes().to_vec();
        // SAFETY: `bytes` holds `len` readable bytes for the call.
        unsafe { on_driver_log(std::ptr::null_mut(), 0, bytes.as_mut_ptr().cast(), bytes.len()) };
    }

    // One test: the lines are process-wide, and a second test logging at the same time could push
    // these out of the bounded buffer.
    #[test]
    fn a_failure_takes_its_own_threads_lines_once_and_what_is_kept_is_bounded() {
        take_for_this_thread();
        log("cuMemcpyHtoDAsync: the destination range is out of bounds\n");
        log("second line\0");
        let other = std::thread::spawn(|| {
            log("another thread's line");
            take_for_this_thread()
        });
        assert_eq!(other.join().expect("the logging thread"), "another thread's line");
        assert_eq!(take_for_this_thread(), "cuMemcpyHtoDAsync: the destination range is out of bounds; second line");
        assert_eq!(take_for_this_thread(), "", "taken once");

        for i in 0..(KEPT_LINES * 3) {
            log(&format!("warning {i}"));
        }
        // SAFETY: a null message is refused before it is read; a warning is not read at all.
        unsafe { on_driver_log(std::ptr::null_mut(), 0, std::ptr::null_mut(), 5) };
        let mut warning = b"a warning of a call that succeeded".to_vec();
        // SAFETY: `warning` holds `len` readable bytes for the call.
        unsafe { on_driver_log(std::ptr::null_mut(), 1, warning.as_mut_ptr().cast(), warning.len()) };
        log("");
        let taken = take_for_this_thread();
        assert_eq!(taken.split("; ").count(), KEPT_LINES, "{taken}");
        assert!(taken.ends_with(&format!("warning {}", KEPT_LINES * 3 - 1)), "the newest lines are kept: {taken}");
    }
}
