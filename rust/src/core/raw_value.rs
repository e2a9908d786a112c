//! Checks of raw values that users hand over for interop (rule L6): contexts, streams and device
//! pointers that arrive as plain `long`s. The driver dereferences a context or stream handle
//! without validating it, so a value that cannot be a driver object (0, negative, inside the
//! first page, misaligned) would crash the JVM inside libcuda. Such values are refused here,
//! before the driver sees them. A plausible value (an aligned address of a destroyed or foreign
//! object) cannot be checked without the driver dereferencing it: that stays the caller's promise.

use crate::core::error::{Error, Result};

/// No mapping of a Linux process lies in its first page, so no object or allocation does either.
const FIRST_PAGE: u64 = 4096;
/// The driver allocates its objects with malloc, which aligns to at least 8 bytes.
const OBJECT_ALIGNMENT: u64 = 8;

/// A raw `CUcontext`, `CUstream` or `CUevent` handle: a pointer to a driver object.
pub fn check_object(value: u64, what: &str) -> Result<()> {
    check_address(value, what)?;
    if !value.is_multiple_of(OBJECT_ALIGNMENT) {
        return Err(Error::invalid_argument(format!(
            "{what} {value:#x} is not aligned to {OBJECT_ALIGNMENT} bytes, so it cannot be a driver object; expected a value the CUDA driver returned"
        )));
    }
    Ok(())
}

/// A raw address (of a driver object or of device memory): not 0, not negative as a Java `long`,
/// not inside the first page.
pub fn check_address(value: u64, what: &str) -> Result<()> {
    if value == 0 {
        return Err(Error::invalid_argument(format!("{what} is 0 (NULL); expected a value the CUDA driver returned")));
    }
    if value > i64::MAX as u64 {
        return Err(Error::invalid_argument(format!(
            "{what} is negative ({}), so it cannot be an address; expected a value the CUDA driver returned",
            value as i64
        )));
    }
    if value < FIRST_PAGE {
        return Err(Error::invalid_argument(format!(
            "{what} {value:#x} lies in the first page of the address space, where nothing can be allocated; expected a value the CUDA driver returned"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_that_cannot_be_objects_are_refused_with_the_reason() {
        let reason = |v: u64| check_object(v, "the CUcontext").expect_err("refused").to_string();
        assert!(reason(0).contains("0 (NULL)"));
        assert!(reason(1).contains("first page"));
        assert!(reason(4095).contains("first page"));
        assert!(reason(-1i64 as u64).contains("negative (-1)"));
        assert!(reason(0x7f00_0000_1002).contains("not aligned to 8"));
        assert!(check_object(0x7f00_0000_1000, "ctx").is_ok());
        assert!(check_object(4096, "ctx").is_ok());
    }

    #[test]
    fn addresses_need_no_alignment() {
        assert!(check_address(0x7f00_0000_1002, "device pointer").is_ok());
        assert!(check_address(2, "device pointer").is_err());
    }
}
