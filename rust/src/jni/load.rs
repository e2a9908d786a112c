//! What the JVM calls when it loads the library (`System.load`), the only symbol the library
//! exports: it remembers the VM for the logging bridge, installs the panic hook and registers every
//! native method of the table (`natives`, `registration`); a table that does not fit the Java
//! classes fails the load with an `UnsatisfiedLinkError` naming the method. `JNI_OnUnload` (when the
//! class loader that loaded cuhandle is collected) takes back what points into the library from
//! outside it: the driver's error-log callback.

use crate::core::driver;
use crate::jni::logging;
use crate::jni::natives::CLASSES;
use crate::jni::registration;
use crate::jni::throw::{install_panic_hook, throw_new};
use jni::sys::{jint, JNIEnv, JavaVM, JNI_ERR, JNI_OK, JNI_VERSION_1_8};
use std::ffi::c_void;

#[unsafe(no_mangle)]
pub extern "system" fn JNI_OnLoad(vm: *mut JavaVM, _reserved: *mut c_void) -> jint {
    logging::remember_vm(vm);
    install_panic_hook();
    let mut env: *mut c_void = std::ptr::null_mut();
    // SAFETY: the JVM passes its own VM to JNI_OnLoad, on a thread attached to it.
    if unsafe { ((**vm).v1_2.GetEnv)(vm, &mut env, JNI_VERSION_1_8) } != JNI_OK {
        return JNI_ERR;
    }
    let env = env as *mut JNIEnv;
    // Nothing may unwind into the JVM; registration does not panic, but a bug must not crash it.
    // SAFETY: `env` is this thread's, with no exception pending (the JVM is loading the library).
    let registered = std::panic::catch_unwind(|| unsafe { registration::register(env, CLASSES) });
    let failure = match registered {
        Ok(Ok(())) => return JNI_VERSION_1_8,
        Ok(Err(message)) => message,
        Err(_) => "registering libcuhandle's native methods panicked (this is a bug in cuhandle)".to_string(),
    };
    // `System.load` throws the exception pending when JNI_OnLoad returns, and unloads the library.
    throw_new(env, "java/lang/UnsatisfiedLinkError", &failure);
    JNI_ERR
}

#[unsafe(no_mangle)]
pub extern "system" fn JNI_OnUnload(_vm: *mut JavaVM, _reserved: *mut c_void) {
    // The library is about to be unmapped: the driver must not call into it afterwards. Nothing may
    // unwind into the JVM.
    let _ = std::panic::catch_unwind(driver::detach_logs_from_errors);
}
