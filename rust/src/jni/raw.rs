//! The few raw JNI calls the `jni` crate has no allocation-free wrapper for.

use crate::core::error::Error;
use crate::jni::throw::JniResult;
use jni::sys::{jarray, jint, jobject, jsize, JNIEnv};

/// A Java primitive array reached through JNI's region copies (`Get/Set<Type>ArrayRegion`):
/// bounded copies that never pin the array, so they cannot hold up the garbage collector.
pub struct ArrayRegion {
    env: *mut JNIEnv,
    array: jarray,
    kind: ElementKind,
    length: usize,
}

#[derive(Clone, Copy)]
enum ElementKind {
    Byte,
    Short,
    Char,
    Int,
    Long,
    Float,
    Double,
}

impl ElementKind {
    /// The JVM's type letter, as `dev.cuhandle.ArrayTransfers` passes it: B, S, C, I, J, F, D.
    fn from_code(code: jint) -> Option<ElementKind> {
        match u8::try_from(code).ok()? {
            b'B' => Some(ElementKind::Byte),
            b'S' => Some(ElementKind::Short),
            b'C' => Some(ElementKind::Char),
            b'I' => Some(ElementKind::Int),
            b'J' => Some(ElementKind::Long),
            b'F' => Some(ElementKind::Float),
            b'D' => Some(ElementKind::Double),
            _ => None,
        }
    }
    fn bytes(self) -> usize {
        match self {
            ElementKind::Byte => 1,
            ElementKind::Short | ElementKind::Char => 2,
            ElementKind::Int | ElementKind::Float => 4,
            ElementKind::Long | ElementKind::Double => 8,
        }
    }
}

impl ArrayRegion {
    /// # Safety
    /// `env` must be the current thread's JNIEnv and `array` a live local reference to a
    /// primitive array whose element type is `type_code` (the Java caller guarantees it).
    pub unsafe fn new(env: *mut JNIEnv, array: jobject, type_code: jint) -> JniResult<ArrayRegion> {
        let kind = ElementKind::from_code(type_code)
            .ok_or_else(|| Error::invalid_argument(format!("unsupported array element type code {type_code}")))?;
        // SAFETY: caller's contract.
        let length = unsafe { ((**env).v1_1.GetArrayLength)(env, array) };
        Ok(ArrayRegion { env, array, kind, length: usize::try_from(length).unwrap_or(0) })
    }

    pub fn bytes(&self) -> usize {
        self.length * self.kind.bytes()
    }

    pub fn element_bytes(&self) -> usize {
        self.kind.bytes()
    }

    /// Elements `[byte_offset / size, ...)` of the array for `len` bytes, checked to lie inside.
    fn elements(&self, byte_offset: usize, len: usize) -> Result<(jsize, jsize), Error> {
        let size = self.kind.bytes();
        let in_range = byte_offset.is_multiple_of(size) && len.is_multiple_of(size) && byte_offset.checked_add(len).is_some_and(|end| end <= self.bytes());
        if !in_range {
            return Err(Error::invalid_argument(format!("byte range [{byte_offset}, {byte_offset}+{len}) is not whole elements inside the Java array of {} bytes", self.bytes())));
        }
        // Both fit in jsize: they are at most the array's length, itself a jsize.
        Ok(((byte_offset / size) as jsize, (len / size) as jsize))
    }

    /// Copies array bytes `[byte_offset, byte_offset + out.len())` into `out`.
    pub fn read(&self, byte_offset: usize, out: &mut [u8]) -> Result<(), Error> {
        let (start, count) = self.elements(byte_offset, out.len())?;
        let (env, a, p) = (self.env, self.array, out.as_mut_ptr());
        // SAFETY: valid env and array of this element type (constructor contract); the element
        // range was checked against the array and `out` holds exactly `count` elements. The
        // region functions copy unaligned-safe into a byte buffer as a memcpy does.
        unsafe {
            let f = &**env;
            match self.kind {
                ElementKind::Byte => (f.v1_1.GetByteArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Short => (f.v1_1.GetShortArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Char => (f.v1_1.GetCharArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Int => (f.v1_1.GetIntArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Long => (f.v1_1.GetLongArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Float => (f.v1_1.GetFloatArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Double => (f.v1_1.GetDoubleArrayRegion)(env, a, start, count, p.cast()),
            }
        }
        self.pending_exception()
    }

    /// Copies `data` into array bytes `[byte_offset, byte_offset + data.len())`.
    pub fn write(&self, byte_offset: usize, data: &[u8]) -> Result<(), Error> {
        let (start, count) = self.elements(byte_offset, data.len())?;
        let (env, a, p) = (self.env, self.array, data.as_ptr());
        // SAFETY: as in `read`, with `data` holding exactly `count` elements.
        unsafe {
            let f = &**env;
            match self.kind {
                ElementKind::Byte => (f.v1_1.SetByteArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Short => (f.v1_1.SetShortArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Char => (f.v1_1.SetCharArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Int => (f.v1_1.SetIntArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Long => (f.v1_1.SetLongArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Float => (f.v1_1.SetFloatArrayRegion)(env, a, start, count, p.cast()),
                ElementKind::Double => (f.v1_1.SetDoubleArrayRegion)(env, a, start, count, p.cast()),
            }
        }
        self.pending_exception()
    }

    /// A region copy that failed left a Java exception pending; it must not be followed by
    /// further JNI calls other than returning.
    fn pending_exception(&self) -> Result<(), Error> {
        // SAFETY: valid env (constructor contract).
        if unsafe { ((**self.env).v1_2.ExceptionCheck)(self.env) } {
            return Err(Error::invalid_state("copying to or from the Java array failed (a Java exception is pending)"));
        }
        Ok(())
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
    use jni::strings::{JNIStr, JNIString};
    use jni::sys::{jbyteArray, jlong, jobject, jobjectArray, jsize, jstring, JNIEnv};

    /// The failure for a JNI call that returned NULL: a Java exception is pending.
    pub fn pending() -> Failure {
        Failure::Jni(jni::errors::Error::JavaException)
    }

    /// `s` in the JVM's modified UTF-8, as every `...StringUTF` and `ThrowNew` call takes it:
    /// supplementary characters (emoji) become surrogate pairs and NUL becomes `C0 80`, so the
    /// Java string equals `s` (standard UTF-8 handed to `NewStringUTF` is read as garbage).
    pub fn java_utf8(s: &str) -> JNIString {
        JNIString::new(s)
    }

    pub fn new_string(env: *mut JNIEnv, s: &str) -> JniResult<jstring> {
        let text = java_utf8(s);
        // SAFETY: valid env (module contract) and NUL-terminated modified UTF-8.
        let j = unsafe { ((**env).v1_1.NewStringUTF)(env, text.as_ptr()) };
        if j.is_null() { Err(pending()) } else { Ok(j) }
    }

    /// The Java string as Rust text: `GetStringUTFChars` gives modified UTF-8, which is decoded
    /// as such (a lossy standard-UTF-8 decode turned each emoji into six U+FFFD).
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
            // SAFETY: the JVM returned a NUL-terminated modified UTF-8 string, valid until released.
            let out = JNIStr::from_ptr(chars).to_str().into_owned();
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

    /// The values of a `long[]` (none for null).
    pub fn read_longs(env: *mut JNIEnv, array: jni::sys::jlongArray) -> JniResult<Vec<jlong>> {
        if array.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: valid env and a live long[] reference; the region read stays within its length.
        unsafe {
            let n = ((**env).v1_1.GetArrayLength)(env, array).max(0) as usize;
            let mut out = vec![0 as jlong; n];
            ((**env).v1_1.GetLongArrayRegion)(env, array, 0, n as jsize, out.as_mut_ptr());
            if ((**env).v1_2.ExceptionCheck)(env) {
                return Err(pending());
            }
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

/// The `count` native pointers at `address`: a list the Java caller wrote into its direct buffer
/// (at most `max`; 0 entries for a null address).
///
/// # Safety
/// A non-null `address` points to at least `count` readable, 8-byte aligned `jlong`s that stay
/// unchanged for `'a` (the Java caller's call).
pub unsafe fn pointer_list<'a>(address: jni::sys::jlong, count: jni::sys::jint, max: usize) -> crate::jni::throw::JniResult<&'a [jni::sys::jlong]> {
    let count = usize::try_from(count).ok().filter(|&n| n <= max).ok_or_else(|| Error::invalid_argument(format!("{count} native pointers passed; expected 0 to {max}")))?;
    if address == 0 || count == 0 {
        return Ok(&[]);
    }
    // SAFETY: caller's contract.
    Ok(unsafe { std::slice::from_raw_parts(address as *const jni::sys::jlong, count) })
}

pub fn give<T>(value: T) -> jni::sys::jlong {
    Box::into_raw(Box::new(value)) as jni::sys::jlong
}
