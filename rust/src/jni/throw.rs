//! The error policy of every JNI entry: core errors become the matching Java exception, panics
//! become a RuntimeException; nothing unwinds into the JVM.

use crate::core::error::{CudaFailure, Error};
use jni::errors::ErrorPolicy;
use jni::strings::JNIString;
use jni::sys::{jint, jobject, jvalue, JNIEnv};
use jni::Env;

/// What a JNI entry's closure can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Failure {
    #[error(transparent)]
    Core(#[from] Error),
    #[error("JNI: {0}")]
    Jni(#[from] jni::errors::Error),
}

pub type JniResult<T> = std::result::Result<T, Failure>;

/// Throws the Java exception that matches each failure.
#[derive(Debug, Default)]
pub struct ThrowJava;

impl<T: Default> ErrorPolicy<T, Failure> for ThrowJava {
    type Captures<'unowned_env_local: 'native_method, 'native_method> = ();

    fn on_error<'l: 'n, 'n>(env: &mut Env<'l>, _cap: &mut (), err: Failure) -> jni::errors::Result<T> {
        if env.exception_check() {
            return Ok(T::default()); // a Java exception is already on its way
        }
        let raw = env.get_raw();
        match err {
            Failure::Core(Error::Cuda(f)) => throw_cuda(raw, &f),
            Failure::Core(Error::InvalidArgument(m)) => throw_new(raw, "java/lang/IllegalArgumentException", &m),
            Failure::Core(Error::InvalidState(m)) => throw_new(raw, "java/lang/IllegalStateException", &m),
            Failure::Jni(e) => throw_new(raw, "java/lang/IllegalStateException", &format!("cuhandle JNI failure: {e}")),
        }
        Ok(T::default())
    }

    fn on_panic<'l: 'n, 'n>(env: &mut Env<'l>, _cap: &mut (), payload: Box<dyn std::any::Any + Send + 'static>) -> jni::errors::Result<T> {
        let text = LAST_PANIC.with(|p| p.borrow_mut().take()).unwrap_or_else(|| {
            payload
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| payload.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown panic payload".to_string())
        });
        if !env.exception_check() {
            throw_new(
                env.get_raw(),
                "java/lang/RuntimeException",
                &format!("cuhandle native code panicked (this is a bug in cuhandle): {text}"),
            );
        }
        Ok(T::default())
    }
}

thread_local! {
    /// The last panic's message with its source location, kept by `install_panic_hook`'s hook
    /// for the RuntimeException that `on_panic` throws.
    static LAST_PANIC: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Replaces the default panic hook (of this library's own copy of std), which prints to the
/// process's stderr, by one that keeps the message and location for the Java exception: every
/// panic happens inside a JNI entry, whose caller gets it as a RuntimeException, so printing it
/// as well would only put stray traces into the application's (or CI's) output.
pub fn install_panic_hook() {
    std::panic::set_hook(Box::new(|info| {
        let text = info.to_string();
        LAST_PANIC.with(|p| *p.borrow_mut() = Some(text));
    }));
}

/// `s` in the JVM's modified UTF-8, as `FindClass`, `GetMethodID`, `ThrowNew`, `NewStringUTF` and
/// every `...StringUTF` call take it: supplementary characters (emoji) become surrogate pairs and
/// NUL becomes `C0 80`, so the Java string equals `s` (an exception message may quote user input:
/// a program name, a kernel name, a path; standard UTF-8 handed to `NewStringUTF` is read as
/// garbage).
pub fn java_utf8(s: &str) -> JNIString {
    JNIString::new(s)
}

fn c_string(s: &str) -> JNIString {
    java_utf8(s)
}

/// Throws a new exception of `class` (a JNI class name) with `message`.
pub fn throw_new(env: *mut JNIEnv, class: &str, message: &str) {
    let (class, message) = (c_string(class), c_string(message));
    // SAFETY: `env` is the current thread's env (from with_env); no exception is pending; both
    // strings are NUL-terminated.
    unsafe {
        let cls = ((**env).v1_1.FindClass)(env, class.as_ptr());
        if !cls.is_null() {
            ((**env).v1_1.ThrowNew)(env, cls, message.as_ptr());
        }
    }
}

/// `new dev.cuhandle.CudaException(code, operation, message, driverLog)` and throw it.
fn throw_cuda(env: *mut JNIEnv, failure: &CudaFailure) {
    let class = c_string("dev/cuhandle/CudaException");
    let name = c_string("<init>");
    let sig = c_string("(ILjava/lang/String;Ljava/lang/String;Ljava/lang/String;)V");
    let (op, msg, log) = (c_string(&failure.operation), c_string(&failure.message), c_string(&failure.driver_log));
    // SAFETY: as in `throw_new`; every JNI result is checked for NULL before use.
    unsafe {
        let i = &**env;
        let cls = (i.v1_1.FindClass)(env, class.as_ptr());
        if cls.is_null() {
            return;
        }
        let ctor = (i.v1_1.GetMethodID)(env, cls, name.as_ptr(), sig.as_ptr());
        let jop = (i.v1_1.NewStringUTF)(env, op.as_ptr());
        let jmsg = (i.v1_1.NewStringUTF)(env, msg.as_ptr());
        let jlog = (i.v1_1.NewStringUTF)(env, log.as_ptr());
        if ctor.is_null() || jop.is_null() || jmsg.is_null() || jlog.is_null() {
            return; // an OutOfMemoryError or NoSuchMethodError is pending instead
        }
        let args = [
            jvalue { i: failure.code as jint },
            jvalue { l: jop as jobject },
            jvalue { l: jmsg as jobject },
            jvalue { l: jlog as jobject },
        ];
        let exception = (i.v1_1.NewObjectA)(env, cls, ctor, args.as_ptr());
        if !exception.is_null() {
            (i.v1_1.Throw)(env, exception);
        }
    }
}
