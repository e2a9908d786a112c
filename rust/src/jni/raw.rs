//! The few raw JNI calls the `jni` crate has no allocation-free wrapper for.

use crate::core::error::Error;
use crate::jni::throw::JniResult;
use jni::sys::{jarray, jint, jobject, jsize, JNIEnv, JNI_ABORT};

/// A Java primitive array reached through JNI's region copies (`Get/Set<Type>ArrayRegion`):
/// bounded copies that never pin the array, so they cannot hold up the garbage collector. Or, with
/// `critical`, through a critical region held only for one `memcpy` of a chunk (rule L4: bounded,
/// never across a wait for the GPU or any other call): HotSpot's region copies move 8 bytes per
/// instruction, a `memcpy` uses the widest vector moves, 1.6 times as fast for chunks in cache.
pub struct ArrayRegion {
    env: *mut JNIEnv,
    array: jarray,
    kind: ElementKind,
    length: usize,
    critical: bool,
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

/// The element size of the primitive type the JVM's letter `type_code` names (B, S, C, I, J, F, D).
pub fn element_bytes(type_code: jint) -> Result<usize, Error> {
    ElementKind::from_code(type_code)
        .map(ElementKind::bytes)
        .ok_or_else(|| Error::invalid_argument(format!("unsupported array element type code {type_code}")))
}

impl ArrayRegion {
    /// # Safety
    /// `env` must be the current thread's JNIEnv and `array` a live local reference to a
    /// primitive array whose element type is `type_code` (the Java caller guarantees it).
    pub unsafe fn new(env: *mut JNIEnv, array: jobject, type_code: jint, critical: bool) -> JniResult<ArrayRegion> {
        let kind = ElementKind::from_code(type_code)
            .ok_or_else(|| Error::invalid_argument(format!("unsupported array element type code {type_code}")))?;
        // SAFETY: caller's contract.
        let length = unsafe { ((**env).v1_1.GetArrayLength)(env, array) };
        Ok(ArrayRegion { env, array, kind, length: usize::try_from(length).unwrap_or(0), critical })
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
        let in_range = byte_offset.is_multiple_of(size)
            && len.is_multiple_of(size)
            && byte_offset.checked_add(len).is_some_and(|end| end <= self.bytes());
        if !in_range {
            return Err(Error::invalid_argument(format!(
                "byte range [{byte_offset}, {byte_offset}+{len}) is not whole elements inside the Java array of {} bytes",
                self.bytes()
            )));
        }
        // Both fit in jsize: they are at most the array's length, itself a jsize.
        Ok(((byte_offset / size) as jsize, (len / size) as jsize))
    }

    /// Runs `copy` with the address of the array's first element, inside a critical region that
    /// ends when `copy` returns. `copy` must be a plain memory copy: no JNI call, no lock, no wait
    /// (rule L4). `release` is JNI's mode: `JNI_ABORT` after reading, 0 after writing.
    fn in_critical_region(&self, release: jint, copy: impl FnOnce(*mut u8)) -> Result<(), Error> {
        // SAFETY: valid env and array (constructor contract); the region is released right after
        // `copy`, which makes no JNI call.
        unsafe {
            let f = &**self.env;
            let elements = (f.v1_2.GetPrimitiveArrayCritical)(self.env, self.array, std::ptr::null_mut());
            if elements.is_null() {
                return self.pending_exception().and(Err(Error::invalid_state("the JVM gave no access to the Java array")));
            }
            copy(elements.cast());
            (f.v1_2.ReleasePrimitiveArrayCritical)(self.env, self.array, elements, release);
        }
        Ok(())
    }

    /// Copies array bytes `[byte_offset, byte_offset + out.len())` into `out`.
    pub fn read(&self, byte_offset: usize, out: &mut [u8]) -> Result<(), Error> {
        let (start, count) = self.elements(byte_offset, out.len())?;
        if self.critical {
            // SAFETY: the byte range was checked to lie inside the array; `out` is ours and does
            // not overlap the Java heap.
            return self.in_critical_region(JNI_ABORT, |elements| unsafe {
                std::ptr::copy_nonoverlapping(elements.add(byte_offset), out.as_mut_ptr(), out.len())
            });
        }
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
        if self.critical {
            // SAFETY: as in `read`, the other way.
            return self.in_critical_region(0, |elements| unsafe {
                std::ptr::copy_nonoverlapping(data.as_ptr(), elements.add(byte_offset), data.len())
            });
        }
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

/// Conversions between Rust values and Java strings and arrays, over the raw function table (no
/// pinning, no critical region). A JNI call that returns NULL has left a Java exception pending.
pub mod convert {
    use crate::core::error::Error;
    use crate::jni::throw::{java_utf8, Failure, JniResult};
    use jni::objects::{JByteArray, JIntArray, JLongArray, JObjectArray, JString};
    use jni::strings::JNIStr;
    use jni::sys::{jlong, jlongArray, jsize, JNIEnv};
    use jni::Env;

    /// The failure for a JNI call that returned NULL: a Java exception is pending.
    pub fn pending() -> Failure {
        Failure::Jni(jni::errors::Error::JavaException)
    }

    pub fn new_string<'l>(env: &Env<'l>, s: &str) -> JniResult<JString<'l>> {
        let (raw, text) = (env.get_raw(), java_utf8(s));
        // SAFETY: this thread's env and NUL-terminated modified UTF-8.
        let j = unsafe { ((**raw).v1_1.NewStringUTF)(raw, text.as_ptr()) };
        if j.is_null() {
            return Err(pending());
        }
        // SAFETY: a new local reference to a String, owned by nothing else.
        Ok(unsafe { JString::from_raw(env, j) })
    }

    /// The Java string as Rust text (none for null): `GetStringUTFChars` gives modified UTF-8,
    /// which is decoded as such (a lossy standard-UTF-8 decode turned each emoji into six U+FFFD).
    pub fn string(env: &Env<'_>, s: &JString<'_>) -> JniResult<Option<String>> {
        let (raw, s) = (env.get_raw(), s.as_raw());
        if s.is_null() {
            return Ok(None);
        }
        // SAFETY: this thread's env and a live string reference; the chars are released below.
        unsafe {
            let chars = ((**raw).v1_1.GetStringUTFChars)(raw, s, std::ptr::null_mut());
            if chars.is_null() {
                return Err(pending());
            }
            // SAFETY: the JVM returned a NUL-terminated modified UTF-8 string, valid until released.
            let out = JNIStr::from_ptr(chars).to_str().into_owned();
            ((**raw).v1_1.ReleaseStringUTFChars)(raw, s, chars);
            Ok(Some(out))
        }
    }

    pub fn long_array<'l>(env: &Env<'l>, values: &[i64]) -> JniResult<JLongArray<'l>> {
        let raw = env.get_raw();
        // SAFETY: this thread's env; the region write stays within the new array's length.
        unsafe {
            let a = ((**raw).v1_1.NewLongArray)(raw, values.len() as jsize);
            if a.is_null() {
                return Err(pending());
            }
            ((**raw).v1_1.SetLongArrayRegion)(raw, a, 0, values.len() as jsize, values.as_ptr() as *const jlong);
            // SAFETY: a new local reference to a long[], owned by nothing else.
            Ok(JLongArray::from_raw(env, a))
        }
    }

    /// Writes `values` to the start of the `long[]` `array` through the raw JNIEnv, outside jni's
    /// attach guard (for bodies run by `entry_without_env!`). An array too short for them gets the
    /// JVM's ArrayIndexOutOfBoundsException, pending on return, and nothing written: that is the error.
    ///
    /// # Safety
    /// `env` is the JNIEnv the calling native method received, on this thread, and `array` a live
    /// local reference to a `long[]` or null (refused here).
    pub unsafe fn write_longs(env: *mut JNIEnv, array: jlongArray, values: &[jlong]) -> JniResult<()> {
        if array.is_null() {
            return Err(Error::invalid_argument(format!("the long[] for {} values is null", values.len())).into());
        }
        // SAFETY: the caller's contract; the JVM checks the region against the array's length.
        let failed = unsafe {
            ((**env).v1_1.SetLongArrayRegion)(env, array, 0, values.len() as jsize, values.as_ptr());
            ((**env).v1_2.ExceptionCheck)(env)
        };
        if failed {
            return Err(pending());
        }
        Ok(())
    }

    pub fn int_array<'l>(env: &Env<'l>, values: &[i32]) -> JniResult<JIntArray<'l>> {
        let raw = env.get_raw();
        // SAFETY: as `long_array`.
        unsafe {
            let a = ((**raw).v1_1.NewIntArray)(raw, values.len() as jsize);
            if a.is_null() {
                return Err(pending());
            }
            ((**raw).v1_1.SetIntArrayRegion)(raw, a, 0, values.len() as jsize, values.as_ptr());
            // SAFETY: a new local reference to an int[], owned by nothing else.
            Ok(JIntArray::from_raw(env, a))
        }
    }

    /// The bytes of a `byte[]` (checked non-null by Java).
    pub fn bytes(env: &Env<'_>, array: &JByteArray<'_>) -> JniResult<Vec<u8>> {
        let (raw, array) = (env.get_raw(), array.as_raw());
        // SAFETY: this thread's env and a live byte[] reference; the region read stays within its
        // length.
        unsafe {
            let n = ((**raw).v1_1.GetArrayLength)(raw, array) as usize;
            let mut out = vec![0u8; n];
            ((**raw).v1_1.GetByteArrayRegion)(raw, array, 0, n as jsize, out.as_mut_ptr().cast());
            Ok(out)
        }
    }

    /// The values of a `long[]` (none for null).
    pub fn read_longs(env: &Env<'_>, array: &JLongArray<'_>) -> JniResult<Vec<jlong>> {
        let (raw, array) = (env.get_raw(), array.as_raw());
        if array.is_null() {
            return Ok(Vec::new());
        }
        // SAFETY: this thread's env and a live long[] reference; the region read stays within its
        // length.
        unsafe {
            let n = ((**raw).v1_1.GetArrayLength)(raw, array).max(0) as usize;
            let mut out = vec![0 as jlong; n];
            ((**raw).v1_1.GetLongArrayRegion)(raw, array, 0, n as jsize, out.as_mut_ptr());
            if ((**raw).v1_2.ExceptionCheck)(raw) {
                return Err(pending());
            }
            Ok(out)
        }
    }

    pub fn string_array<'l>(env: &Env<'l>, values: &[String]) -> JniResult<JObjectArray<'l, JString<'l>>> {
        let raw = env.get_raw();
        // SAFETY: this thread's env; indices stay within the new array.
        unsafe {
            let cls = ((**raw).v1_1.FindClass)(raw, c"java/lang/String".as_ptr());
            if cls.is_null() {
                return Err(pending());
            }
            let a = ((**raw).v1_1.NewObjectArray)(raw, values.len() as jsize, cls, std::ptr::null_mut());
            if a.is_null() {
                return Err(pending());
            }
            for (i, v) in values.iter().enumerate() {
                let s = new_string(env, v)?.into_raw();
                ((**raw).v1_1.SetObjectArrayElement)(raw, a, i as jsize, s);
                ((**raw).v1_1.DeleteLocalRef)(raw, s);
            }
            // SAFETY: a new local reference to a String[], owned by nothing else.
            Ok(JObjectArray::<JString>::from_raw(env, a))
        }
    }
}
