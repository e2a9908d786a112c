//! The native table: every native method of cuhandle's Java classes, registered from `JNI_OnLoad`
//! with `RegisterNatives` (the library exports no `Java_…` symbols). Each entry's JNI signature is
//! derived at compile time from the types of the Rust function it registers (`native_entry`), so
//! the Rust side cannot disagree with its own table; `registration` checks every entry against the
//! Java class while the library loads, so a method renamed, or given other parameters or another
//! result, on one side only fails the load with a message naming it, instead of failing at its
//! first call.
//!
//! Every entry is a static method, and a `long` that points to a native object is typed by what it
//! points to (`native_ptr`), with the contract stated there.

use crate::jni::registration::NativeClass;
use crate::jni::{
    batch_transfer, blas, buffer, completion, cuda, event, graph, handle, host_registration, launch, library, nvrtc, partition, pinned,
    transfer, variables,
};
#[cfg(feature = "test-api")]
use crate::jni::{testing, testing_driver_probe, testing_green_context};

/// Every class cuhandle's library registers methods of.
pub const CLASSES: &[NativeClass] = &[
    NativeClass {
        name: "dev/cuhandle/NativeApi",
        sections: &[
            cuda::METHODS,
            nvrtc::METHODS,
            handle::METHODS,
            partition::METHODS,
            buffer::METHODS,
            transfer::METHODS,
            batch_transfer::METHODS,
            host_registration::METHODS,
            library::METHODS,
            launch::METHODS,
            variables::METHODS,
            graph::METHODS,
            event::METHODS,
            blas::METHODS,
            completion::METHODS,
            pinned::METHODS,
        ],
        required: true,
    },
    #[cfg(feature = "test-api")]
    NativeClass { name: "dev/cuhandle/NativeTestApi", sections: &[testing::METHODS], required: false },
    #[cfg(feature = "test-api")]
    NativeClass { name: "dev/cuhandle/GreenContextTestApi", sections: &[testing_green_context::METHODS], required: false },
    #[cfg(feature = "test-api")]
    NativeClass { name: "dev/cuhandle/DriverProbeTestApi", sections: &[testing_driver_probe::METHODS], required: false },
];
