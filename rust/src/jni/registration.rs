//! Registering a native table (`natives.rs`) with the JVM, entry by entry, after checking that the
//! Java class declares each entry's method, static, with its name and signature: the first entry
//! that does not fit is an error naming the class, the method and its signature.

use crate::jni::throw::java_utf8;
use jni::sys::{jclass, jobject, jvalue, JNIEnv, JNINativeMethod};
use jni::NativeMethod;
use std::ffi::CStr;

/// A Java class and its native methods.
pub struct NativeClass {
    /// The class as JNI names it, e.g. `dev/cuhandle/NativeApi`.
    pub name: &'static str,
    /// Its methods, in the sections of the modules that implement them.
    pub sections: &'static [&'static [NativeMethod<'static>]],
    /// Whether the class must be there. The test-only classes are on the test class path alone.
    pub required: bool,
}

/// "class name signature" of every method registered (for the test that compares them with the
/// Java classes).
#[cfg(feature = "test-api")]
static REGISTERED: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());

/// Why the library and the Java classes do not fit, and what to do.
const ADVICE: &str = "the native library belongs to another cuhandle version than these Java classes, or the native table in rust/src/jni \
                      is out of step with the class: use the libcuhandle.so of the same cuhandle JAR (remove -Dcuhandle.library.path to use \
                      the bundled one)";

/// Registers the methods of every class in `classes`. The first entry that does not fit its class
/// is an error naming the class, the method and its signature.
///
/// # Safety
/// `env` is the JNIEnv of the current thread, with no exception pending.
pub unsafe fn register(env: *mut JNIEnv, classes: &[NativeClass]) -> Result<(), String> {
    // SAFETY: the caller's contract.
    let loader = unsafe { class_loader_of(env, "dev/cuhandle/NativeApi") }?;
    for class in classes {
        // SAFETY: as above; `loader` is a local reference from this call.
        let Some(found) = (unsafe { find_class(env, loader, class.name) }) else {
            if class.required {
                return Err(format!("libcuhandle's native methods cannot be registered: class {} was not found", java_name(class.name)));
            }
            continue;
        };
        for method in class.sections.iter().flat_map(|section| section.iter()) {
            let entry = entry_of(method);
            // SAFETY: as above; `found` is a live local class reference; the entry's function has
            // the signature it is registered with (`native_method!`).
            unsafe {
                check_declared(env, found, class.name, entry)?;
                bind(env, found, class.name, entry)?;
            }
            #[cfg(feature = "test-api")]
            REGISTERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(format!(
                "{} {}",
                class.name,
                name_and_signature(entry)
            ));
        }
        // SAFETY: a local reference this function made.
        unsafe { ((**env).v1_1.DeleteLocalRef)(env, found) };
    }
    Ok(())
}

/// Checks that `class` declares the entry's method, static, with its name and signature.
///
/// # Safety
/// As `register`; `class` is a live reference to the class named `class_name`; the entry's name
/// and signature are NUL-terminated modified UTF-8.
unsafe fn check_declared(env: *mut JNIEnv, class: jclass, class_name: &str, entry: &JNINativeMethod) -> Result<(), String> {
    // SAFETY: the caller's contract.
    unsafe {
        let f = &**env;
        if !(f.v1_1.GetStaticMethodID)(env, class, entry.name, entry.signature).is_null() {
            return Ok(());
        }
        (f.v1_1.ExceptionClear)(env);
        let instance = !(f.v1_1.GetMethodID)(env, class, entry.name, entry.signature).is_null();
        (f.v1_1.ExceptionClear)(env);
        let what = if instance {
            "is declared there as an instance method, but the native table registers it as static"
        } else {
            "is not declared there: a native method was renamed, or its parameters or result changed, on one side only"
        };
        Err(format!("libcuhandle's native methods do not match the Java classes: {} {what}; {ADVICE}", describe_entry(class_name, entry)))
    }
}

/// Binds the entry's function to the method (`RegisterNatives`).
///
/// # Safety
/// As `check_declared`, and the entry's function has the entry's signature.
unsafe fn bind(env: *mut JNIEnv, class: jclass, class_name: &str, entry: &JNINativeMethod) -> Result<(), String> {
    // SAFETY: the caller's contract.
    unsafe {
        let f = &**env;
        if (f.v1_1.RegisterNatives)(env, class, entry, 1) != 0 {
            (f.v1_1.ExceptionClear)(env);
            return Err(format!(
                "libcuhandle's native methods do not match the Java classes: {} is not declared native; {ADVICE}",
                describe_entry(class_name, entry)
            ));
        }
    }
    Ok(())
}

/// `describe` for a raw entry.
///
/// # Safety
/// The entry's name and signature are NUL-terminated.
unsafe fn describe_entry(class_name: &str, entry: &JNINativeMethod) -> String {
    // SAFETY: the caller's contract.
    let (name, signature) = unsafe { (CStr::from_ptr(entry.name).to_string_lossy(), CStr::from_ptr(entry.signature).to_string_lossy()) };
    describe(class_name, &name, &signature)
}

/// "name signature" of each method the library registered for `class_name` when it loaded.
#[cfg(feature = "test-api")]
pub fn registered_at_load(class_name: &str) -> Vec<String> {
    let registered = REGISTERED.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    registered.iter().filter_map(|entry| entry.strip_prefix(class_name)?.strip_prefix(' ')).map(str::to_string).collect()
}

/// "name signature" of a table entry.
#[cfg(any(test, feature = "test-api"))]
fn name_and_signature(entry: &JNINativeMethod) -> String {
    // SAFETY: `native_method!` made both NUL-terminated strings.
    unsafe { format!("{} {}", CStr::from_ptr(entry.name).to_string_lossy(), CStr::from_ptr(entry.signature).to_string_lossy()) }
}

/// Checks, as the library's load does, the entry `from` of `methods` (a table of class
/// `class_name`) under another `name` and `signature`, and binds it only where it is its own
/// entry unchanged: what the load would refuse, with its message (for the test that a renamed or
/// changed method fails the load naming it).
///
/// # Safety
/// As `register`.
#[cfg(feature = "test-api")]
pub unsafe fn register_renamed(
    env: *mut JNIEnv,
    class_name: &str,
    methods: &[NativeMethod<'static>],
    from: &str,
    name: &str,
    signature: &str,
) -> Result<(), String> {
    let original = methods
        .iter()
        .map(entry_of)
        // SAFETY: `native_method!` made the name NUL-terminated.
        .find(|entry| unsafe { CStr::from_ptr(entry.name) }.to_bytes() == from.as_bytes())
        .ok_or_else(|| format!("no entry {from} in the table"))?;
    let (c_name, c_signature) = (java_utf8(name), java_utf8(signature));
    let renamed = JNINativeMethod { name: c_name.as_ptr().cast_mut(), signature: c_signature.as_ptr().cast_mut(), fnPtr: original.fnPtr };
    // SAFETY: the caller's contract; `renamed`'s strings live to the end of this function.
    unsafe {
        let loader = class_loader_of(env, "dev/cuhandle/NativeApi")?;
        let class = find_class(env, loader, class_name).ok_or_else(|| format!("class {} was not found", java_name(class_name)))?;
        check_declared(env, class, class_name, &renamed)?;
        // SAFETY (of the comparison): `native_method!` made the original's signature NUL-terminated.
        let unchanged = name == from && CStr::from_ptr(original.signature).to_bytes() == signature.as_bytes();
        if !unchanged {
            return Err(format!(
                "{} is a method of its own; the function of {from} is not bound to it",
                describe_entry(class_name, &renamed)
            ));
        }
        bind(env, class, class_name, &renamed)
    }
}

/// The raw JNI entry of a table entry.
fn entry_of<'a>(method: &'a NativeMethod<'static>) -> &'a JNINativeMethod {
    // SAFETY: jni documents `NativeMethod` as a `#[repr(transparent)]` wrapper around
    // `JNINativeMethod`, so a reference to one is a reference to the other.
    unsafe { &*(method as *const NativeMethod<'static>).cast::<JNINativeMethod>() }
}

/// The class loader of `anchor` (a class that has no static initialiser, so looking it up runs no
/// Java code): the test-only classes are looked up through it without being initialised.
///
/// # Safety
/// As `register`.
unsafe fn class_loader_of(env: *mut JNIEnv, anchor: &str) -> Result<jobject, String> {
    let name = java_utf8(anchor);
    // SAFETY: the caller's contract; every result is checked before use.
    unsafe {
        let f = &**env;
        let class = (f.v1_1.FindClass)(env, name.as_ptr());
        if class.is_null() {
            (f.v1_1.ExceptionClear)(env);
            return Err(format!("libcuhandle's native methods cannot be registered: class {} was not found", java_name(anchor)));
        }
        let class_class = (f.v1_1.GetObjectClass)(env, class);
        let get_loader = (f.v1_1.GetMethodID)(env, class_class, c"getClassLoader".as_ptr(), c"()Ljava/lang/ClassLoader;".as_ptr());
        let loader =
            if get_loader.is_null() { std::ptr::null_mut() } else { (f.v1_1.CallObjectMethodA)(env, class, get_loader, std::ptr::null()) };
        if (f.v1_2.ExceptionCheck)(env) {
            (f.v1_1.ExceptionClear)(env);
            return Err(
                "libcuhandle's native methods cannot be registered: the class loader of dev.cuhandle.NativeApi cannot be read".to_string()
            );
        }
        (f.v1_1.DeleteLocalRef)(env, class_class);
        (f.v1_1.DeleteLocalRef)(env, class);
        Ok(loader)
    }
}

/// The class `name` from `loader` without initialising it (`Class.forName(name, false, loader)`),
/// or `None` when the loader has no such class.
///
/// # Safety
/// As `register`; `loader` is a live reference or null (the bootstrap loader).
unsafe fn find_class(env: *mut JNIEnv, loader: jobject, name: &str) -> Option<jclass> {
    let (class_class, for_name, signature) =
        (c"java/lang/Class", c"forName", c"(Ljava/lang/String;ZLjava/lang/ClassLoader;)Ljava/lang/Class;");
    let dotted = java_utf8(&java_name(name));
    // SAFETY: the caller's contract; every result is checked before use.
    unsafe {
        let f = &**env;
        let class_class = (f.v1_1.FindClass)(env, class_class.as_ptr());
        let for_name = if class_class.is_null() {
            std::ptr::null_mut()
        } else {
            (f.v1_1.GetStaticMethodID)(env, class_class, for_name.as_ptr(), signature.as_ptr())
        };
        let text = (f.v1_1.NewStringUTF)(env, dotted.as_ptr());
        if for_name.is_null() || text.is_null() {
            (f.v1_1.ExceptionClear)(env);
            return None;
        }
        let args = [jvalue { l: text }, jvalue { z: false }, jvalue { l: loader }];
        let found = (f.v1_1.CallStaticObjectMethodA)(env, class_class, for_name, args.as_ptr());
        (f.v1_1.ExceptionClear)(env); // ClassNotFoundException: the class is not there
        (f.v1_1.DeleteLocalRef)(env, text);
        (f.v1_1.DeleteLocalRef)(env, class_class);
        (!found.is_null()).then_some(found)
    }
}

/// `dev.cuhandle.NativeApi` for `dev/cuhandle/NativeApi`.
fn java_name(jni_name: &str) -> String {
    jni_name.replace('/', ".")
}

/// "static native void dev.cuhandle.NativeApi.eventRecord(long, long) (JNI signature (JJ)V)".
fn describe(class: &str, method: &str, signature: &str) -> String {
    match java_signature(signature) {
        Some((parameters, result)) => {
            format!("static native {result} {}.{method}({}) (JNI signature {signature})", java_name(class), parameters.join(", "))
        }
        None => format!("{}.{method} with JNI signature {signature}", java_name(class)),
    }
}

/// The Java parameter types and result type of a JNI method signature such as `(J[BLjava/lang/String;)V`.
fn java_signature(signature: &str) -> Option<(Vec<String>, String)> {
    let inner = signature.strip_prefix('(')?;
    let (mut parameters_text, result_text) = inner.split_once(')')?;
    let mut parameters = Vec::new();
    while !parameters_text.is_empty() {
        let (parameter, rest) = java_type(parameters_text)?;
        parameters.push(parameter);
        parameters_text = rest;
    }
    match java_type(result_text)? {
        (result, "") => Some((parameters, result)),
        _ => None,
    }
}

/// The first Java type of a JNI type descriptor sequence, and what follows it.
fn java_type(descriptor: &str) -> Option<(String, &str)> {
    let first = descriptor.chars().next()?;
    let rest = &descriptor[first.len_utf8()..];
    let primitive = match first {
        'Z' => "boolean",
        'B' => "byte",
        'C' => "char",
        'S' => "short",
        'I' => "int",
        'J' => "long",
        'F' => "float",
        'D' => "double",
        'V' => "void",
        'L' => {
            let (class, rest) = rest.split_once(';')?;
            let class = class.strip_prefix("java/lang/").filter(|c| !c.contains('/')).map_or_else(|| java_name(class), str::to_string);
            return Some((class, rest));
        }
        '[' => {
            let (element, rest) = java_type(rest)?;
            return Some((format!("{element}[]"), rest));
        }
        _ => return None,
    };
    Some((primitive.to_string(), rest))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jni::natives::CLASSES;

    #[test]
    fn jni_signatures_read_as_java_declarations() {
        assert_eq!(
            describe("dev/cuhandle/NativeApi", "eventRecord", "(JJ)V"),
            "static native void dev.cuhandle.NativeApi.eventRecord(long, long) (JNI signature (JJ)V)"
        );
        assert_eq!(
            java_signature("(Ljava/lang/String;[Ljava/lang/String;[BLjava/nio/ByteBuffer;ZD)Ljava/lang/Object;"),
            Some((
                vec!["String".into(), "String[]".into(), "byte[]".into(), "java.nio.ByteBuffer".into(), "boolean".into(), "double".into()],
                "Object".into()
            ))
        );
        assert_eq!(java_signature("()[J"), Some((vec![], "long[]".into())));
        assert_eq!(java_signature("(J"), None);
        assert_eq!(java_signature("(Q)V"), None);
        assert_eq!(describe("a/B", "m", "bad"), "a.B.m with JNI signature bad");
    }

    #[test]
    fn every_method_of_a_class_has_its_own_name_and_signature() {
        for class in CLASSES {
            let mut seen = std::collections::HashSet::new();
            for method in class.sections.iter().flat_map(|section| section.iter()) {
                let raw = entry_of(method);
                // SAFETY: `native_method!` made both NUL-terminated strings.
                let (name, signature) =
                    unsafe { (CStr::from_ptr(raw.name).to_string_lossy(), CStr::from_ptr(raw.signature).to_string_lossy()) };
                assert!(java_signature(&signature).is_some(), "{name}{signature}");
                assert!(seen.insert(name.to_string()), "{}.{name} registered twice", class.name);
            }
        }
        let native_api = CLASSES.iter().filter(|class| class.name == "dev/cuhandle/NativeApi").flat_map(|class| class.sections.iter());
        assert!(native_api.map(|section| section.len()).sum::<usize>() > 80, "every section of NativeApi is in the table");
        assert_eq!(name_and_signature(entry_of(&CLASSES[0].sections[0][0])).split(' ').count(), 2);
    }
}
