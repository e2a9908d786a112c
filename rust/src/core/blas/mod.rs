//! BLAS level 1 on the built-in kernels (`kernels/blas1.cu`), with reference-BLAS semantics for
//! `n <= 0` and for increments, and argument checks that name what is wrong.
//!
//! Increments: reference BLAS visits element i of a vector with increment `inc` at
//! `(inc >= 0) ? i*inc : (n-1-i)*(-inc)` from the lowest-address element; the kernels do the same.
//! A read-only vector may have increment 0 (every element is the first); a written one may not
//! (parallel writes to one element would race), except in the single-vector ops (scal, nrm2, asum,
//! iamax), which do nothing (or return 0) for `incx <= 0`, 0 included, as the Fortran 77 reference
//! BLAS routines do (the Fortran 90 nrm2 of LAPACK 3.9.1 and later walks a negative increment
//! backwards instead).

mod functions;
mod handle_state;
pub mod host_result;
mod op;

pub use op::{Op, Precision};

use crate::core::driver::{self, launch_config::LaunchShape};
use crate::core::error::{Error, Result};
use crate::core::handle::Handle;
use crate::core::kernels::abi;
use crate::core::memory::device::DeviceMemory;
use crate::core::streams::StreamUse;
use cudarc::driver::sys::CUdeviceptr;
use handle_state::{HandleState, RESULT_SLOT};
use host_result::ResultKind;
use std::ffi::c_void;

/// A vector argument: device memory, the byte range of it the caller may use (a slice), and an
/// increment in elements.
#[derive(Clone, Copy)]
pub struct Vector<'a> {
    pub memory: &'a DeviceMemory,
    pub offset: usize,
    pub len: usize,
    pub inc: i64,
}

/// Makes what BLAS calls on `handle` use now (the built-in library, the kernels' functions in the
/// handle's context and the reduction workspace), with the context active: a graph capture must
/// not record, or trip over, a library load or the workspace's allocation and zeroing.
pub fn prepare_for_capture(handle: &Handle) -> Result<()> {
    let state = HandleState::of(handle)?;
    drop(state.workspace(handle)?);
    Ok(())
}

/// Elements a vector of `n` elements with increment `inc` spans: 1 + (n-1)*|inc|.
pub fn span(n: i64, inc: i64) -> Option<u64> {
    (n as u64 - 1).checked_mul(inc.unsigned_abs())?.checked_add(1)
}

/// Checks that `v` holds `n` elements with its increment and returns the lowest address.
fn address(v: &Vector, n: i64, p: Precision, name: &str, handle: &Handle) -> Result<CUdeviceptr> {
    if v.memory.context().id() != handle.context().id() {
        return Err(Error::invalid_argument(format!(
            "{name} belongs to context id {} but the handle is bound to context id {}",
            v.memory.context().id(),
            handle.context().id()
        )));
    }
    check_aligned(v.memory, v.offset, p.bytes(), name)?;
    let elements = span(n, v.inc).ok_or_else(|| Error::invalid_argument(format!("n={n} with inc{name}={} overflows", v.inc)))?;
    let bytes = elements.checked_mul(p.bytes() as u64).and_then(|b| usize::try_from(b).ok());
    let available = v.len.min(v.memory.bytes().saturating_sub(v.offset));
    match bytes {
        Some(b) if b <= available => v.memory.check_range(v.offset, b),
        _ => Err(Error::invalid_argument(format!(
            "{name} is too short: n={n} with inc{name}={} needs {elements} elements ({} bytes each), but the buffer holds {} from its start",
            v.inc,
            p.bytes(),
            available / p.bytes()
        ))),
    }
}

/// A misaligned operand would fault on the device: a sticky error that ends CUDA for the whole
/// process. The absolute address is what the kernel sees, so it is what is checked: a wrapped raw
/// pointer may be misaligned even at offset 0.
fn check_aligned(memory: &DeviceMemory, offset: usize, alignment: usize, name: &str) -> Result<()> {
    let address = memory.address().wrapping_add(offset as u64);
    if !address.is_multiple_of(alignment as u64) {
        return Err(Error::invalid_argument(format!(
            "{name} starts at device address {address:#x} (byte {offset} of its buffer), which is not a multiple of its {alignment}-byte elements; expected an aligned address"
        )));
    }
    Ok(())
}

fn nonzero_write_inc(inc: i64, name: &str) -> Result<()> {
    if inc == 0 {
        return Err(Error::invalid_argument(format!(
            "inc{name} is 0, but {name} is written: every element would be written at once; expected a non-zero increment"
        )));
    }
    Ok(())
}

fn grid(handle: &Handle, n: i64, p: Precision, op: Op) -> u32 {
    grid_for(handle.device().multiprocessors.max(1) as u64, n, p, op)
}

/// The formula of kernels/blas1_abi.h for a device of `sms` multiprocessors: enough blocks to
/// cover n, capped at what is resident at once (each kernel's register bound guarantees these
/// blocks per SM on every architecture).
fn grid_for(sms: u64, n: i64, p: Precision, op: Op) -> u32 {
    let (per_thread, cap) = if op.is_reduction() {
        (p.reduce_elements_per_thread(), (sms * abi::CUH_REDUCE_BLOCKS_PER_SM as u64).min(abi::CUH_MAX_REDUCE_BLOCKS as u64))
    } else {
        let blocks_per_sm = if op == Op::Copy { abi::CUH_COPY_BLOCKS_PER_SM } else { abi::CUH_ELEMENTWISE_BLOCKS_PER_SM };
        (abi::CUH_ELEMENTWISE_ELEMENTS_PER_THREAD, sms * blocks_per_sm as u64)
    };
    (n as u64).div_ceil((abi::CUH_BLOCK_THREADS * per_thread) as u64).clamp(1, cap) as u32
}

/// Launches a BLAS kernel on `on` (the handle's queue), after noting that stream's use of each
/// operand's memory (rule L3); the context must be active.
fn launch(
    handle: &Handle,
    op: Op,
    p: Precision,
    n: i64,
    params: &mut [*mut c_void],
    on: &StreamUse,
    operands: &[Option<&DeviceMemory>],
) -> Result<()> {
    let f = HandleState::of(handle)?.functions().get(op, p);
    for memory in operands.iter().flatten() {
        memory.before_use(on)?;
    }
    let stream = on.raw();
    let g = grid(handle, n, p, op);
    let ctx = handle.context();
    // On compute capability 9.0+ every BLAS kernel waits (griddepcontrol.wait) before touching
    // memory, so it may be a dependent launch (see LaunchShape::dependent).
    let shape =
        LaunchShape { dependent: handle.device().compute_capability.0 >= 9, ..LaunchShape::linear(g, abi::CUH_BLOCK_THREADS as u32) };
    // SAFETY: `f` is the kernel's function in the current context and `stream` the handle's
    // stream; `params` holds one pointer per kernel parameter, each to a local of the parameter's
    // exact type (see callers); the dependent shape's condition holds as said above.
    ctx.noted(unsafe { driver::launch::queue(ctx.driver(), f, &shape, stream, params.as_mut_ptr()) })
}

/// A scalar in the kernel's precision, kept in 8 bytes so one pointer serves both.
fn scalar(p: Precision, value: f64) -> [u8; 8] {
    let mut bytes = [0u8; 8];
    match p {
        Precision::F32 => bytes[..4].copy_from_slice(&(value as f32).to_ne_bytes()),
        Precision::F64 => bytes.copy_from_slice(&value.to_ne_bytes()),
    }
    bytes
}

macro_rules! p {
    ($x:expr) => {
        (&mut $x) as *mut _ as *mut c_void
    };
}

/// x = alpha * x
pub fn scal(handle: &Handle, p: Precision, n: i64, alpha: f64, x: Vector) -> Result<()> {
    if n <= 0 || x.inc <= 0 {
        return handle.context().validate(); // nothing to do, but a dead context still fails (H8)
    }
    let _scope = handle.activate()?;
    let (mut xp, mut n_, mut a, mut ix) = (address(&x, n, p, "x", handle)?, n, scalar(p, alpha), x.inc);
    launch(handle, Op::Scal, p, n, &mut [p!(n_), p!(a), p!(xp), p!(ix)], &*handle.queue()?, &[Some(x.memory)])
}

/// y = alpha * x + y
pub fn axpy(handle: &Handle, p: Precision, n: i64, alpha: f64, x: Vector, y: Vector) -> Result<()> {
    if n <= 0 {
        return handle.context().validate();
    }
    nonzero_write_inc(y.inc, "y")?;
    let (mut xp, mut yp) = (address(&x, n, p, "x", handle)?, address(&y, n, p, "y", handle)?);
    if alpha == 0.0 {
        return handle.context().validate(); // reference BLAS returns before touching y
    }
    let _scope = handle.activate()?;
    let (mut n_, mut a, mut ix, mut iy) = (n, scalar(p, alpha), x.inc, y.inc);
    launch(
        handle,
        Op::Axpy,
        p,
        n,
        &mut [p!(n_), p!(a), p!(xp), p!(ix), p!(yp), p!(iy)],
        &*handle.queue()?,
        &[Some(x.memory), Some(y.memory)],
    )
}

/// y = x (copy) or x <-> y (swap)
pub fn copy_or_swap(handle: &Handle, p: Precision, swap: bool, n: i64, x: Vector, y: Vector) -> Result<()> {
    if n <= 0 {
        return handle.context().validate();
    }
    nonzero_write_inc(y.inc, "y")?;
    if swap {
        nonzero_write_inc(x.inc, "x")?;
    }
    let (mut xp, mut yp) = (address(&x, n, p, "x", handle)?, address(&y, n, p, "y", handle)?);
    let _scope = handle.activate()?;
    let (mut n_, mut ix, mut iy) = (n, x.inc, y.inc);
    let op = if swap { Op::Swap } else { Op::Copy };
    launch(handle, op, p, n, &mut [p!(n_), p!(xp), p!(ix), p!(yp), p!(iy)], &*handle.queue()?, &[Some(x.memory), Some(y.memory)])
}

/// Where a reduction's result goes.
pub enum ResultTarget<'a> {
    /// Read back to the host (waits).
    Host,
    /// Written to device memory at a byte offset (of a slice of this many bytes), in stream
    /// order (no wait).
    Device(&'a DeviceMemory, usize, usize),
}

/// dot, nrm2, asum or iamax. Returns the value for `ResultTarget::Host` (iamax as a 1-based
/// index in an f64), 0 for `Device`.
pub fn reduce(handle: &Handle, p: Precision, op: Op, n: i64, x: Vector, y: Option<Vector>, target: ResultTarget) -> Result<f64> {
    debug_assert!(op.is_reduction());
    let result_bytes = if op == Op::Iamax { 8 } else { p.bytes() };
    let device_target = match &target {
        ResultTarget::Device(memory, offset, len) => {
            if memory.context().id() != handle.context().id() {
                return Err(Error::invalid_argument("the result buffer belongs to another context than the handle"));
            }
            check_aligned(memory, *offset, result_bytes, "the result")?;
            if *len < result_bytes {
                return Err(Error::invalid_argument(format!("the result buffer holds {len} bytes; the result needs {result_bytes}")));
            }
            Some(memory.check_range(*offset, result_bytes)?)
        }
        ResultTarget::Host => None,
    };
    let empty = n <= 0 || (op != Op::Dot && x.inc <= 0);
    let xp = if empty { 0 } else { address(&x, n, p, "x", handle)? };
    let yp = match (&y, empty) {
        (Some(y), false) => address(y, n, p, "y", handle)?,
        _ => 0,
    };
    let mut scope = Some(handle.activate()?);
    let queue = handle.queue()?;
    let stream = queue.raw();
    if empty {
        // BLAS defines the result as 0; a device target still receives it, in stream order.
        if let (Some(_), ResultTarget::Device(memory, offset, _)) = (device_target, &target) {
            memory.memset(*offset, result_bytes, 0, &queue)?;
        }
        return Ok(0.0);
    }
    let state = HandleState::of(handle)?;
    let mut guard = state.workspace(handle)?;
    let ws = guard.as_mut().ok_or_else(|| Error::invalid_state("reduction workspace missing"))?;
    let mut workspace = ws.device.address();
    let copy_from = workspace + RESULT_SLOT as u64;
    // A host result goes straight into the mapped pinned slot when there is one, and the kernel
    // signals it there (host_result.rs); a device result needs no signal.
    let (mut result, mut sequence) = match device_target {
        Some(target) => (target, 0u64),
        None => (ws.host.target(copy_from), ws.host.next_sequence()),
    };
    let (mut n_, mut xp, mut ix) = (n, xp, x.inc);
    let target_memory = match &target {
        ResultTarget::Device(memory, _, _) => Some(*memory),
        ResultTarget::Host => None,
    };
    // No allocation: a reduction's host result is a headline figure.
    let operands = [Some(x.memory), Some(&ws.device), target_memory, y.as_ref().map(|y| y.memory)];
    match (op, y) {
        (Op::Dot, Some(y)) => {
            let (mut yp, mut iy) = (yp, y.inc);
            launch(
                handle,
                op,
                p,
                n,
                &mut [p!(n_), p!(xp), p!(ix), p!(yp), p!(iy), p!(workspace), p!(result), p!(sequence)],
                &queue,
                &operands,
            )?;
        }
        (Op::Dot, None) => return Err(Error::invalid_argument("dot needs a y vector")),
        _ => launch(handle, op, p, n, &mut [p!(n_), p!(xp), p!(ix), p!(workspace), p!(result), p!(sequence)], &queue, &operands)?,
    }
    if device_target.is_some() {
        return Ok(0.0);
    }
    if handle.context().is_partition() && handle.unactivated_own_stream()?.is_some() {
        // The wait needs no current context (the driver takes the own stream's): an SM partition's
        // context is not held across it, so the partition's other threads keep taking turns.
        drop(scope.take());
    }
    ws.host.receive(handle.context(), stream, sequence, copy_from, result_bytes)?;
    let kind = match (op, p) {
        (Op::Iamax, _) => ResultKind::Index,
        (_, Precision::F32) => ResultKind::F32,
        (_, Precision::F64) => ResultKind::F64,
    };
    // SAFETY: `receive` returned Ok for this reduction, and the workspace lock is still held.
    let value = unsafe { ws.host.read(kind) };
    drop(guard);
    drop(scope);
    Ok(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn span_follows_reference_blas() {
        assert_eq!(span(1, 5), Some(1));
        assert_eq!(span(4, 1), Some(4));
        assert_eq!(span(4, -3), Some(10));
        assert_eq!(span(4, 0), Some(1));
        assert_eq!(span(i64::MAX, i64::MAX), None);
    }

    #[test]
    fn grids_cover_n_up_to_what_is_resident() {
        let h200 = 132;
        // One block for tiny n: a host-result reduction is then a single block, no second wave.
        assert_eq!(grid_for(h200, 1, Precision::F32, Op::Dot), 1);
        assert_eq!(grid_for(h200, 1000, Precision::F32, Op::Dot), 1);
        assert_eq!(grid_for(h200, 1000, Precision::F64, Op::Nrm2), 1);
        assert_eq!(grid_for(h200, 1000, Precision::F32, Op::Scal), 4);
        assert_eq!(grid_for(h200, 1000, Precision::F32, Op::Copy), 4);
        // Grows with n ...
        assert_eq!(grid_for(h200, 1 << 16, Precision::F32, Op::Asum), 16);
        assert_eq!(grid_for(h200, 1 << 16, Precision::F64, Op::Iamax), 32);
        assert_eq!(grid_for(h200, 1 << 16, Precision::F32, Op::Axpy), 256);
        // ... up to the resident blocks, never past the reductions' combine limit; copy keeps
        // twice the blocks of the other element-wise ops resident.
        assert_eq!(grid_for(h200, 1 << 28, Precision::F32, Op::Dot), 132 * abi::CUH_REDUCE_BLOCKS_PER_SM as u32);
        assert_eq!(grid_for(h200, 1 << 28, Precision::F32, Op::Swap), 132 * abi::CUH_ELEMENTWISE_BLOCKS_PER_SM as u32);
        assert_eq!(grid_for(h200, 1 << 28, Precision::F64, Op::Copy), 132 * abi::CUH_COPY_BLOCKS_PER_SM as u32);
        assert_eq!(grid_for(1000, i64::MAX, Precision::F64, Op::Dot), abi::CUH_MAX_REDUCE_BLOCKS as u32);
    }

    #[test]
    fn scalars_keep_their_precision() {
        assert_eq!(&scalar(Precision::F32, 1.5)[..4], &1.5f32.to_ne_bytes());
        assert_eq!(scalar(Precision::F64, 0.1), 0.1f64.to_ne_bytes());
    }
}
