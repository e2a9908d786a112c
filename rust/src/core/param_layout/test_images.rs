//! Real module images for the tests: kernels/test/kernel_checks.cu compiled by nvcc (the build
//! needs it anyway, rust/build.rs) into PTX, cubins and fatbins, once per test process.

use crate::core::image::ImageKind;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Image {
    Ptx,
    CubinSm70,
    CubinSm90,
    /// SASS for sm_70 and sm_90 plus PTX (nvcc's default: the PTX LZ4-compressed).
    Fatbin,
    /// The same with every member LZ4-compressed (`-Xfatbin=-compress-all`).
    FatbinCompressed,
    FatbinCubinsOnly,
    FatbinPtxOnly,
}

impl Image {
    const ALL: [Image; 7] = [
        Image::Ptx,
        Image::CubinSm70,
        Image::CubinSm90,
        Image::Fatbin,
        Image::FatbinCompressed,
        Image::FatbinCubinsOnly,
        Image::FatbinPtxOnly,
    ];

    fn nvcc_arguments(self) -> Vec<&'static str> {
        const SM70: &str = "arch=compute_70,code=sm_70";
        const SM90: &str = "arch=compute_90,code=sm_90";
        const PTX90: &str = "arch=compute_90,code=compute_90";
        match self {
            Image::Ptx => vec!["-ptx", "-arch=compute_70"],
            Image::CubinSm70 => vec!["-cubin", "-arch=sm_70"],
            Image::CubinSm90 => vec!["-cubin", "-arch=sm_90"],
            Image::Fatbin => vec!["-fatbin", "-gencode", SM70, "-gencode", SM90, "-gencode", PTX90],
            Image::FatbinCompressed => vec!["-fatbin", "-Xfatbin=-compress-all", "-gencode", SM70, "-gencode", PTX90],
            Image::FatbinCubinsOnly => vec!["-fatbin", "-gencode", SM70, "-gencode", SM90],
            Image::FatbinPtxOnly => vec!["-fatbin", "-gencode", PTX90],
        }
    }

    fn kind(self) -> ImageKind {
        match self {
            Image::Ptx => ImageKind::Ptx,
            Image::CubinSm70 | Image::CubinSm90 => ImageKind::Cubin,
            _ => ImageKind::Fatbin,
        }
    }
}

/// The bytes and kind of `image`, compiled on first use (all of them at once, in parallel).
pub fn compiled(image: Image) -> (Vec<u8>, ImageKind) {
    static IMAGES: OnceLock<Vec<(Image, Vec<u8>)>> = OnceLock::new();
    let images = IMAGES.get_or_init(compile_all);
    let bytes = images.iter().find(|(i, _)| *i == image).map(|(_, b)| b.clone()).expect("every image is compiled");
    (bytes, image.kind())
}

fn compile_all() -> Vec<(Image, Vec<u8>)> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../kernels/test/kernel_checks.cu");
    let dir = std::env::temp_dir().join(format!("cuhandle-param-layout-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    let path = |image: Image| -> PathBuf { dir.join(format!("{image:?}.image")) };
    let nvcc = std::env::var_os("NVCC").unwrap_or_else(|| "nvcc".into());
    let children: Vec<_> = Image::ALL
        .iter()
        .map(|&image| {
            let child = Command::new(&nvcc).args(image.nvcc_arguments()).arg(&source).arg("-o").arg(path(image)).spawn();
            (image, child.unwrap_or_else(|e| panic!("running nvcc ({e}): the tests need it, as the build does (scripts/setup.sh)")))
        })
        .collect();
    let mut images = Vec::new();
    for (image, mut child) in children {
        let status = child.wait().expect("nvcc ran");
        assert!(status.success(), "nvcc failed compiling {image:?} ({status})");
        images.push((image, std::fs::read(path(image)).unwrap_or_else(|e| panic!("reading the compiled {image:?}: {e}"))));
    }
    let _ = std::fs::remove_dir_all(&dir);
    images
}
