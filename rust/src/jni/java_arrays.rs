//! Java arrays that the `jni` crate has no allocation-free helper for: `String[]` and `int[]`
//! arguments read into Rust values, and a new `byte[]` (copies: nothing is pinned).

use crate::core::error::Error;
use crate::jni::raw::convert::{self, pending};
use crate::jni::throw::JniResult;
use jni::sys::{jbyteArray, jintArray, jobjectArray, jsize, JNIEnv};

/// The strings of a `String[]`; a null element is an invalid argument naming `what`.
pub fn strings(env: *mut JNIEnv, array: jobjectArray, what: &str) -> JniResult<Vec<String>> {
    if array.is_null() {
        return Err(Error::invalid_argument(format!("{what} is null")).into());
    }
    // SAFETY: valid env (this thread's) and a live String[] reference from the Java caller.
    let length = unsafe { ((**env).v1_1.GetArrayLength)(env, array) };
    let mut out = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
    for i in 0..length {
        // SAFETY: as above; `i` is inside the array. The local reference is deleted after use so
        // that long arrays do not exhaust the local reference table.
        let element = unsafe { ((**env).v1_1.GetObjectArrayElement)(env, array, i as jsize) };
        // SAFETY: valid env.
        if unsafe { ((**env).v1_2.ExceptionCheck)(env) } {
            return Err(pending());
        }
        let text = convert::string(env, element);
        if !element.is_null() {
            // SAFETY: a local reference this function obtained.
            unsafe { ((**env).v1_1.DeleteLocalRef)(env, element) };
        }
        out.push(text?.ok_or_else(|| Error::invalid_argument(format!("{what}[{i}] is null")))?);
    }
    Ok(out)
}

/// The values of an `int[]`.
pub fn ints(env: *mut JNIEnv, array: jintArray, what: &str) -> JniResult<Vec<i32>> {
    if array.is_null() {
        return Err(Error::invalid_argument(format!("{what} is null")).into());
    }
    // SAFETY: valid env and a live int[] reference; the region read stays within its length.
    unsafe {
        let length = ((**env).v1_1.GetArrayLength)(env, array);
        let mut out = vec![0i32; usize::try_from(length).unwrap_or(0)];
        ((**env).v1_1.GetIntArrayRegion)(env, array, 0, out.len() as jsize, out.as_mut_ptr());
        Ok(out)
    }
}

/// A new `byte[]` holding `bytes`.
pub fn new_bytes(env: *mut JNIEnv, bytes: &[u8]) -> JniResult<jbyteArray> {
    let length = jsize::try_from(bytes.len()).map_err(|_| Error::invalid_argument(format!("{} bytes do not fit a Java array", bytes.len())))?;
    // SAFETY: valid env; the region write stays within the new array's length.
    unsafe {
        let array = ((**env).v1_1.NewByteArray)(env, length);
        if array.is_null() {
            return Err(pending());
        }
        ((**env).v1_1.SetByteArrayRegion)(env, array, 0, length, bytes.as_ptr().cast());
        Ok(array)
    }
}
