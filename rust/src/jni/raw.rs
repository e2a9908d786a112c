//! The few raw JNI calls the `jni` crate has no allocation-free wrapper for.

use jni::sys::{jarray, jobject, JNIEnv};
use std::ffi::c_void;

/// A pinned view of a Java primitive array; released when dropped. While it lives, no JNI call
/// may be made on this thread (the logging bridge defers records meanwhile).
pub struct CriticalArray {
    env: *mut JNIEnv,
    array: jarray,
    pub ptr: *mut u8,
    pub bytes: usize,
    commit: bool,
}

impl CriticalArray {
    /// Pins `array` (a Java primitive array whose elements are `element_bytes` wide).
    ///
    /// # Safety
    /// `env` must be the current thread's JNIEnv and `array` a live local reference to a
    /// primitive array of that element width.
    pub unsafe fn pin(env: *mut JNIEnv, array: jobject, element_bytes: usize, commit: bool) -> Option<CriticalArray> {
        // SAFETY: caller's contract: valid env and primitive array.
        unsafe {
            let length = ((**env).v1_1.GetArrayLength)(env, array) as usize;
            let ptr = ((**env).v1_2.GetPrimitiveArrayCritical)(env, array, std::ptr::null_mut()) as *mut u8;
            if ptr.is_null() {
                return None;
            }
            crate::jni::logging::enter_critical();
            Some(CriticalArray { env, array, ptr, bytes: length * element_bytes, commit })
        }
    }
}

impl Drop for CriticalArray {
    fn drop(&mut self) {
        // Mode 0 copies back (if the VM gave us a copy) and frees; JNI_ABORT (2) discards.
        let mode = if self.commit { 0 } else { 2 };
        // SAFETY: releases exactly the pointer obtained in `pin` on the same thread.
        unsafe { ((**self.env).v1_2.ReleasePrimitiveArrayCritical)(self.env, self.array, self.ptr as *mut c_void, mode) };
        crate::jni::logging::leave_critical();
    }
}

/// Address and capacity of a direct ByteBuffer (None for heap buffers).
///
/// # Safety
/// `env` must be the current thread's JNIEnv and `buffer` a live local reference.
pub unsafe fn direct_buffer(env: *mut JNIEnv, buffer: jobject) -> Option<(*mut u8, usize)> {
    // SAFETY: caller's contract.
    unsafe {
        let ptr = ((**env).v1_4.GetDirectBufferAddress)(env, buffer) as *mut u8;
        let capacity = ((**env).v1_4.GetDirectBufferCapacity)(env, buffer);
        (!ptr.is_null() && capacity >= 0).then_some((ptr, capacity as usize))
    }
}

/// Helpers over the raw function table. Each requires `env` to be the current thread's JNIEnv;
/// a NULL result means a Java exception (OutOfMemoryError) is pending.
pub mod convert {
    use crate::jni::throw::{Failure, JniResult};
    use jni::sys::{jbyteArray, jlong, jobject, jobjectArray, jsize, jstring, JNIEnv};
    use std::ffi::{CStr, CString};

    fn pending() -> Failure {
        Failure::Jni(jni::errors::Error::JavaException)
    }

    pub fn new_string(env: *mut JNIEnv, s: &str) -> JniResult<jstring> {
        let c = CString::new(s.replace('\0', " ")).unwrap_or_default();
        // SAFETY: valid env (module contract) and NUL-terminated text.
        let j = unsafe { ((**env).v1_1.NewStringUTF)(env, c.as_ptr()) };
        if j.is_null() { Err(pending()) } else { Ok(j) }
    }

    pub fn string(env: *mut JNIEnv, s: jstring) -> JniResult<Option<String>> {
        if s.is_null() {
            return Ok(None);
        }
        // SAFETY: valid env and a live string reference; the chars are released below.
        unsafe {
            let chars = ((**env).v1_1.GetStringUTFChars)(env, s, std::ptr::null_mut());
            if chars.is_null() {
                return Err(pending());
            }
            let out = CStr::from_ptr(chars).to_string_lossy().into_owned();
            ((**env).v1_1.ReleaseStringUTFChars)(env, s, chars);
            Ok(Some(out))
        }
    }

    pub fn long_array(env: *mut JNIEnv, values: &[i64]) -> JniResult<jobject> {
        // SAFETY: valid env; the region write stays within the new array's length.
        unsafe {
            let a = ((**env).v1_1.NewLongArray)(env, values.len() as jsize);
            if a.is_null() {
                return Err(pending());
            }
            ((**env).v1_1.SetLongArrayRegion)(env, a, 0, values.len() as jsize, values.as_ptr() as *const jlong);
            Ok(a)
        }
    }

    pub fn int_array(env: *mut JNIEnv, values: &[i32]) -> JniResult<jobject> {
        // SAFETY: as `long_array`.
        unsafe {
            let a = ((**env).v1_1.NewIntArray)(env, values.len() as jsize);
            if a.is_null() {
                return Err(pending());
            }
            ((**env).v1_1.SetIntArrayRegion)(env, a, 0, values.len() as jsize, values.as_ptr());
            Ok(a)
        }
    }

    pub fn bytes(env: *mut JNIEnv, array: jbyteArray) -> JniResult<Vec<u8>> {
        // SAFETY: valid env and a live byte[] reference (checked non-null by Java); the region
        // read stays within its length.
        unsafe {
            let n = ((**env).v1_1.GetArrayLength)(env, array) as usize;
            let mut out = vec![0u8; n];
            ((**env).v1_1.GetByteArrayRegion)(env, array, 0, n as jsize, out.as_mut_ptr().cast());
            Ok(out)
        }
    }

    pub fn string_array(env: *mut JNIEnv, values: &[String]) -> JniResult<jobjectArray> {
        // SAFETY: valid env; indices stay within the new array.
        unsafe {
            let cls = ((**env).v1_1.FindClass)(env, c"java/lang/String".as_ptr());
            if cls.is_null() {
                return Err(pending());
            }
            let a = ((**env).v1_1.NewObjectArray)(env, values.len() as jsize, cls, std::ptr::null_mut());
            if a.is_null() {
                return Err(pending());
            }
            for (i, v) in values.iter().enumerate() {
                let s = new_string(env, v)?;
                ((**env).v1_1.SetObjectArrayElement)(env, a, i as jsize, s);
                ((**env).v1_1.DeleteLocalRef)(env, s);
            }
            Ok(a)
        }
    }
}

/// Turns a pointer that Java holds (a `long` from one of our `Box::into_raw`) back into a
/// reference, refusing 0.
///
/// # Safety
/// A non-zero `ptr` must come from `Box::<T>::into_raw` and not have been freed: the Java objects
/// guarantee this by clearing their pointer under their close protocol.
pub unsafe fn borrow<'a, T>(ptr: jni::sys::jlong, what: &str) -> crate::jni::throw::JniResult<&'a T> {
    if ptr == 0 {
        return Err(crate::core::error::Error::invalid_state(format!("the {what} is closed")).into());
    }
    // SAFETY: caller's contract.
    Ok(unsafe { &*(ptr as *const T) })
}

/// Reclaims ownership of a pointer handed to Java.
///
/// # Safety
/// As `borrow`, and Java must never use `ptr` again.
pub unsafe fn take<T>(ptr: jni::sys::jlong) -> Option<Box<T>> {
    // SAFETY: caller's contract.
    (ptr != 0).then(|| unsafe { Box::from_raw(ptr as *mut T) })
}

pub fn give<T>(value: T) -> jni::sys::jlong {
    Box::into_raw(Box::new(value)) as jni::sys::jlong
}
