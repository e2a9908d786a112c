//! The built-in kernels: one fatbin compiled from `kernels/*.cu` at build time (SASS for sm_70
//! to sm_90 plus PTX), embedded here and loaded once per process, context-independently.

use crate::core::error::Result;
use crate::core::library::Library;
use std::sync::OnceLock;

/// Constants shared with the kernels (`kernels/blas1_abi.h`, mirrored by build.rs).
#[allow(unused_parens, dead_code)]
pub mod abi {
    include!(concat!(env!("OUT_DIR"), "/blas1_abi.rs"));
}

/// The embedded fatbin image.
pub static FATBIN: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/cuhandle_kernels.fatbin"));

static BUILTIN: OnceLock<Library> = OnceLock::new();
static LOAD_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The built-in library, loaded on first use (a failed load is retried on the next call).
pub fn builtin() -> Result<&'static Library> {
    if let Some(lib) = BUILTIN.get() {
        return Ok(lib);
    }
    let _guard = LOAD_LOCK.lock();
    if let Some(lib) = BUILTIN.get() {
        return Ok(lib);
    }
    let lib = Library::load(FATBIN)?;
    Ok(BUILTIN.get_or_init(|| lib))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_image_is_a_well_formed_fatbin() {
        let image = crate::core::image::check(FATBIN).expect("fatbin passes the image checks");
        assert_eq!(image.kind, crate::core::image::ImageKind::Fatbin);
    }

    #[test]
    fn the_workspace_holds_a_slot_per_block_and_the_counter() {
        assert!(abi::CUH_WORKSPACE_BYTES >= abi::CUH_MAX_REDUCE_BLOCKS * abi::CUH_WORKSPACE_SLOT_BYTES + 4);
        assert_eq!(abi::CUH_BLOCK_THREADS % 32, 0);
    }
}
