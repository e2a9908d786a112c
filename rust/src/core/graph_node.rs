//! Kernel nodes of a captured graph that change without a new capture (rules L7, K2 in Java):
//! while capturing, the caller names the launch it just recorded (`last_captured_node`: the one
//! node the capture stream's next work would depend on); later, `Graph::set_kernel_node` gives that
//! node new arguments, grid or block in the executable graph (`cuGraphExecKernelNodeSetParams`).
//! The driver applies the change to later launches only: replays already queued keep the values
//! they were queued with, so a change never races the GPU.

use crate::core::driver::launch_config::LaunchShape;
use crate::core::error::{Error, Result};
use crate::core::graph::{self, Graph};
use crate::core::handle::Handle;
use crate::core::launch::MAX_KERNEL_ARGS;
use cudarc::driver::sys::{CUDA_KERNEL_NODE_PARAMS_v2, CUfunction, CUgraphNode, CUstreamCaptureStatus};
use std::ffi::c_void;

/// `CU_STREAM_CAPTURE_STATUS_ACTIVE`.
const CAPTURE_ACTIVE: i32 = CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_ACTIVE as i32;

/// The node the handle's running capture recorded last, which the caller knows to be a kernel
/// launch (the Java capture counts the calls in between): the capture stream's current
/// dependencies (`cuStreamGetCaptureInfo`), which after a launch are that launch's node alone.
pub fn last_captured_node(handle: &Handle) -> Result<usize> {
    let stream = graph::capture_stream(handle)?;
    let _scope = handle.activate()?;
    let ctx = handle.context();
    let (mut status, mut id, mut graph, mut dependencies, mut count) = (0, 0u64, std::ptr::null_mut(), std::ptr::null(), 0usize);
    // SAFETY: the capture's private stream, a live stream of the active context; every out-pointer
    // is a valid local.
    ctx.noted(unsafe { ctx.driver().cuStreamGetCaptureInfo(stream, &mut status, &mut id, &mut graph, &mut dependencies, &mut count) })?;
    if status != CAPTURE_ACTIVE {
        return Err(Error::invalid_state("the capture was invalidated by an earlier call; its graph will fail to end"));
    }
    if count != 1 || dependencies.is_null() {
        return Err(Error::invalid_state(format!("the capture's last step is {count} nodes, not the one node of a kernel launch")));
    }
    // SAFETY: the driver returned an array of `count` (1) nodes, valid until the next call on the
    // stream; copied out at once.
    Ok(unsafe { *dependencies } as usize)
}

impl Graph {
    /// Gives kernel node `node` (from `last_captured_node` during this graph's capture) new
    /// arguments, grid, block and dynamic shared memory for the replays queued from now on.
    ///
    /// Only `shape`'s grid, block and shared memory apply: the node keeps the launch attributes it
    /// was captured with.
    ///
    /// # Safety
    /// `node` is a kernel node of this graph's template; `function` is the kernel it launches, in
    /// this graph's context; `params` points to `arg_count` readable pointers, each to an argument
    /// of the size the kernel expects (checked in Java where known). The driver copies the values.
    pub unsafe fn set_kernel_node(
        &self,
        handle: &Handle,
        node: usize,
        function: CUfunction,
        shape: &LaunchShape,
        params: *mut *mut c_void,
        arg_count: usize,
    ) -> Result<()> {
        if arg_count > MAX_KERNEL_ARGS {
            return Err(Error::invalid_argument(format!("{arg_count} kernel arguments given; at most {MAX_KERNEL_ARGS} are supported")));
        }
        self.check_context(handle)?;
        let _scope = handle.activate()?;
        let values = CUDA_KERNEL_NODE_PARAMS_v2 {
            func: function,
            gridDimX: shape.grid[0],
            gridDimY: shape.grid[1],
            gridDimZ: shape.grid[2],
            blockDimX: shape.block[0],
            blockDimY: shape.block[1],
            blockDimZ: shape.block[2],
            sharedMemBytes: shape.shared_bytes,
            // No arguments: a null array, so the driver never reads the caller's (unused) entries.
            kernelParams: if arg_count == 0 { std::ptr::null_mut() } else { params },
            extra: std::ptr::null_mut(),
            // Ignored with `func` set (cuda.h): the function already names kernel and context.
            kern: std::ptr::null_mut(),
            ctx: std::ptr::null_mut(),
        };
        let ctx = self.context();
        // SAFETY: an executable graph of the active context, a node of its template (the caller's
        // contract), and parameters the driver reads during the call only.
        ctx.noted(unsafe { ctx.driver().cuGraphExecKernelNodeSetParams(self.exec(), node as CUgraphNode, &values) })
    }
}
