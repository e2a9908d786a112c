//! Java arrays that the `jni` crate has no allocation-free helper for: `String[]` and `int[]`
//! arguments read into Rust values, and a new `byte[]` (copies: nothing is pinned).

use crate::core::error::Error;
use crate::jni::raw::convert::{self, pending};
use crate::jni::throw::JniResult;
use jni::objects::{JByteArray, JIntArray, JObjectArray, JString};
use jni::sys::jsize;
use jni::Env;

/// The strings of a `String[]`; a null element is an invalid argument naming `what`.
pub fn strings(env: &Env<'_>, array: &JObjectArray<'_, JString<'_>>, what: &str) -> JniResult<Vec<String>> {
    let (raw, array) = (env.get_raw(), array.as_raw());
    if array.is_null() {
        return Err(Error::invalid_argument(format!("{what} is null")).into());
    }
    // SAFETY: this thread's env and a live String[] reference from the Java caller.
    let length = unsafe { ((**raw).v1_1.GetArrayLength)(raw, array) };
    let mut out = Vec::with_capacity(usize::try_from(length).unwrap_or(0));
    for i in 0..length {
        // SAFETY: as above; `i` is inside the array.
        let element = unsafe { ((**raw).v1_1.GetObjectArrayElement)(raw, array, i as jsize) };
        // SAFETY: this thread's env.
        if unsafe { ((**raw).v1_2.ExceptionCheck)(raw) } {
            return Err(pending());
        }
        // SAFETY: a new local reference to a String (or null), owned by nothing else; dropping the
        // wrapper does not delete it, so it is deleted below: long arrays must not exhaust the
        // local reference table.
        let element = unsafe { JString::from_raw(env, element) };
        let text = convert::string(env, &element);
        if !element.is_null() {
            // SAFETY: a local reference this function obtained.
            unsafe { ((**raw).v1_1.DeleteLocalRef)(raw, element.into_raw()) };
        }
        out.push(text?.ok_or_else(|| Error::invalid_argument(format!("{what}[{i}] is null")))?);
    }
    Ok(out)
}

/// The values of an `int[]`.
pub fn ints(env: &Env<'_>, array: &JIntArray<'_>, what: &str) -> JniResult<Vec<i32>> {
    let (raw, array) = (env.get_raw(), array.as_raw());
    if array.is_null() {
        return Err(Error::invalid_argument(format!("{what} is null")).into());
    }
    // SAFETY: this thread's env and a live int[] reference; the region read stays within its length.
    unsafe {
        let length = ((**raw).v1_1.GetArrayLength)(raw, array);
        let mut out = vec![0i32; usize::try_from(length).unwrap_or(0)];
        ((**raw).v1_1.GetIntArrayRegion)(raw, array, 0, out.len() as jsize, out.as_mut_ptr());
        Ok(out)
    }
}

/// A new `byte[]` holding `bytes`.
pub fn new_bytes<'l>(env: &Env<'l>, bytes: &[u8]) -> JniResult<JByteArray<'l>> {
    let length =
        jsize::try_from(bytes.len()).map_err(|_| Error::invalid_argument(format!("{} bytes do not fit a Java array", bytes.len())))?;
    let raw = env.get_raw();
    // SAFETY: this thread's env; the region write stays within the new array's length.
    unsafe {
        let array = ((**raw).v1_1.NewByteArray)(raw, length);
        if array.is_null() {
            return Err(pending());
        }
        ((**raw).v1_1.SetByteArrayRegion)(raw, array, 0, length, bytes.as_ptr().cast());
        // SAFETY: a new local reference to a byte[], owned by nothing else.
        Ok(JByteArray::from_raw(env, array))
    }
}
