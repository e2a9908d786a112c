//! A number for the calling thread, unique in the process, for records kept per thread (the
//! driver's log lines, who holds an SM partition's context current).
//!
//! Not `std::thread::current().id()`: that may panic during a thread's teardown, and the driver's
//! log callback must never unwind; a const thread-local without a destructor is safe then.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering};

static NEXT: AtomicU64 = AtomicU64::new(1);

thread_local! {
    /// This thread's number (0: not given yet).
    static THIS: Cell<u64> = const { Cell::new(0) };
}

/// The calling thread's number: never 0, never another thread's.
pub fn this_thread() -> u64 {
    THIS.with(|t| {
        if t.get() == 0 {
            t.set(NEXT.fetch_add(1, Ordering::Relaxed));
        }
        t.get()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_keeps_its_number_and_another_thread_gets_another() {
        let mine = this_thread();
        assert_ne!(mine, 0);
        assert_eq!(this_thread(), mine);
        let other = std::thread::spawn(this_thread).join().expect("the other thread");
        assert_ne!(other, mine);
    }
}
