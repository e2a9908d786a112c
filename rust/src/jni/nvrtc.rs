//! `dev.cuhandle.NativeApi`: run-time compilation with NVRTC (`core::nvrtc`). The cache of
//! compiled images lives in Java (`dev.cuhandle.RuntimeCompiler`).

use crate::core::error::Error;
use crate::core::nvrtc::{self, Outcome, Request, Target};
use crate::jni::java_arrays;
use crate::jni::raw::convert;
use crate::jni::throw::entry;
use jni::sys::{jboolean, jclass, jintArray, jobject, jobjectArray, jstring};
use jni::EnvUnowned;

/// Sets the libnvrtc file (`-Dcuhandle.nvrtc.path`); null or empty restores the default search.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_configureNvrtc<'l>(mut env: EnvUnowned<'l>, _c: jclass, path: jstring) {
    entry!(env, |e| {
        nvrtc::set_path(convert::string(e.get_raw(), path)?);
        Ok(())
    })
}

/// [version ("11.8"), loaded file]; loads NVRTC, so it throws when NVRTC is absent.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_nvrtcDescribe<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jobjectArray {
    entry!(env, |e| {
        let n = nvrtc::loaded()?;
        convert::string_array(e.get_raw(), &[n.version_string(), n.path.clone()])
    })
}

/// The architecture to compile for: `architecture` when non-null, else the one for devices of
/// `capabilities` (10 * major + minor each), PTX when `ptx` is set.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_nvrtcTarget<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, architecture: jstring, capabilities: jintArray, ptx: jboolean,
) -> jstring {
    entry!(env, |e| {
        let raw = e.get_raw();
        let architecture = convert::string(raw, architecture)?;
        let capabilities = if capabilities.is_null() { Vec::new() } else { java_arrays::ints(raw, capabilities, "the compute capabilities")? };
        let target = nvrtc::loaded()?.target(architecture.as_deref(), &capabilities, ptx)?;
        convert::new_string(raw, &target.name())
    })
}

/// Compiles for `target` (a name from `nvrtcTarget`). Returns the image as a `byte[]`, or, when NVRTC
/// ends the compilation with an error, a `String[]` of its result number, the result's name and its
/// log (Java throws `CompileException` with them).
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_nvrtcCompile<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, source: jstring, program_name: jstring, header_names: jobjectArray, header_sources: jobjectArray,
    options: jobjectArray, target: jstring,
) -> jobject {
    entry!(env, |e| {
        let raw = e.get_raw();
        let text = |s: jstring, what: &str| -> crate::jni::throw::JniResult<String> {
            convert::string(raw, s)?.ok_or_else(|| Error::invalid_argument(format!("{what} is null")).into())
        };
        let names = java_arrays::strings(raw, header_names, "the header names")?;
        let sources = java_arrays::strings(raw, header_sources, "the header sources")?;
        if names.len() != sources.len() {
            return Err(Error::invalid_argument(format!("{} header names but {} header sources", names.len(), sources.len())).into());
        }
        let request = Request {
            source: text(source, "the CUDA source")?,
            program_name: text(program_name, "the program name")?,
            headers: names.into_iter().zip(sources).collect(),
            options: java_arrays::strings(raw, options, "the options")?,
        };
        let target = Target::parse(&text(target, "the architecture")?)?;
        match nvrtc::loaded()?.compile(&request, &target)? {
            Outcome::Compiled { image, .. } => Ok(java_arrays::new_bytes(raw, &image)?),
            Outcome::Failed { result, name, log } => Ok(convert::string_array(raw, &[result.to_string(), name, log])?),
        }
    })
}
