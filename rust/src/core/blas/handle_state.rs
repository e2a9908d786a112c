//! What BLAS keeps per handle, attached to it (see `handle::attachments`): the context's functions
//! of the kernels and the reduction workspace.

use super::functions::Functions;
use super::host_result::{HostResult, HOST_RESULT_BYTES};
use crate::core::error::{Error, Result};
use crate::core::handle::{Attachment, Handle};
use crate::core::kernels::abi;
use crate::core::memory::device::DeviceMemory;
use std::sync::{Arc, Mutex, MutexGuard};

/// Scratch memory for reductions: device partials and a counter, then a 16-byte aligned result
/// slot for host reads when the pinned host slot is not mapped; and the pinned host slot results
/// are read from. One per handle, so that reductions on different handles never wait for each
/// other; the reductions of one handle use it one after another, in stream order. Dropping it
/// frees both (the device part in stream order).
pub struct Workspace {
    pub device: DeviceMemory,
    pub host: HostResult,
}

/// Where the device result slot starts in the workspace's device memory.
pub const RESULT_SLOT: usize = abi::CUH_WORKSPACE_BYTES.next_multiple_of(16);
/// Bytes of a handle's reduction workspace: the partials and counter, then the result slot.
pub const WORKSPACE_BYTES: usize = RESULT_SLOT + 16;

/// BLAS's attachment to a handle.
pub struct HandleState {
    functions: Arc<Functions>,
    workspace: Mutex<Option<Workspace>>,
}

impl Attachment for HandleState {}

impl HandleState {
    /// BLAS's state of `handle`, made on the first BLAS call; the handle's context must be active.
    #[inline]
    pub fn of(handle: &Handle) -> Result<&HandleState> {
        handle.attachment(|| Ok(HandleState { functions: Functions::of(handle.context())?, workspace: Mutex::new(None) }))
    }

    /// The kernels' functions in the handle's context.
    #[inline]
    pub fn functions(&self) -> &Functions {
        &self.functions
    }

    /// The reduction workspace, created on first use, locked for one reduction. The handle's
    /// context must be active.
    pub fn workspace(&self, handle: &Handle) -> Result<MutexGuard<'_, Option<Workspace>>> {
        let mut guard = self.workspace.lock().map_err(|_| Error::invalid_state("handle workspace lock poisoned"))?;
        if guard.is_none() {
            let queue = handle.queue()?;
            // On any failure below, `device` is dropped and so freed (no leak on a failed setup).
            let device = handle.allocate(WORKSPACE_BYTES)?;
            device.memset(0, WORKSPACE_BYTES, 0, &queue)?;
            let host = HostResult::new(handle.allocate_pinned(HOST_RESULT_BYTES)?, handle.context())?;
            *guard = Some(Workspace { device, host });
        }
        Ok(guard)
    }
}
