//! The table of NVRTC entry points cuhandle calls, resolved once from the loaded libnvrtc.
//!
//! Why a hand-written table instead of cudarc's `nvrtc` module: cudarc's dynamic loading panics
//! when libnvrtc is missing and cannot be pointed at a specific file, and NVRTC is optional for
//! cuhandle (everything but run-time compilation works without it). Every symbol here exists in
//! NVRTC 11.2 and newer (`nvrtcGetCUBIN` arrived in 11.1, `nvrtcGetSupportedArchs` in 11.2), so a
//! missing one means the file is no NVRTC we can use, and is reported by name.

use std::ffi::{c_char, c_int, c_void};

/// A raw `nvrtcResult`.
pub type NvrtcResult = c_int;
/// An opaque `nvrtcProgram`.
pub type Program = *mut c_void;

/// `NVRTC_SUCCESS`.
pub const NVRTC_SUCCESS: NvrtcResult = 0;
/// `NVRTC_ERROR_INVALID_OPTION`: an option NVRTC does not know or a bad value.
pub const NVRTC_ERROR_INVALID_OPTION: NvrtcResult = 5;
/// `NVRTC_ERROR_COMPILATION`: the source did not compile; the log says why.
#[cfg(test)]
pub const NVRTC_ERROR_COMPILATION: NvrtcResult = 6;

macro_rules! nvrtc_api {
    ( $( $name:ident ( $( $arg:ty ),* ) -> $ret:ty; )* ) => {
        /// Entry points of NVRTC, all required.
        #[allow(non_snake_case)]
        pub struct NvrtcApi {
            $( pub $name: unsafe extern "C" fn( $( $arg ),* ) -> $ret, )*
        }

        impl NvrtcApi {
            /// Resolves every symbol from `lib`; the first missing one is named in the error.
            #[allow(non_snake_case)]
            pub(super) fn resolve(lib: &libloading::Library) -> std::result::Result<NvrtcApi, &'static str> {
                $(
                    // SAFETY: the symbol's C signature is the one declared in nvrtc.h (11.2 and
                    // later) for this exported name; copying the function pointer out is sound
                    // because the library is never unloaded (it lives in a process-wide static).
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn( $( $arg ),* ) -> $ret>(concat!(stringify!($name), "\0").as_bytes())
                            .map_err(|_| stringify!($name))?
                    };
                )*
                Ok(NvrtcApi { $( $name, )* })
            }
        }
    };
}

nvrtc_api! {
    nvrtcVersion(*mut c_int, *mut c_int) -> NvrtcResult;
    nvrtcGetErrorString(NvrtcResult) -> *const c_char;
    nvrtcGetNumSupportedArchs(*mut c_int) -> NvrtcResult;
    nvrtcGetSupportedArchs(*mut c_int) -> NvrtcResult;
    nvrtcCreateProgram(*mut Program, *const c_char, *const c_char, c_int, *const *const c_char, *const *const c_char) -> NvrtcResult;
    nvrtcDestroyProgram(*mut Program) -> NvrtcResult;
    nvrtcCompileProgram(Program, c_int, *const *const c_char) -> NvrtcResult;
    nvrtcGetProgramLogSize(Program, *mut usize) -> NvrtcResult;
    nvrtcGetProgramLog(Program, *mut c_char) -> NvrtcResult;
    nvrtcGetPTXSize(Program, *mut usize) -> NvrtcResult;
    nvrtcGetPTX(Program, *mut c_char) -> NvrtcResult;
    nvrtcGetCUBINSize(Program, *mut usize) -> NvrtcResult;
    nvrtcGetCUBIN(Program, *mut c_char) -> NvrtcResult;
}
