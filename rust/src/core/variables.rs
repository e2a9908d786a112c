//! A library's module-scope variables (rule K4): `__device__` and `__constant__` variables exist
//! once per context (`cuLibraryGetGlobal` answers for the current one), `__managed__` variables
//! once per process, at one address that every context, device and the host can use
//! (`cuLibraryGetManaged`).

use crate::core::context::Context;
use crate::core::error::{Error, Result, CUDA_ERROR_NOT_FOUND};
use crate::core::library::Library;
use cudarc::driver::sys::CUdeviceptr;
use std::ffi::CString;

/// Where a variable lives: its device address and size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Variable {
    pub address: CUdeviceptr,
    pub bytes: usize,
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `__device__` or `__constant__`: one copy per context.
    PerContext,
    /// `__managed__`: one copy for the process.
    Managed,
}

/// Looks variable `name` of `library` up in the context `ctx`, which must be active.
pub fn lookup(library: &Library, ctx: &Context, name: &str, kind: Kind) -> Result<Variable> {
    let c_name = CString::new(name).map_err(|_| Error::invalid_argument(format!("variable name {name:?} contains a NUL character")))?;
    let (mut address, mut bytes) = (0, 0usize);
    let driver = ctx.driver();
    // SAFETY: out-pointers are valid locals, the name is NUL-terminated, the library is loaded
    // (the Java Library is entered for the call) and its context is active.
    let (found, what) = unsafe {
        match kind {
            Kind::PerContext => {
                (driver.cuLibraryGetGlobal(&mut address, &mut bytes, library.raw(), c_name.as_ptr()), "__device__ or __constant__")
            }
            Kind::Managed => (driver.cuLibraryGetManaged(&mut address, &mut bytes, library.raw(), c_name.as_ptr()), "__managed__"),
        }
    };
    let found = found.map_err(|e| match e.cuda_code() {
        Some(CUDA_ERROR_NOT_FOUND) => e.reworded(|m| format!("{m}: this library has no {what} variable named '{name}' (names of C++ variables in a namespace are mangled; use extern \"C\" or the mangled name)")),
        _ => e,
    });
    ctx.noted(found)?;
    Ok(Variable { address, bytes })
}

/// Reads `len` (1..=8) bytes at `offset` of a managed variable as the low bytes of a u64.
///
/// # Safety
/// `variable` must be a managed variable of a library that stays loaded for the call, and no
/// kernel may be writing it (the caller synchronised), as CUDA's managed-memory rules require.
pub unsafe fn read_managed(variable: Variable, offset: usize, len: usize) -> Result<u64> {
    let at = managed_range(variable, offset, len)?;
    let mut bytes = [0u8; 8];
    // SAFETY: the range lies inside the variable (checked), whose managed memory the host may
    // read (caller's contract); volatile, because a kernel may have written it since.
    for (i, b) in bytes.iter_mut().take(len).enumerate() {
        *b = unsafe { std::ptr::read_volatile((at + i as u64) as *const u8) };
    }
    Ok(u64::from_ne_bytes(bytes))
}

/// Writes the low `len` (1..=8) bytes of `value` at `offset` of a managed variable.
///
/// # Safety
/// As [`read_managed`], with no kernel reading or writing the variable meanwhile.
pub unsafe fn write_managed(variable: Variable, offset: usize, len: usize, value: u64) -> Result<()> {
    let at = managed_range(variable, offset, len)?;
    let bytes = value.to_ne_bytes();
    for (i, b) in bytes.iter().take(len).enumerate() {
        // SAFETY: as in read_managed.
        unsafe { std::ptr::write_volatile((at + i as u64) as *mut u8, *b) };
    }
    Ok(())
}

fn managed_range(variable: Variable, offset: usize, len: usize) -> Result<u64> {
    if !(1..=8).contains(&len) || offset.checked_add(len).is_none_or(|end| end > variable.bytes) {
        return Err(Error::invalid_argument(format!(
            "bytes [{offset}, {offset}+{len}) are outside the managed variable of {} bytes",
            variable.bytes
        )));
    }
    if variable.address == 0 {
        return Err(Error::invalid_state("the managed variable has no address"));
    }
    Ok(variable.address + offset as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn managed_accesses_stay_inside_the_variable() {
        let mut storage = [0u8; 16];
        let v = Variable { address: storage.as_mut_ptr() as u64, bytes: 12 };
        // SAFETY: `v` describes `storage`, which lives for the test and nothing else touches.
        unsafe {
            write_managed(v, 4, 4, 0x0102_0304).expect("inside");
            assert_eq!(read_managed(v, 4, 4).expect("inside"), 0x0102_0304);
            assert_eq!(read_managed(v, 4, 2).expect("inside"), 0x0304);
            assert!(read_managed(v, 8, 8).is_err(), "past the end");
            assert!(write_managed(v, 0, 9, 0).is_err(), "wider than 8 bytes");
            assert!(read_managed(v, usize::MAX, 1).is_err(), "overflow");
        }
        assert_eq!(storage[4..8], 0x0102_0304u32.to_ne_bytes());
    }
}
