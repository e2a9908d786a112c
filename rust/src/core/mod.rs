//! The pure-Rust core: no JNI types here, so `cargo test` exercises it directly.

pub mod configured_path;
pub mod context;
pub mod device;
pub mod driver;
pub mod error;
pub mod event;
pub mod graph;
pub mod handle;
pub mod host_registration;
pub mod image;
pub mod kernels;
pub mod launch;
pub mod ld_so_cache;
pub mod library;
pub mod library_search;
pub mod memory;
pub mod nvrtc;
pub mod param_layout;
pub mod raw_value;
pub mod shared_library;
pub mod blas;
pub mod completion;
pub mod sticky;
pub mod streams;
pub mod transfer;
pub mod variables;
