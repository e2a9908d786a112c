//! The JNI layer: converts Java arguments, calls the core, and turns every error or panic into a
//! Java exception. No CUDA logic lives here.

mod batch_transfer;
mod blas;
mod buffer;
mod completion;
mod cuda;
mod entry;
mod event;
mod graph;
mod handle;
mod host_registration;
mod java_arrays;
mod launch;
mod library;
mod load;
pub(crate) mod logging;
mod native_entry;
mod native_ptr;
mod natives;
mod nvrtc;
mod partition;
mod pinned;
mod raw;
mod registration;
#[cfg(feature = "test-api")]
mod testing;
#[cfg(feature = "test-api")]
mod testing_driver_probe;
#[cfg(feature = "test-api")]
#[cfg(feature = "test-api")]
mod testing_green_context;
mod throw;
mod transfer;
mod variables;
