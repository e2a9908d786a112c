//! cuhandle's native half: a pure-Rust core over the CUDA driver API (`core`) and a thin JNI
//! layer (`jni`) that only converts types, catches panics and throws Java exceptions.

pub mod core;
mod jni;
