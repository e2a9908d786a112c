//! Which streams used an object, so that its release waits for exactly that work and nothing else
//! (rule L3). Two kinds of release, one concept:
//!
//! - **in stream order** (`memory`, `Uses`): device memory is freed on a stream made to wait, on the
//!   GPU, for every other stream that used it; the host never waits.
//! - **on the host** (`host_released`, `UseLog`): a library is unloaded by the host, which first
//!   waits for the streams whose work runs its kernels or reads its variables.
//!
//! Both record a use per stream under its lease or attachment (`streams::StreamUse`): a use whose
//! lease or attachment ended was synchronised then and needs no waiting.

pub mod host_released;
pub mod memory;

pub use host_released::UseLog;
pub use memory::Uses;
