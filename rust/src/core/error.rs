//! The one error type of the native core. The JNI layer maps each variant onto a Java exception
//! (see `jni/throw.rs`); nothing here knows about Java.

use cudarc::driver::sys::CUresult;
use std::fmt;

/// A failed CUDA driver call: the raw `CUresult`, the operation that failed, a message that
/// already holds the driver's own name and description of the code where the driver could give
/// them, and what the driver logged on the failing thread about it (CUDA 12.9+ drivers explain a
/// failure in their error log, often naming the parameter; empty where there is none).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaFailure {
    pub code: i32,
    pub operation: String,
    pub message: String,
    pub driver_log: String,
}

impl CudaFailure {
    pub fn new(code: i32, operation: impl Into<String>, message: impl Into<String>) -> CudaFailure {
        CudaFailure { code, operation: operation.into(), message: message.into(), driver_log: String::new() }
    }
}

impl fmt::Display for CudaFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.operation, self.message)?;
        if !self.driver_log.is_empty() {
            write!(f, "; the driver's log: {}", self.driver_log)?;
        }
        Ok(())
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A driver call returned something other than `CUDA_SUCCESS`, or the driver could not be
    /// used at all (then `code` is the closest `CUresult`, e.g. `CUDA_ERROR_FILE_NOT_FOUND`).
    #[error("{0}")]
    Cuda(CudaFailure),
    /// The caller passed something invalid (maps to `IllegalArgumentException`).
    #[error("{0}")]
    InvalidArgument(String),
    /// The object is in a state that forbids the call, e.g. closed (`IllegalStateException`).
    #[error("{0}")]
    InvalidState(String),
}

pub type Result<T> = std::result::Result<T, Error>;

// The driver's (and NVRTC's, mapped onto them) result codes that cuhandle makes or tests for,
// named as in cuda.h; kept here once so that every module means the same number. The numbers
// come from cudarc's bindgen of cuda.h, never written by hand (a hand-written attribute number
// was once off by one, b76317b).
macro_rules! cuda_results {
    ($($name:ident),* $(,)?) => {
        $(pub const $name: i32 = CUresult::$name as i32;)*
    };
}
cuda_results!(
    CUDA_ERROR_INVALID_VALUE,
    CUDA_ERROR_OUT_OF_MEMORY,
    CUDA_ERROR_NOT_INITIALIZED,
    CUDA_ERROR_INVALID_CONTEXT,
    CUDA_ERROR_INVALID_DEVICE,
    CUDA_ERROR_FILE_NOT_FOUND,
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
    CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
    CUDA_ERROR_NOT_FOUND,
    CUDA_ERROR_NOT_READY,
    CUDA_ERROR_CONTEXT_IS_DESTROYED,
    CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_TIMEOUT,
    CUDA_ERROR_UNKNOWN,
);

impl Error {
    pub fn cuda(code: i32, operation: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Cuda(CudaFailure::new(code, operation, message))
    }

    /// The same error with a CUDA failure's operation named more precisely (e.g. which attribute
    /// a `cuMemPoolSetAttribute` set); other kinds are unchanged.
    pub fn in_operation(self, operation: &str) -> Error {
        match self {
            Error::Cuda(failure) => Error::Cuda(CudaFailure { operation: operation.to_string(), ..failure }),
            other => other,
        }
    }

    /// The same error with a CUDA failure's message reworded by `wording` from the driver's (a more
    /// precise wording of the same code, operation and driver log); other kinds are unchanged.
    pub fn reworded(self, wording: impl FnOnce(&str) -> String) -> Error {
        match self {
            Error::Cuda(failure) => Error::Cuda(CudaFailure { message: wording(&failure.message), ..failure }),
            other => other,
        }
    }

    pub fn invalid_argument(message: impl Into<String>) -> Error {
        Error::InvalidArgument(message.into())
    }

    pub fn invalid_state(message: impl Into<String>) -> Error {
        Error::InvalidState(message.into())
    }

    /// The `CUresult` of a CUDA failure, `None` for the other kinds.
    pub fn cuda_code(&self) -> Option<i32> {
        match self {
            Error::Cuda(f) => Some(f.code),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuda_error_displays_operation_and_message() {
        let e = Error::cuda(100, "cuInit", "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected");
        assert_eq!(e.to_string(), "cuInit failed: CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected");
        assert_eq!(e.cuda_code(), Some(100));
        assert_eq!(Error::invalid_argument("x").cuda_code(), None);
    }
}
