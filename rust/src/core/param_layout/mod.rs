//! Kernel parameter layouts read from a module image itself (rule K2 on every driver, see
//! docs/design.md): drivers before CUDA 12.4 have no `cuKernelGetParamInfo`, and without a layout a
//! launch with a missing or wrong-sized argument would reach the GPU. PTX `.entry` lists
//! ([`ptx`]), the `.nv.info.<kernel>` attributes of a cubin ([`cubin`]) and the members of a fatbin
//! ([`fatbin`], LZ4-compressed or not) give the offsets and sizes the driver itself reports (a GPU
//! test compares them for every built-in and test kernel). A library reads them once, at load, and
//! only where the driver cannot tell.

mod cubin;
mod fatbin;
mod lz4;
mod param;
mod ptx;

pub use param::Param;

use crate::core::image::ImageKind;
use std::collections::HashMap;

/// The layouts of an image's kernels, by (mangled) kernel name. A kernel that is missing could not
/// be read: its launches go unchecked, never checked against a wrong layout.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImageLayouts {
    kernels: HashMap<String, Vec<Param>>,
}

impl ImageLayouts {
    /// Reads every kernel's layout from an image that `image::check` found to be of `kind`.
    /// Never fails: what cannot be read is left out (the driver, not this, judges the image).
    pub fn read(bytes: &[u8], kind: ImageKind) -> ImageLayouts {
        let mut merged = Merged::default();
        match kind {
            ImageKind::Ptx => merged.add(ptx::layouts(&ptx_text(bytes))),
            ImageKind::Cubin => merged.add(cubin::layouts(bytes)),
            ImageKind::Fatbin => {
                for member in fatbin::members(bytes) {
                    match member {
                        fatbin::Member::Ptx(text) => merged.add(ptx::layouts(&text)),
                        fatbin::Member::Cubin(elf) => merged.add(cubin::layouts(&elf)),
                    }
                }
            }
        }
        merged.finish()
    }

    /// The layout of kernel `name`, if the image described it.
    pub fn get(&self, name: &str) -> Option<&[Param]> {
        self.kernels.get(name).map(Vec::as_slice)
    }

    /// How many kernels have a layout.
    pub fn len(&self) -> usize {
        self.kernels.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kernels.is_empty()
    }

    /// One line per kernel, sorted by name: `name offset:size offset:size ...` (for tests that
    /// compare with the driver's answers).
    pub fn describe(&self) -> String {
        let mut lines: Vec<String> = self
            .kernels
            .iter()
            .map(|(name, params)| {
                std::iter::once(name.clone()).chain(params.iter().map(|p| format!("{}:{}", p.offset, p.size))).collect::<Vec<_>>().join(" ")
            })
            .collect();
        lines.sort();
        lines.join("\n")
    }
}

/// PTX as text: up to the first NUL (PTX handed to the driver is NUL-terminated), invalid UTF-8
/// (never in PTX) replaced.
fn ptx_text(bytes: &[u8]) -> String {
    let end = bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len());
    String::from_utf8_lossy(&bytes[..end]).into_owned()
}

/// Layouts gathered from the members of one image. Members that describe a kernel must agree; if
/// two do not, the kernel is left out (a reader's mistake must not refuse a valid launch).
#[derive(Default)]
struct Merged {
    kernels: HashMap<String, Option<Vec<Param>>>,
}

impl Merged {
    fn add(&mut self, found: Vec<(String, Option<Vec<Param>>)>) {
        for (name, layout) in found {
            let Some(layout) = layout else { continue };
            match self.kernels.get(&name) {
                None => {
                    self.kernels.insert(name, Some(layout));
                }
                Some(Some(known)) if *known != layout => {
                    log::warn!("the members of a module image disagree on the parameters of kernel '{name}' ({known:?} and {layout:?}); its launches go unchecked");
                    self.kernels.insert(name, None);
                }
                Some(_) => {}
            }
        }
    }

    fn finish(self) -> ImageLayouts {
        ImageLayouts { kernels: self.kernels.into_iter().filter_map(|(name, layout)| Some((name, layout?))).collect() }
    }
}

#[cfg(test)]
mod test_images;

#[cfg(test)]
mod tests {
    use super::*;
    use test_images::{compiled, Image};

    /// kernels/test/kernel_checks.cu's kernels as the ABI lays out their parameters.
    fn expected() -> Vec<(&'static str, Vec<(usize, usize)>)> {
        let bytes1k = 1024;
        vec![
            ("cuh_check_struct_at_0", vec![(0, bytes1k), (1024, 8)]),
            ("cuh_check_struct_at_1", vec![(0, 8), (8, bytes1k)]),
            ("cuh_check_struct_at_2", vec![(0, 8), (8, 4), (12, bytes1k)]),
            ("cuh_check_struct_at_3", vec![(0, 8), (8, 4), (12, 4), (16, bytes1k)]),
            ("cuh_check_struct_at_4", vec![(0, 8), (8, 4), (12, 4), (16, 4), (20, bytes1k)]),
            ("cuh_check_pointer_and_count", vec![(0, 8), (8, 4)]),
            ("cuh_check_struct48", vec![(0, 48), (48, 8)]),
            (
                "cuh_check_every_width",
                vec![(0, 1), (2, 2), (4, 4), (8, 8), (16, 4), (24, 8), (32, 8), (40, 48), (96, 16), (112, 24), (136, 1)],
            ),
            ("cuh_check_no_parameters", vec![]),
            ("cuh_check_unused", vec![(0, 4), (8, 8), (16, 4)]),
            ("_Z14cuh_check_tmplIfEvPT_S0_", vec![(0, 8), (8, 4)]),
            ("_Z14cuh_check_tmplIdEvPT_S0_", vec![(0, 8), (8, 8)]),
            ("cuh_check_static_and_dynamic_shared", vec![(0, 8), (8, 8), (16, 4)]),
        ]
    }

    fn assert_layouts(image: Image) {
        let (bytes, kind) = compiled(image);
        let layouts = ImageLayouts::read(&bytes, kind);
        let expected = expected();
        assert_eq!(layouts.len(), expected.len(), "{image:?}: {}", layouts.describe());
        for (name, params) in expected {
            let got: Vec<(usize, usize)> =
                layouts.get(name).unwrap_or_else(|| panic!("{image:?} describes {name}")).iter().map(|p| (p.offset, p.size)).collect();
            assert_eq!(got, params, "{image:?}: {name}");
        }
    }

    #[test]
    fn ptx_gives_every_kernels_layout() {
        assert_layouts(Image::Ptx);
    }

    #[test]
    fn cubins_for_volta_and_hopper_give_every_kernels_layout() {
        assert_layouts(Image::CubinSm70);
        assert_layouts(Image::CubinSm90);
    }

    #[test]
    fn fatbins_give_every_kernels_layout_from_plain_and_compressed_members() {
        assert_layouts(Image::Fatbin);
        assert_layouts(Image::FatbinCompressed);
        assert_layouts(Image::FatbinCubinsOnly);
        assert_layouts(Image::FatbinPtxOnly);
    }

    #[test]
    fn every_member_of_the_built_in_fatbin_agrees_with_the_others() {
        let members = fatbin::members(crate::core::kernels::FATBIN);
        assert!(members.iter().any(|m| matches!(m, fatbin::Member::Ptx(_))), "the built-in fatbin carries PTX");
        assert!(members.iter().filter(|m| matches!(m, fatbin::Member::Cubin(_))).count() >= 6, "SASS for sm_70 to sm_90");
        let all = ImageLayouts::read(crate::core::kernels::FATBIN, ImageKind::Fatbin);
        assert!(all.len() >= 16, "the BLAS kernels: {}", all.describe());
        for member in members {
            let one = match &member {
                fatbin::Member::Ptx(text) => ptx::layouts(text),
                fatbin::Member::Cubin(elf) => cubin::layouts(elf),
            };
            assert_eq!(one.len(), all.len(), "every member declares every kernel");
            for (name, layout) in one {
                assert_eq!(layout.as_deref(), all.get(&name), "kernel {name}");
            }
        }
    }

    #[test]
    fn members_that_disagree_leave_the_kernel_out() {
        let mut merged = Merged::default();
        let p = |offset, size| Param { offset, size };
        merged.add(vec![("a".into(), Some(vec![p(0, 8)])), ("b".into(), Some(vec![p(0, 4)])), ("c".into(), None)]);
        merged.add(vec![("a".into(), Some(vec![p(0, 4)])), ("b".into(), Some(vec![p(0, 4)])), ("c".into(), Some(vec![]))]);
        let layouts = merged.finish();
        assert_eq!(layouts.get("a"), None, "8 bytes in one member, 4 in the other");
        assert_eq!(layouts.get("b"), Some(&[p(0, 4)][..]));
        assert_eq!(layouts.get("c"), Some(&[][..]), "one member could not read it, the other could");
        assert_eq!(layouts.describe(), "b 0:4\nc");
    }

    #[test]
    fn ptx_ends_at_its_terminating_nul() {
        let layouts = ImageLayouts::read(b".version 7.8\n.entry k(.param .u32 n) {}\0.entry junk(.param .u8 x) {}", ImageKind::Ptx);
        assert_eq!(layouts.describe(), "k 0:4");
    }
}
