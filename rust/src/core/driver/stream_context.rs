//! Which drivers run stream-ordered work in the stream's own context whatever is current on the
//! calling thread, so that a call on a handle's own stream may skip activating the context (the
//! `cuCtxGetCurrent` and the two `cuCtxSetCurrent` around it) and still leave the caller's current
//! context untouched (rule H4).
//!
//! Measured by tests/bench/contextless_probe.cu on the H200 with driver 580 (CUDA 13.0), with
//! nothing current and with another context current: `cuLaunchKernel`, `cuMemsetD8Async`,
//! `cuMemAllocFromPoolAsync` and `cuMemFreeAsync` on a stream of context A work in A and leave
//! the other context current. Older drivers, never measured, keep the activated calls; a driver
//! that asks for a current context after all answers `CUDA_ERROR_INVALID_CONTEXT` before it queues
//! anything, and the callers then take the activated path.

use crate::core::driver::Driver;

/// The first driver version measured to take a call's context from its stream.
const STREAM_CONTEXT_SINCE: i32 = 13000;

/// Whether stream-ordered calls on a non-null stream of a live context may skip activation.
pub fn calls_take_the_streams_context(driver: &Driver) -> bool {
    takes_the_streams_context(driver.version)
}

fn takes_the_streams_context(driver_version: i32) -> bool {
    driver_version >= STREAM_CONTEXT_SINCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_drivers_measured_to_take_the_streams_context_skip_activation() {
        assert!(!takes_the_streams_context(12080));
        assert!(takes_the_streams_context(13000));
        assert!(takes_the_streams_context(13010));
    }
}
