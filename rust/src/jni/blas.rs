//! `dev.cuhandle.NativeApi`: the built-in kernels and BLAS level 1.

use crate::core::blas::{self, Op, Precision, ResultTarget, Vector};
use crate::core::error::Error;
use crate::core::kernels;
use crate::jni::buffer::size;
use crate::jni::entry::entry;
use crate::jni::java_arrays;
use crate::jni::native_entry::native;
use crate::jni::native_ptr::{BufferPtr, HandlePtr};
use crate::jni::throw::JniResult;
use jni::objects::{JByteArray, JClass};
use jni::sys::{jdouble, jint, jlong};
use jni::{EnvUnowned, NativeMethod};

pub const METHODS: &[NativeMethod<'static>] = &[
    native!(static raw fn builtin_fatbin() -> jbyte[]),
    native!(
        static raw fn blas_update(
            h: HandlePtr, element_bytes: jint, op: jint, n: jlong, alpha: jdouble,
            x: BufferPtr, x_offset: jlong, x_length: jlong, incx: jlong, y: BufferPtr, y_offset: jlong, y_length: jlong, incy: jlong
        )
    ),
    native!(
        static raw fn blas_reduce(
            h: HandlePtr, element_bytes: jint, op: jint, n: jlong, x: BufferPtr, x_offset: jlong, x_length: jlong, incx: jlong,
            y: BufferPtr, y_offset: jlong, y_length: jlong, incy: jlong, result: BufferPtr, result_offset: jlong, result_length: jlong
        ) -> jdouble
    ),
];

/// The embedded fatbin, for the self-test and for users who launch the built-in kernels directly.
fn builtin_fatbin<'l>(env: EnvUnowned<'l>, _: JClass<'l>) -> JByteArray<'l> {
    entry!(env, |e| java_arrays::new_bytes(e, kernels::FATBIN))
}

/// A vector argument: a buffer the Java caller holds open, the slice of it the vector may use
/// (offset and length in bytes) and its increment.
fn vector<'a>(b: &'a BufferPtr, (offset, len): (jlong, jlong), inc: jlong, name: &str) -> JniResult<Vector<'a>> {
    let offset = usize::try_from(offset).map_err(|_| Error::invalid_argument(format!("{name} offset {offset} is negative")))?;
    let len = usize::try_from(len).map_err(|_| Error::invalid_argument(format!("{name} length {len} is negative")))?;
    Ok(Vector { memory: b.get()?, offset, len, inc })
}

/// scal (x only), axpy, copy, swap. `op`: 0 scal, 1 axpy, 2 copy, 3 swap.
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn blas_update(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    element_bytes: jint,
    op: jint,
    n: jlong,
    alpha: jdouble,
    x: BufferPtr,
    x_offset: jlong,
    x_length: jlong,
    incx: jlong,
    y: BufferPtr,
    y_offset: jlong,
    y_length: jlong,
    incy: jlong,
) {
    entry!(env, |_e| {
        let (p, h, xv) = (Precision::from_code(element_bytes)?, h.get()?, vector(&x, (x_offset, x_length), incx, "x")?);
        match op {
            0 => blas::scal(h, p, n, alpha, xv)?,
            1 => blas::axpy(h, p, n, alpha, xv, vector(&y, (y_offset, y_length), incy, "y")?)?,
            2 | 3 => blas::copy_or_swap(h, p, op == 3, n, xv, vector(&y, (y_offset, y_length), incy, "y")?)?,
            other => return Err(Error::invalid_argument(format!("unknown BLAS update {other}")).into()),
        }
        Ok(())
    })
}

/// dot (needs y), nrm2, asum, iamax. `op`: 0 dot, 1 nrm2, 2 asum, 3 iamax. With `result` != 0
/// the value goes to that device buffer at `result_offset` without waiting, and 0 is returned.
#[expect(clippy::too_many_arguments, reason = "the Java method's parameters, one by one: JNI passes no records")]
fn blas_reduce(
    env: EnvUnowned<'_>,
    _: JClass<'_>,
    h: HandlePtr,
    element_bytes: jint,
    op: jint,
    n: jlong,
    x: BufferPtr,
    x_offset: jlong,
    x_length: jlong,
    incx: jlong,
    y: BufferPtr,
    y_offset: jlong,
    y_length: jlong,
    incy: jlong,
    result: BufferPtr,
    result_offset: jlong,
    result_length: jlong,
) -> jdouble {
    entry!(env, |_e| {
        let p = Precision::from_code(element_bytes)?;
        let op = match op {
            0 => Op::Dot,
            1 => Op::Nrm2,
            2 => Op::Asum,
            3 => Op::Iamax,
            other => return Err(Error::invalid_argument(format!("unknown BLAS reduction {other}")).into()),
        };
        let (h, xv) = (h.get()?, vector(&x, (x_offset, x_length), incx, "x")?);
        let yv = if op == Op::Dot { Some(vector(&y, (y_offset, y_length), incy, "y")?) } else { None };
        let target = match result.optional() {
            None => ResultTarget::Host,
            Some(memory) => {
                ResultTarget::Device(memory, size(result_offset, "the result offset")?, usize::try_from(result_length).unwrap_or(0))
            }
        };
        Ok(blas::reduce(h, p, op, n, xv, yv, target)?)
    })
}
