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

// The workspace holds a slot per block and the counter; blocks are whole warps.
const _: () = assert!(abi::CUH_WORKSPACE_BYTES >= abi::CUH_MAX_REDUCE_BLOCKS * abi::CUH_WORKSPACE_SLOT_BYTES + 4);
const _: () = assert!(abi::CUH_BLOCK_THREADS.is_multiple_of(32));

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

    /// The ELF checks (image.rs) accept the cubins nvcc builds for every architecture of the
    /// fatbin (sm_70 to sm_90): its entries of kind 2 are uncompressed ELF files.
    #[test]
    fn every_cubin_nvcc_built_passes_the_elf_checks() {
        let u16_at = |at: usize| u16::from_le_bytes([FATBIN[at], FATBIN[at + 1]]) as usize;
        let u32_at = |at: usize| u32::from_le_bytes(FATBIN[at..at + 4].try_into().expect("4 bytes")) as usize;
        let u64_at = |at: usize| u64::from_le_bytes(FATBIN[at..at + 8].try_into().expect("8 bytes")) as usize;
        let (mut at, end) = (u16_at(6), u16_at(6) + u64_at(8));
        let mut cubins = 0;
        while at < end {
            let (kind, header, size) = (u16_at(at), u32_at(at + 4), u64_at(at + 8));
            let payload = &FATBIN[at + header..at + header + size];
            if kind == 2 && payload.starts_with(b"\x7fELF") {
                let image =
                    crate::core::image::check(payload).unwrap_or_else(|e| panic!("the cubin at fatbin offset {at} is refused: {e}"));
                assert_eq!(image.kind, crate::core::image::ImageKind::Cubin);
                cubins += 1;
            }
            at += header + size;
        }
        assert!(cubins >= 5, "the fatbin holds machine code for sm_70 to sm_90; found {cubins} cubins");
    }
}
