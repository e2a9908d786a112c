//! Rust `log` records go to Java's `System.Logger` named `dev.cuhandle` (through the static
//! method `dev.cuhandle.NativeLog.log(int, String)`, which only queues the record: the logger and
//! any handler a user installed run later on cuhandle's logging thread, never inside a native
//! call and never under a native lock, rule L4). Records below the level Java enables are
//! dropped by `log`'s max-level check before any formatting, so disabled logging costs one
//! comparison.
//!
//! The class is held through a weak global reference: a strong one would keep cuhandle's class
//! loader alive for ever (no redeploy in an application server).

use jni::sys::{jclass, jmethodID, jobject, jvalue, JNIEnv, JavaVM, JNI_OK, JNI_VERSION_1_8};
use std::cell::{Cell, RefCell};
use std::ffi::c_void;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::OnceLock;

static VM: AtomicPtr<JavaVM> = AtomicPtr::new(std::ptr::null_mut());

/// The Java sink: a weak global reference to `NativeLog` and its `log` method.
struct Sink {
    class: usize, // jweak, as an integer so the struct is Send + Sync
    method: usize,
}
static SINK: OnceLock<Sink> = OnceLock::new();

thread_local! {
    /// Nesting depth of JNI entries on this thread; records made inside one wait in `PENDING`.
    static DEPTH: Cell<u32> = const { Cell::new(0) };
    static PENDING: RefCell<Vec<(i32, String)>> = const { RefCell::new(Vec::new()) };
}

/// Held for the body of every JNI entry (see `throw::entry!`): records made meanwhile — possibly
/// under a native lock — are handed to Java only when it drops, after the body has returned and
/// released every lock, and before the entry throws its exception, if any.
pub struct DeferRecords(());

impl DeferRecords {
    pub fn begin() -> DeferRecords {
        DEPTH.with(|d| d.set(d.get() + 1));
        DeferRecords(())
    }
}

impl Drop for DeferRecords {
    fn drop(&mut self) {
        let outermost = DEPTH.with(|d| {
            d.set(d.get().saturating_sub(1));
            d.get() == 0
        });
        if outermost {
            let records = PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()));
            for (level, text) in records {
                emit(level, &text);
            }
        }
    }
}

/// Remembers the VM (from `JNI_OnLoad`), through which records reach Java.
pub fn remember_vm(vm: *mut JavaVM) {
    VM.store(vm, Ordering::Release);
}

struct Bridge;
static BRIDGE: Bridge = Bridge;

impl log::Log for Bridge {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::max_level()
    }

    fn log(&self, record: &log::Record) {
        if !self.enabled(record.metadata()) {
            return;
        }
        let level = record.level() as i32; // Error=1 .. Trace=5
        let text = format!("{}", record.args());
        if DEPTH.with(|d| d.get()) > 0 {
            PENDING.with(|p| p.borrow_mut().push((level, text)));
        } else {
            emit(level, &text);
        }
    }

    fn flush(&self) {}
}

/// Installs the bridge. `max_level` follows `log::LevelFilter` numbering (0 = off .. 5 = trace).
///
/// # Safety
/// `env` must be the current thread's JNIEnv, called from a method of a class loaded by the
/// loader that can see `dev.cuhandle.NativeLog`.
pub unsafe fn install(env: *mut JNIEnv, max_level: i32) {
    let filter = match max_level {
        i32::MIN..=0 => log::LevelFilter::Off,
        1 => log::LevelFilter::Error,
        2 => log::LevelFilter::Warn,
        3 => log::LevelFilter::Info,
        4 => log::LevelFilter::Debug,
        _ => log::LevelFilter::Trace,
    };
    if SINK.get().is_none() {
        let (name, method, sig) = (c"dev/cuhandle/NativeLog", c"log", c"(ILjava/lang/String;)V");
        // SAFETY: caller's contract; results are checked for NULL.
        unsafe {
            let i = &**env;
            let local = (i.v1_1.FindClass)(env, name.as_ptr());
            if local.is_null() {
                (i.v1_1.ExceptionClear)(env);
                return;
            }
            let id = (i.v1_1.GetStaticMethodID)(env, local, method.as_ptr(), sig.as_ptr());
            if id.is_null() {
                (i.v1_1.ExceptionClear)(env);
                return;
            }
            let weak = (i.v1_2.NewWeakGlobalRef)(env, local);
            if weak.is_null() {
                (i.v1_1.ExceptionClear)(env);
                return;
            }
            let _ = SINK.set(Sink { class: weak as usize, method: id as usize });
        }
        let _ = log::set_logger(&BRIDGE);
    }
    log::set_max_level(filter);
}

fn emit(level: i32, text: &str) {
    let (vm, sink) = (VM.load(Ordering::Acquire), SINK.get());
    let (Some(sink), false) = (sink, vm.is_null()) else {
        eprintln!("cuhandle: {text}");
        return;
    };
    // Modified UTF-8, as NewStringUTF takes it: the record may quote a program name or NVRTC's log.
    let message = crate::jni::throw::java_utf8(text);
    // SAFETY: the VM pointer came from JNI_OnLoad; GetEnv only succeeds on attached threads (we
    // never attach threads for logging); the class is a global ref and the method id belongs to it.
    unsafe {
        let mut env: *mut c_void = std::ptr::null_mut();
        if ((**vm).v1_2.GetEnv)(vm, &mut env, JNI_VERSION_1_8) != JNI_OK {
            eprintln!("cuhandle: {text}");
            return;
        }
        let env = env as *mut JNIEnv;
        let i = &**env;
        if (i.v1_2.ExceptionCheck)(env) {
            // Calling Java now would be illegal; the exception being thrown says more anyway.
            eprintln!("cuhandle: {text}");
            return;
        }
        // A local reference keeps the class loaded for the call; NULL once it was unloaded.
        let class = (i.v1_2.NewLocalRef)(env, sink.class as jobject);
        if class.is_null() {
            return;
        }
        let jtext = (i.v1_1.NewStringUTF)(env, message.as_ptr());
        if !jtext.is_null() {
            let args = [jvalue { i: level }, jvalue { l: jtext }];
            (i.v1_1.CallStaticVoidMethodA)(env, class as jclass, sink.method as jmethodID, args.as_ptr());
            (i.v1_1.DeleteLocalRef)(env, jtext);
        }
        if (i.v1_2.ExceptionCheck)(env) {
            (i.v1_1.ExceptionClear)(env);
        }
        (i.v1_1.DeleteLocalRef)(env, class);
    }
}
