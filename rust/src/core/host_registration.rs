//! Host memory someone else allocated (a direct ByteBuffer), page-locked for as long as the
//! registration lives (`cuMemHostRegister`, portable): copies between it and the device then run
//! at pinned speed, straight from the memory, with no staging.

use crate::core::context::Context;
use crate::core::error::{Error, Result};
use cudarc::driver::sys::CU_MEMHOSTREGISTER_PORTABLE;
use std::sync::Arc;

pub struct HostRegistration {
    ptr: *mut u8,
    bytes: usize,
    /// The registering context (and a primary context's retain): the memory is unregistered in it.
    ctx: Arc<Context>,
}

// SAFETY: the pointer is host memory the Java owner keeps alive; this type only registers and
// unregisters it, which the driver allows from any thread.
unsafe impl Send for HostRegistration {}
// SAFETY: as above; no method mutates the struct.
unsafe impl Sync for HostRegistration {}

impl HostRegistration {
    /// Page-locks `[ptr, ptr + bytes)` with `ctx` active (the caller activates).
    ///
    /// # Safety
    /// The range must be host memory that stays allocated until the registration is dropped.
    pub unsafe fn register(ctx: &Arc<Context>, ptr: *mut u8, bytes: usize) -> Result<HostRegistration> {
        if ptr.is_null() || bytes == 0 {
            return Err(Error::invalid_argument(format!(
                "cannot page-lock {bytes} bytes at {ptr:p}; expected a direct ByteBuffer of at least 1 byte"
            )));
        }
        // Portable: pinned for every context, like `cuMemHostAlloc`'s portable memory.
        // SAFETY: the caller guarantees the range; the context is active.
        ctx.noted(unsafe { ctx.driver().cuMemHostRegister(ptr.cast(), bytes, CU_MEMHOSTREGISTER_PORTABLE) })?;
        Ok(HostRegistration { ptr, bytes, ctx: Arc::clone(ctx) })
    }
}

impl Drop for HostRegistration {
    /// Unpins the memory (it stays allocated: it belongs to the caller). If the context is gone,
    /// the driver dropped the registration with it.
    fn drop(&mut self) {
        match self.ctx.activate() {
            Ok(_scope) => {
                // SAFETY: registered by `register` in this context, unregistered exactly once.
                if let Err(e) = unsafe { self.ctx.driver().cuMemHostUnregister(self.ptr.cast()) } {
                    log::warn!("unregistering {} bytes of host memory at {:p}: {e}", self.bytes, self.ptr);
                }
            }
            Err(e) => log::debug!("not unregistering host memory at {:p}: its context is gone ({e})", self.ptr),
        }
    }
}
