//! `dev.cuhandle.NativeApi`: run-time compilation with NVRTC (`core::nvrtc`). The cache of
//! compiled images lives in Java (`dev.cuhandle.RuntimeCompiler`).

use crate::core::error::Error;
use crate::core::nvrtc::{self, Outcome, Request, Target};
use crate::jni::java_arrays;
use crate::jni::native_entry::native;
use crate::jni::raw::convert;
use crate::jni::entry::entry;
use crate::jni::throw::JniResult;
use jni::objects::{JClass, JIntArray, JObject, JObjectArray, JString};
use jni::sys::jboolean;
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn configure_nvrtc(nvrtc_path: JString)),
    native!(static raw fn nvrtc_describe() -> JString[]),
    native!(static raw fn nvrtc_target(architecture: JString, compute_capabilities: jint[], ptx_only: jboolean) -> JString),
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
fn nvrtc_target<'l>(env: EnvUnowned<'l>, _: JClass<'l>, architecture: JString<'l>, capabilities: JIntArray<'l>, ptx: jboolean) -> JString<'l> {
    entry!(env, |e| {
        let architecture = convert::string(e, &architecture)?;
        let capabilities = if capabilities.is_null() { Vec::new() } else { java_arrays::ints(e, &capabilities, "the compute capabilities")? };
        let target = nvrtc::loaded()?.target(architecture.as_deref(), &capabilities, ptx)?;
        convert::new_string(e, &target.name())
    })
}

/// Compiles for `target` (a name from `nvrtcTarget`). Returns the image as a `byte[]`, or, when NVRTC
/// ends the compilation with an error, a `String[]` of its result number, the result's name and its
/// log (Java throws `CompileException` with them).
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn nvrtc_compile<'l>(
    env: EnvUnowned<'l>, _: JClass<'l>, source: JString<'l>, program_name: JString<'l>, header_names: JObjectArray<'l, JString<'l>>,
    header_sources: JObjectArray<'l, JString<'l>>, options: JObjectArray<'l, JString<'l>>, target: JString<'l>,
) -> JObject<'l> {
    entry!(env, |e| {
        let text = |s: &JString<'_>, what: &str| -> JniResult<String> { convert::string(e, s)?.ok_or_else(|| Error::invalid_argument(format!("{what} is null")).into()) };
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
