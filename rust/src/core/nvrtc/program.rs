//! One NVRTC compilation: create the program, compile it, read the log and the image, destroy it.

use super::api::{self, NvrtcApi, NvrtcResult, Program};
use super::target::{Output, Target};
use crate::core::error::{Error, Result};
use std::ffi::{c_char, CStr, CString};

/// What to compile. `options` are NVRTC options without the architecture (the target adds it).
#[derive(Debug, Clone, Default)]
pub struct Request {
    pub source: String,
    pub program_name: String,
    /// (include name, source) pairs that `#include "name"` finds.
    pub headers: Vec<(String, String)>,
    pub options: Vec<String>,
}

/// How a compilation ended.
#[derive(Debug)]
pub enum Outcome {
    /// The image (a cubin, or PTX text without its terminating NUL) and NVRTC's log (warnings;
    /// often empty).
    Compiled { image: Vec<u8>, log: String },
    /// NVRTC returned `result` (named `name`, e.g. `NVRTC_ERROR_COMPILATION` (6) when the source does
    /// not compile) and wrote `log` (with line numbers; empty when NVRTC failed before compiling).
    Failed { result: NvrtcResult, name: String, log: String },
}

/// The options NVRTC receives: the caller's, then the architecture (an architecture among the
/// caller's options is refused earlier, so there is exactly one).
pub fn arguments(request: &Request, target: &Target) -> Vec<String> {
    request.options.iter().cloned().chain(std::iter::once(target.option())).collect()
}

fn c_string(text: &str, what: &str) -> Result<CString> {
    CString::new(text).map_err(|_| Error::invalid_argument(format!("{what} contains a NUL character")))
}

/// NVRTC's name for `rc` (`nvrtcGetErrorString` gives the enumerator's name), or `nvrtcResult N`.
fn result_name(api: &NvrtcApi, rc: NvrtcResult) -> String {
    // SAFETY: nvrtcGetErrorString returns a pointer to a static string (or null, checked below).
    let name = unsafe { (api.nvrtcGetErrorString)(rc) };
    if name.is_null() {
        format!("nvrtcResult {rc}")
    } else {
        // SAFETY: non-null, NUL-terminated static string owned by NVRTC.
        unsafe { CStr::from_ptr(name) }.to_string_lossy().into_owned()
    }
}

/// A compilation that NVRTC ended with `rc`, with what NVRTC logged.
fn failed(api: &NvrtcApi, rc: NvrtcResult, log: String) -> Outcome {
    Outcome::Failed { result: rc, name: result_name(api, rc), log }
}

/// Destroys the program however the compilation ends.
struct Guard<'a> {
    api: &'a NvrtcApi,
    raw: Program,
}

impl Drop for Guard<'_> {
    fn drop(&mut self) {
        // SAFETY: `raw` was created by nvrtcCreateProgram and is destroyed exactly once, here.
        let rc = unsafe { (self.api.nvrtcDestroyProgram)(&mut self.raw) };
        if rc != api::NVRTC_SUCCESS {
            log::warn!("nvrtcDestroyProgram failed with nvrtcResult {rc}");
        }
    }
}

impl Guard<'_> {
    /// Reads a size and then that many bytes through one of NVRTC's size/content function pairs.
    fn read(
        &self,
        size_fn: unsafe extern "C" fn(Program, *mut usize) -> NvrtcResult,
        content_fn: unsafe extern "C" fn(Program, *mut c_char) -> NvrtcResult,
    ) -> std::result::Result<Vec<u8>, NvrtcResult> {
        let mut size = 0usize;
        // SAFETY: a live program and a valid out-pointer.
        let rc = unsafe { size_fn(self.raw, &mut size) };
        if rc != api::NVRTC_SUCCESS {
            return Err(rc);
        }
        let mut bytes = vec![0u8; size];
        if size > 0 {
            // SAFETY: NVRTC writes exactly the `size` bytes it just reported.
            let rc = unsafe { content_fn(self.raw, bytes.as_mut_ptr().cast()) };
            if rc != api::NVRTC_SUCCESS {
                return Err(rc);
            }
        }
        Ok(bytes)
    }

    fn log(&self) -> std::result::Result<String, NvrtcResult> {
        let bytes = self.read(self.api.nvrtcGetProgramLogSize, self.api.nvrtcGetProgramLog)?;
        Ok(String::from_utf8_lossy(&bytes).trim_end_matches('\0').trim_end().to_string())
    }
}

/// Compiles `request` for `target`.
pub fn compile(api: &NvrtcApi, request: &Request, target: &Target) -> Result<Outcome> {
    let source = c_string(&request.source, "the CUDA source")?;
    let name = c_string(&request.program_name, "the program name")?;
    let mut header_names = Vec::with_capacity(request.headers.len());
    let mut header_sources = Vec::with_capacity(request.headers.len());
    for (header, text) in &request.headers {
        header_names.push(c_string(header, &format!("the header name '{header}'"))?);
        header_sources.push(c_string(text, &format!("header '{header}'"))?);
    }
    let options = arguments(request, target).iter().map(|o| c_string(o, &format!("the option '{o}'"))).collect::<Result<Vec<_>>>()?;
    let header_name_ptrs: Vec<*const c_char> = header_names.iter().map(|c| c.as_ptr()).collect();
    let header_source_ptrs: Vec<*const c_char> = header_sources.iter().map(|c| c.as_ptr()).collect();
    let option_ptrs: Vec<*const c_char> = options.iter().map(|c| c.as_ptr()).collect();
    let count = |n: usize| i32::try_from(n).map_err(|_| Error::invalid_argument(format!("{n} headers or options are too many for NVRTC")));

    let mut raw: Program = std::ptr::null_mut();
    // SAFETY: every string is NUL-terminated and outlives the call; the two header arrays have
    // `headers.len()` entries each; NVRTC copies what it keeps.
    let rc = unsafe {
        (api.nvrtcCreateProgram)(
            &mut raw,
            source.as_ptr(),
            name.as_ptr(),
            count(header_names.len())?,
            header_source_ptrs.as_ptr(),
            header_name_ptrs.as_ptr(),
        )
    };
    if rc != api::NVRTC_SUCCESS {
        return Ok(failed(api, rc, String::new()));
    }
    let program = Guard { api, raw };
    // SAFETY: a live program; `option_ptrs` holds `options.len()` NUL-terminated strings that
    // outlive the call.
    let rc = unsafe { (api.nvrtcCompileProgram)(program.raw, count(option_ptrs.len())?, option_ptrs.as_ptr()) };
    let log = match program.log() {
        Ok(log) => log,
        Err(log_rc) => return Ok(failed(api, if rc == api::NVRTC_SUCCESS { log_rc } else { rc }, String::new())),
    };
    match rc {
        api::NVRTC_SUCCESS => {}
        api::NVRTC_ERROR_INVALID_OPTION => {
            return Err(Error::invalid_argument(format!(
                "NVRTC refused the options {:?} ({} ({rc})){}",
                arguments(request, target),
                result_name(api, rc),
                if log.is_empty() { String::new() } else { format!(": {log}") }
            )))
        }
        other => return Ok(failed(api, other, log)),
    }
    let image = match target.output {
        Output::Cubin => program.read(api.nvrtcGetCUBINSize, api.nvrtcGetCUBIN),
        Output::Ptx => program.read(api.nvrtcGetPTXSize, api.nvrtcGetPTX),
    };
    let mut image = match image {
        Ok(image) => image,
        Err(rc) => return Ok(failed(api, rc, log)),
    };
    if target.output == Output::Ptx {
        // The PTX size counts its terminating NUL; the image is the text alone.
        while image.last() == Some(&0) {
            image.pop();
        }
    }
    Ok(Outcome::Compiled { image, log })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_architecture_comes_last_after_the_callers_options() {
        let request = Request { options: vec!["-DN=4".into(), "--use_fast_math".into()], ..Request::default() };
        let target = Target::parse("sm_80").expect("sm_80");
        assert_eq!(arguments(&request, &target), vec!["-DN=4", "--use_fast_math", "--gpu-architecture=sm_80"]);
        assert_eq!(arguments(&Request::default(), &target), vec!["--gpu-architecture=sm_80"]);
    }
}
