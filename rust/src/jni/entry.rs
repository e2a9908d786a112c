//! How every native method runs its body (`entry!`): inside jni's `with_env`, which catches
//! panics, with log records deferred until the body has returned (`logging`), and with every
//! error or panic thrown as the Java exception `throw` picks.

/// Runs `body` as a native method's body: panics and errors become Java exceptions, the return
/// value on failure is the type's default (ignored by Java because an exception is pending),
/// and log records made meanwhile reach Java only once the body has returned (see
/// `logging::DeferRecords`).
macro_rules! entry {
    ($env:ident, |$e:ident| $body:expr) => {{
        let mut unowned = $env;
        unowned
            .with_env(|$e: &mut jni::Env| -> $crate::jni::throw::JniResult<_> {
                let records = $crate::jni::logging::DeferRecords::begin();
                #[allow(clippy::redundant_closure_call)]
                let result = (|| -> $crate::jni::throw::JniResult<_> { $body })();
                drop(records);
                result
            })
            .resolve::<$crate::jni::throw::ThrowJava>()
    }};
}
pub(crate) use entry;
