//! How every native method runs its body (`entry!`): inside jni's `with_env`, which catches
//! panics, with log records deferred until the body has returned (`logging`), and with every
//! error or panic thrown as the Java exception `throw` picks. `entry_without_env!` does the same
//! for the hottest bodies that need no `Env`, entering `with_env` only to throw.

/// Runs an entry's body with the log records it makes held back until it has returned (or
/// unwound), when they go to Java (see `logging::DeferRecords`). Both entry macros run bodies
/// through this.
#[inline]
pub(crate) fn with_records_deferred<T>(body: impl FnOnce() -> crate::jni::throw::JniResult<T>) -> crate::jni::throw::JniResult<T> {
    let _records = crate::jni::logging::DeferRecords::begin();
    body()
}

/// Runs `body` as a native method's body: panics and errors become Java exceptions, the return
/// value on failure is the type's default (ignored by Java because an exception is pending),
/// and log records made meanwhile reach Java only once the body has returned (see
/// `logging::DeferRecords`).
macro_rules! entry {
    ($env:ident, |$e:ident| $body:expr) => {{
        let mut unowned = $env;
        unowned
            .with_env(|$e: &mut jni::Env| -> $crate::jni::throw::JniResult<_> {
                $crate::jni::entry::with_records_deferred(|| -> $crate::jni::throw::JniResult<_> { $body })
            })
            .resolve::<$crate::jni::throw::ThrowJava>()
    }};
}
pub(crate) use entry;

/// `entry!` for a body that needs no `Env` (it converts nothing and makes no Java object), on the
/// hottest calls (allocate, memset, free: three per allocation round; the handle's own entries).
/// The body runs under `catch_unwind` with its log records deferred, as `entry!` runs it, but
/// outside jni's attach guard, whose thread-local bookkeeping costs about 25 ns per call (issue
/// 19's churn profile; about 40 ns on the stand-in in issue 35's, docs/performance-notes.md);
/// only an error or a panic enters `with_env`, which throws it exactly as `entry!` does (a panic
/// is resumed inside it, so jni's own panic handling sees it).
macro_rules! entry_without_env {
    ($env:ident, || $body:expr) => {{
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            $crate::jni::entry::with_records_deferred(|| -> $crate::jni::throw::JniResult<_> { $body })
        }));
        match outcome {
            Ok(Ok(value)) => value,
            failed => {
                let mut unowned = $env;
                unowned
                    .with_env(|_e: &mut jni::Env| -> $crate::jni::throw::JniResult<_> {
                        match failed {
                            Ok(result) => result,
                            Err(panic) => std::panic::resume_unwind(panic),
                        }
                    })
                    .resolve::<$crate::jni::throw::ThrowJava>()
            }
        }
    }};
}
pub(crate) use entry_without_env;
