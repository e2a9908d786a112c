//! `dev.cuhandle.NativeApi`: run-time compilation with NVRTC (`core::nvrtc`). The cache of
//! compiled images lives in Java (`dev.cuhandle.RuntimeCompiler`); its entries are read here
//! (`core::own_file`), since Java cannot check an opened file's owner and links.

use crate::core::error::Error;
use crate::core::nvrtc::{self, Outcome, Request, Target};
use crate::core::own_file;
use crate::jni::entry::entry;
use crate::jni::java_arrays;
use crate::jni::native_entry::native;
use crate::jni::raw::convert;
use crate::jni::throw::JniResult;
use jni::objects::{JClass, JIntArray, JObject, JObjectArray, JString};
use jni::sys::{jboolean, jint, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn configure_nvrtc(nvrtc_path: JString)),
    native!(static raw fn nvrtc_describe() -> JString[]),
    native!(static raw fn nvrtc_target(architecture: JString, compute_capabilities: jint[], ptx_only: jboolean) -> JString),
    native!(static raw fn read_own_file(path: JString, uid: jint, min_bytes: jlong, max_bytes: jlong) -> JObject),
    native!(
        static raw fn nvrtc_compile(source: JString, program_name: JString, header_names: JString[], header_sources: JString[], flags: JString[], target: JString)
            -> JObject
    ),
];

/// Sets the libnvrtc file (`-Dcuhandle.nvrtc.path`); null or empty restores the default search.
fn configure_nvrtc(env: EnvUnowned<'_>, _: JClass<'_>, path: JString<'_>) {
    entry!(env, |e| {
        nvrtc::set_path(convert::string(e, &path)?);
        Ok(())
    })
}

/// [version ("11.8"), loaded file]; loads NVRTC, so it throws when NVRTC is absent.
fn nvrtc_describe<'l>(env: EnvUnowned<'l>, _: JClass<'l>) -> JObjectArray<'l, JString<'l>> {
    entry!(env, |e| {
        let n = nvrtc::loaded()?;
        convert::string_array(e, &[n.version_string(), n.path.clone()])
    })
}

/// The architecture to compile for: `architecture` when non-null, else the one for devices of
/// `capabilities` (10 * major + minor each), PTX when `ptx` is set.
fn nvrtc_target<'l>(
    env: EnvUnowned<'l>,
    _: JClass<'l>,
    architecture: JString<'l>,
    capabilities: JIntArray<'l>,
    ptx: jboolean,
) -> JString<'l> {
    entry!(env, |e| {
        let architecture = convert::string(e, &architecture)?;
        let capabilities =
            if capabilities.is_null() { Vec::new() } else { java_arrays::ints(e, &capabilities, "the compute capabilities")? };
        let target = nvrtc::loaded()?.target(architecture.as_deref(), &capabilities, ptx)?;
        convert::new_string(e, &target.name())
    })
}

/// A compile cache entry (`core::own_file`): its bytes as a `byte[]`, null when absent, or a
/// `String` saying why it is not used.
fn read_own_file<'l>(env: EnvUnowned<'l>, _: JClass<'l>, path: JString<'l>, uid: jint, min_bytes: jlong, max_bytes: jlong) -> JObject<'l> {
    entry!(env, |e| {
        let path = convert::string(e, &path)?.ok_or_else(|| Error::invalid_argument("the path is null"))?;
        let (Ok(uid), Ok(min), Ok(max)) = (u32::try_from(uid), u64::try_from(min_bytes), u64::try_from(max_bytes)) else {
            return Err(
                Error::invalid_argument(format!("uid {uid}, minBytes {min_bytes} and maxBytes {max_bytes} must not be negative")).into()
            );
        };
        Ok(match own_file::read_own_file(&path, uid, min, max) {
            Ok(bytes) => java_arrays::new_bytes(e, &bytes)?.into(),
            Err(own_file::Refusal::Absent) => JObject::null(),
            Err(own_file::Refusal::Refused(why)) => convert::new_string(e, &why)?.into(),
        })
    })
}

/// Compiles for `target` (a name from `nvrtcTarget`). Returns the image as a `byte[]`, or, when NVRTC
/// ends the compilation with an error, a `String[]` of its result number, the result's name and its
/// log (Java throws `CompileException` with them).
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn nvrtc_compile<'l>(
    env: EnvUnowned<'l>,
    _: JClass<'l>,
    source: JString<'l>,
    program_name: JString<'l>,
    header_names: JObjectArray<'l, JString<'l>>,
    header_sources: JObjectArray<'l, JString<'l>>,
    options: JObjectArray<'l, JString<'l>>,
    target: JString<'l>,
) -> JObject<'l> {
    entry!(env, |e| {
        let text = |s: &JString<'_>, what: &str| -> JniResult<String> {
            convert::string(e, s)?.ok_or_else(|| Error::invalid_argument(format!("{what} is null")).into())
        };
        let names = java_arrays::strings(e, &header_names, "the header names")?;
        let sources = java_arrays::strings(e, &header_sources, "the header sources")?;
        if names.len() != sources.len() {
            return Err(Error::invalid_argument(format!("{} header names but {} header sources", names.len(), sources.len())).into());
        }
        let request = Request {
            source: text(&source, "the CUDA source")?,
            program_name: text(&program_name, "the program name")?,
            headers: names.into_iter().zip(sources).collect(),
            options: java_arrays::strings(e, &options, "the options")?,
        };
        let target = Target::parse(&text(&target, "the architecture")?)?;
        Ok(match nvrtc::loaded()?.compile(&request, &target)? {
            Outcome::Compiled { image, .. } => java_arrays::new_bytes(e, &image)?.into(),
            Outcome::Failed { result, name, log } => convert::string_array(e, &[result.to_string(), name, log])?.into(),
        })
    })
}
