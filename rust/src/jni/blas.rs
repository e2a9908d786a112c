//! `dev.cuhandle.NativeApi`: the built-in kernels and BLAS level 1.

use crate::core::kernels;
use crate::jni::throw::entry;
use jni::sys::{jbyteArray, jclass};
use jni::EnvUnowned;

/// The embedded fatbin, for the self-test and for users who launch the built-in kernels directly.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_builtinFatbin<'l>(mut env: EnvUnowned<'l>, _c: jclass) -> jbyteArray {
    entry!(env, |e| crate::jni::java_arrays::new_bytes(e.get_raw(), kernels::FATBIN))
}

use crate::core::blas::{self, Op, Precision, ResultTarget, Vector};
use crate::core::handle::Handle;
use crate::core::memory::DeviceMemory;
use crate::jni::raw;
use crate::jni::throw::JniResult;
use jni::sys::{jdouble, jint, jlong};

/// # Safety
/// `b` is a live buffer pointer held by a Java DeviceBuffer that entered its call.
unsafe fn vector<'a>(b: jlong, offset: jlong, len: jlong, inc: jlong, name: &str) -> JniResult<Vector<'a>> {
    // SAFETY: caller's contract.
    let memory = unsafe { raw::borrow::<DeviceMemory>(b, name)? };
    let offset = usize::try_from(offset).map_err(|_| crate::core::error::Error::invalid_argument(format!("{name} offset {offset} is negative")))?;
    let len = usize::try_from(len).map_err(|_| crate::core::error::Error::invalid_argument(format!("{name} length {len} is negative")))?;
    Ok(Vector { memory, offset, len, inc })
}

/// # Safety
/// `h` is a live handle pointer held by a Java Handle that entered its call.
unsafe fn handle<'a>(h: jlong) -> JniResult<&'a Handle> {
    // SAFETY: caller's contract.
    unsafe { raw::borrow::<Handle>(h, "handle") }
}

/// scal (x only), axpy, copy, swap. `op`: 0 scal, 1 axpy, 2 copy, 3 swap.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_blasUpdate<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, h: jlong, element_bytes: jint, op: jint, n: jlong, alpha: jdouble,
    x: jlong, x_offset: jlong, x_len: jlong, incx: jlong, y: jlong, y_offset: jlong, y_len: jlong, incy: jlong,
) {
    entry!(env, |_e| {
        let p = Precision::from_code(element_bytes)?;
        // SAFETY: pointers held by Java objects inside their calls (Blas.java).
        let (h, xv) = unsafe { (handle(h)?, vector(x, x_offset, x_len, incx, "x")?) };
        match op {
            0 => blas::scal(h, p, n, alpha, xv)?,
            // SAFETY: as above.
            1 => blas::axpy(h, p, n, alpha, xv, unsafe { vector(y, y_offset, y_len, incy, "y")? })?,
            // SAFETY: as above.
            2 | 3 => blas::copy_or_swap(h, p, op == 3, n, xv, unsafe { vector(y, y_offset, y_len, incy, "y")? })?,
            other => return Err(crate::core::error::Error::invalid_argument(format!("unknown BLAS update {other}")).into()),
        }
        Ok(())
    })
}

/// dot (needs y), nrm2, asum, iamax. `op`: 0 dot, 1 nrm2, 2 asum, 3 iamax. With `result` != 0
/// the value goes to that device buffer at `result_offset` without waiting, and 0 is returned.
#[unsafe(no_mangle)]
pub extern "system" fn Java_dev_cuhandle_NativeApi_blasReduce<'l>(
    mut env: EnvUnowned<'l>, _c: jclass, h: jlong, element_bytes: jint, op: jint, n: jlong,
    x: jlong, x_offset: jlong, x_len: jlong, incx: jlong, y: jlong, y_offset: jlong, y_len: jlong, incy: jlong,
    result: jlong, result_offset: jlong, result_len: jlong,
) -> jdouble {
    entry!(env, |_e| {
        let p = Precision::from_code(element_bytes)?;
        let op = match op {
            0 => Op::Dot,
            1 => Op::Nrm2,
            2 => Op::Asum,
            3 => Op::Iamax,
            other => return Err(crate::core::error::Error::invalid_argument(format!("unknown BLAS reduction {other}")).into()),
        };
        // SAFETY: pointers held by Java objects inside their calls (Blas.java).
        let (h, xv) = unsafe { (handle(h)?, vector(x, x_offset, x_len, incx, "x")?) };
        // SAFETY: as above.
        let yv = if op == Op::Dot { Some(unsafe { vector(y, y_offset, y_len, incy, "y")? }) } else { None };
        let target = if result == 0 {
            ResultTarget::Host
        } else {
            // SAFETY: as above.
            let memory = unsafe { raw::borrow::<DeviceMemory>(result, "result buffer")? };
            let offset = usize::try_from(result_offset).map_err(|_| crate::core::error::Error::invalid_argument("negative result offset"))?;
            ResultTarget::Device(memory, offset, usize::try_from(result_len).unwrap_or(0))
        };
        Ok(blas::reduce(h, p, op, n, xv, yv, target)?)
    })
}
