//! The one error type of the native core. The JNI layer maps each variant onto a Java exception
//! (see `jni/throw.rs`); nothing here knows about Java.

use std::fmt;

/// A failed CUDA driver call: the raw `CUresult`, the operation that failed, and a message that
/// already holds the driver's own name and description of the code where the driver could give
/// them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CudaFailure {
    pub code: i32,
    pub operation: String,
    pub message: String,
}

impl fmt::Display for CudaFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} failed: {}", self.operation, self.message)
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
// named as in cuda.h; kept here once so that every module means the same number.
pub const CUDA_ERROR_INVALID_VALUE: i32 = 1;
pub const CUDA_ERROR_OUT_OF_MEMORY: i32 = 2;
pub const CUDA_ERROR_NOT_INITIALIZED: i32 = 3;
pub const CUDA_ERROR_INVALID_CONTEXT: i32 = 201;
pub const CUDA_ERROR_FILE_NOT_FOUND: i32 = 301;
pub const CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND: i32 = 302;
pub const CUDA_ERROR_SHARED_OBJECT_INIT_FAILED: i32 = 303;
pub const CUDA_ERROR_NOT_FOUND: i32 = 500;
pub const CUDA_ERROR_NOT_READY: i32 = 600;
pub const CUDA_ERROR_CONTEXT_IS_DESTROYED: i32 = 709;
pub const CUDA_ERROR_NOT_SUPPORTED: i32 = 801;
pub const CUDA_ERROR_UNKNOWN: i32 = 999;

impl Error {
    pub fn cuda(code: i32, operation: impl Into<String>, message: impl Into<String>) -> Error {
        Error::Cuda(CudaFailure { code, operation: operation.into(), message: message.into() })
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
