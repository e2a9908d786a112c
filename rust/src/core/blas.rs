//! BLAS level 1 on the built-in kernels (`kernels/blas1.cu`), with reference-BLAS semantics for
//! `n <= 0` and for increments, and argument checks that name what is wrong.
//!
//! Increments: reference BLAS visits element i of a vector with increment `inc` at
//! `(inc >= 0) ? i*inc : (n-1-i)*(-inc)` from the lowest-address element; the kernels do the same.
//! A read-only vector may have increment 0 (every element is the first); a written one may not
//! (parallel writes to one element would race). Single-vector ops (scal, nrm2, asum, iamax) do
//! nothing (or return 0) for `incx <= 0`, as reference BLAS does.

use crate::core::error::{Error, Result};
use crate::core::handle::Handle;
use crate::core::kernels::{self, abi};
use crate::core::memory::DeviceMemory;
use cudarc::driver::sys::{CUdeviceptr, CUfunction, CUkernel, CUstream};
use std::ffi::c_void;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    F32,
    F64,
}

impl Precision {
    pub fn from_code(code: i32) -> Result<Precision> {
        match code {
            4 => Ok(Precision::F32),
            8 => Ok(Precision::F64),
            other => Err(Error::invalid_argument(format!("element size {other}; expected 4 (float) or 8 (double)"))),
        }
    }
    pub fn bytes(self) -> usize {
        match self {
            Precision::F32 => 4,
            Precision::F64 => 8,
        }
    }
    fn prefix(self) -> char {
        match self {
            Precision::F32 => 's',
            Precision::F64 => 'd',
        }
    }
    fn reduce_elements_per_thread(self) -> usize {
        match self {
            Precision::F32 => abi::CUH_REDUCE_ELEMENTS_PER_THREAD_F32,
            Precision::F64 => abi::CUH_REDUCE_ELEMENTS_PER_THREAD_F64,
        }
    }
}

/// A vector argument: device memory, the byte range of it the caller may use (a slice), and an
/// increment in elements.
#[derive(Clone, Copy)]
pub struct Vector<'a> {
    pub memory: &'a DeviceMemory,
    pub offset: usize,
    pub len: usize,
    pub inc: i64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Scal,
    Axpy,
    Copy,
    Swap,
    Dot,
    Nrm2,
    Asum,
    Iamax,
}

impl Op {
    const ALL: [Op; 8] = [Op::Scal, Op::Axpy, Op::Copy, Op::Swap, Op::Dot, Op::Nrm2, Op::Asum, Op::Iamax];
    fn name(self) -> &'static str {
        match self {
            Op::Scal => "scal",
            Op::Axpy => "axpy",
            Op::Copy => "copy",
            Op::Swap => "swap",
            Op::Dot => "dot",
            Op::Nrm2 => "nrm2",
            Op::Asum => "asum",
            Op::Iamax => "amax",
        }
    }
    fn is_reduction(self) -> bool {
        matches!(self, Op::Dot | Op::Nrm2 | Op::Asum | Op::Iamax)
    }
    /// The kernel's C name, e.g. cuh_saxpy, cuh_idamax.
    fn kernel_name(self, p: Precision) -> String {
        match self {
            Op::Iamax => format!("cuh_i{}amax", p.prefix()),
            _ => format!("cuh_{}{}", p.prefix(), self.name()),
        }
    }
}

/// The 16 kernels, looked up once per process from the built-in library.
struct Kernels([CUkernel; 16]);
// SAFETY: CUkernel handles are process-wide and context-independent.
unsafe impl Send for Kernels {}
// SAFETY: as above; the array is immutable after initialisation.
unsafe impl Sync for Kernels {}

static KERNELS: OnceLock<Kernels> = OnceLock::new();

fn kernel(op: Op, p: Precision) -> Result<CUkernel> {
    let index = Op::ALL.iter().position(|&o| o == op).unwrap_or(0) * 2 + (p == Precision::F64) as usize;
    if let Some(k) = KERNELS.get() {
        return Ok(k.0[index]);
    }
    let library = kernels::builtin()?;
    let mut all = [std::ptr::null_mut(); 16];
    for (i, op) in Op::ALL.iter().enumerate() {
        for (j, p) in [Precision::F32, Precision::F64].iter().enumerate() {
            all[i * 2 + j] = library.kernel(&op.kernel_name(*p))?.raw;
        }
    }
    Ok(KERNELS.get_or_init(|| Kernels(all)).0[index])
}

/// Loads the built-in library and looks up its kernels now (graph capture must not record or
/// trip over a library load).
pub fn load_kernels() -> Result<()> {
    kernel(Op::Scal, Precision::F32).map(|_| ())
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
    if address % alignment as u64 != 0 {
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

fn grid(handle: &Handle, n: i64, p: Precision, reduction: bool) -> u32 {
    // The formula of kernels/blas1_abi.h: enough blocks to cover n, capped at what is resident at
    // once (each kernel's register bound guarantees these blocks per SM on every architecture).
    let sms = handle.device().multiprocessors.max(1) as u64;
    let (per_thread, cap) = if reduction {
        (p.reduce_elements_per_thread(), (sms * abi::CUH_REDUCE_BLOCKS_PER_SM as u64).min(abi::CUH_MAX_REDUCE_BLOCKS as u64))
    } else {
        (abi::CUH_ELEMENTWISE_ELEMENTS_PER_THREAD, sms * abi::CUH_ELEMENTWISE_BLOCKS_PER_SM as u64)
    };
    (n as u64).div_ceil((abi::CUH_BLOCK_THREADS * per_thread) as u64).clamp(1, cap) as u32
}

/// Launches a BLAS kernel on the handle's stream; the context must be active.
fn launch(handle: &Handle, op: Op, p: Precision, n: i64, params: &mut [*mut c_void], stream: CUstream) -> Result<()> {
    let k = kernel(op, p)?;
    let g = grid(handle, n, p, op.is_reduction());
    let ctx = handle.context();
    // SAFETY: a CUkernel launches as a CUfunction in the current context; `params` holds one
    // pointer per kernel parameter, each to a local of the parameter's exact type (see callers).
    let rc = unsafe {
        (ctx.driver().api.cuLaunchKernel)(k as CUfunction, g, 1, 1, abi::CUH_BLOCK_THREADS as u32, 1, 1, 0, stream, params.as_mut_ptr(), std::ptr::null_mut())
    };
    ctx.check(rc, "cuLaunchKernel (BLAS)")
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
    launch(handle, Op::Scal, p, n, &mut [p!(n_), p!(a), p!(xp), p!(ix)], handle.stream()?)
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
    launch(handle, Op::Axpy, p, n, &mut [p!(n_), p!(a), p!(xp), p!(ix), p!(yp), p!(iy)], handle.stream()?)
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
    launch(handle, op, p, n, &mut [p!(n_), p!(xp), p!(ix), p!(yp), p!(iy)], handle.stream()?)
}

/// Where a reduction's result goes.
pub enum ResultTarget<'a> {
    /// Read back to the host (waits).
    Host,
    /// Written to device memory at a byte offset (of a slice of this many bytes), in stream
    /// order (no wait).
    Device(&'a DeviceMemory, usize, usize),
}

/// Bytes of a handle's reduction workspace: the partials and counter, then a 16-byte aligned
/// result slot for host reads.
pub fn workspace_bytes() -> usize {
    abi::CUH_WORKSPACE_BYTES.next_multiple_of(16) + 16
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
    let _scope = handle.activate()?;
    let stream = handle.stream()?;
    if empty {
        // BLAS defines the result as 0; a device target still receives it, in stream order.
        if let (Some(_), ResultTarget::Device(memory, offset, _)) = (device_target, &target) {
            memory.memset(*offset, result_bytes, 0, stream)?;
        }
        return Ok(0.0);
    }
    // Room for the workspace plus a 16-byte aligned result slot for host reads.
    let result_slot = abi::CUH_WORKSPACE_BYTES.next_multiple_of(16);
    let guard = handle.workspace(workspace_bytes())?;
    let ws = guard.as_ref().ok_or_else(|| Error::invalid_state("reduction workspace missing"))?;
    let mut workspace = ws.device.address();
    let mut result = device_target.unwrap_or(workspace + result_slot as u64);
    let (mut n_, mut xp, mut ix) = (n, xp, x.inc);
    match (op, y) {
        (Op::Dot, Some(y)) => {
            let (mut yp, mut iy) = (yp, y.inc);
            launch(handle, op, p, n, &mut [p!(n_), p!(xp), p!(ix), p!(yp), p!(iy), p!(workspace), p!(result)], stream)?;
        }
        (Op::Dot, None) => return Err(Error::invalid_argument("dot needs a y vector")),
        _ => launch(handle, op, p, n, &mut [p!(n_), p!(xp), p!(ix), p!(workspace), p!(result)], stream)?,
    }
    if device_target.is_some() {
        return Ok(0.0);
    }
    let api = &handle.context().driver().api;
    // SAFETY: the pinned slot holds HOST_RESULT_BYTES >= 8 bytes and is ours while the workspace
    // lock is held; the device slot lies inside the workspace allocation.
    handle.context().check(unsafe { (api.cuMemcpyDtoHAsync)(ws.host_result.cast(), result, result_bytes, stream) }, "cuMemcpyDtoHAsync")?;
    // SAFETY: the stream belongs to the active context.
    handle.context().check(unsafe { (api.cuStreamSynchronize)(stream) }, "cuStreamSynchronize")?;
    // SAFETY: the copy into the pinned slot completed (synchronised above); unaligned reads are
    // used because the slot is only byte-typed.
    let value = unsafe {
        match (op, p) {
            (Op::Iamax, _) => std::ptr::read_unaligned(ws.host_result as *const i64) as f64,
            (_, Precision::F32) => std::ptr::read_unaligned(ws.host_result as *const f32) as f64,
            (_, Precision::F64) => std::ptr::read_unaligned(ws.host_result as *const f64),
        }
    };
    drop(guard);
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
    fn kernel_names_match_blas1_cu() {
        assert_eq!(Op::Axpy.kernel_name(Precision::F32), "cuh_saxpy");
        assert_eq!(Op::Iamax.kernel_name(Precision::F64), "cuh_idamax");
        assert_eq!(Op::Nrm2.kernel_name(Precision::F64), "cuh_dnrm2");
        let source = include_str!("../../../kernels/blas1.cu");
        for op in Op::ALL {
            for p in [Precision::F32, Precision::F64] {
                let name = op.kernel_name(p);
                assert!(source.contains(&format!(" {name}(")), "blas1.cu defines {name}");
            }
        }
    }

    #[test]
    fn scalars_keep_their_precision() {
        assert_eq!(&scalar(Precision::F32, 1.5)[..4], &1.5f32.to_ne_bytes());
        assert_eq!(scalar(Precision::F64, 0.1), 0.1f64.to_ne_bytes());
    }
}
