//! `CUgraphNodeParams` for a conditional node (CUDA 12.3+ `CU_GRAPH_NODE_TYPE_CONDITIONAL`, IF and
//! WHILE), as `cuGraphAddNode` reads and writes it.
//!
//! Written by hand: cudarc has these types only with its cuda-12030 feature, and this crate builds
//! against the 12.0 bindings. The constants equal CUDA 12.4's cuda.h (`CUgraphNodeType`,
//! `CUgraphConditionalNodeType`, `CU_GRAPH_COND_ASSIGN_DEFAULT`); the layout is that ABI's
//! `CUgraphNodeParams`: `type`, three reserved ints, a union of 29 long longs whose conditional
//! member is `CUDA_CONDITIONAL_NODE_PARAMS`, one reserved long long (256 bytes).

use cudarc::driver::sys::{CUcontext, CUgraph};
use std::ffi::c_uint;

/// `CU_GRAPH_NODE_TYPE_CONDITIONAL`.
const NODE_TYPE_CONDITIONAL: c_uint = 13;
/// `CU_GRAPH_COND_ASSIGN_DEFAULT`: every launch of the graph starts the condition at its default value.
pub const COND_ASSIGN_DEFAULT: c_uint = 1;

/// `CUgraphConditionalNodeType`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum ConditionalKind {
    /// `CU_GRAPH_COND_TYPE_IF`: the body runs once if the condition is non-zero when the node runs.
    If = 0,
    /// `CU_GRAPH_COND_TYPE_WHILE`: the body runs while the condition is non-zero, checked when the
    /// node runs and after each run of the body.
    While = 1,
}

/// `CUDA_CONDITIONAL_NODE_PARAMS`.
#[repr(C)]
#[derive(Clone, Copy)]
struct ConditionalParams {
    handle: u64,
    kind: c_uint,
    /// Bodies: 1 for IF and WHILE.
    size: c_uint,
    /// Set by the driver: its array of the node's `size` body graphs, which the node owns.
    bodies: *mut CUgraph,
    ctx: CUcontext,
}

/// `CUgraphNodeParams` with its conditional member.
#[repr(C)]
pub struct ConditionalNodeParams {
    node_type: c_uint,
    reserved0: [i32; 3],
    conditional: ConditionalParams,
    /// The rest of the 29 long longs of the union.
    rest: [i64; 25],
    reserved2: i64,
}

const _: () = assert!(std::mem::size_of::<ConditionalNodeParams>() == 256);

impl ConditionalNodeParams {
    /// A conditional node of `kind` on condition `handle` (from `cuGraphConditionalHandleCreate`) in `ctx`.
    pub fn new(handle: u64, kind: ConditionalKind, ctx: CUcontext) -> ConditionalNodeParams {
        ConditionalNodeParams {
            node_type: NODE_TYPE_CONDITIONAL,
            reserved0: [0; 3],
            conditional: ConditionalParams { handle, kind: kind as c_uint, size: 1, bodies: std::ptr::null_mut(), ctx },
            rest: [0; 25],
            reserved2: 0,
        }
    }

    /// The node's body graph, once `cuGraphAddNode` has filled in the parameters; null before.
    pub fn body(&self) -> CUgraph {
        if self.conditional.bodies.is_null() {
            return std::ptr::null_mut();
        }
        // SAFETY: `cuGraphAddNode` set `bodies` to the driver's array of `size` (1) graphs, which
        // lives as long as the node.
        unsafe { *self.conditional.bodies }
    }
}
