//! Parameter layouts from a cubin (a CUDA ELF file): each kernel has a section
//! `.nv.info.<kernel>` of attributes, among them one `EIATTR_KPARAM_INFO` per parameter with its
//! ordinal, offset and size, and `EIATTR_CBANK_PARAM_SIZE`, the bytes of all parameters. The
//! driver reads its own `cuKernelGetParamInfo` answers from the same attributes.

use super::param::Param;
use crate::core::image::{u16_at, u32_at, u64_at};

/// Attribute formats: no value, a byte, a half word (each in a 4-byte record), or a sized value.
const EIFMT_NVAL: u8 = 1;
const EIFMT_BVAL: u8 = 2;
const EIFMT_HVAL: u8 = 3;
const EIFMT_SVAL: u8 = 4;
/// One parameter: u32 index, u16 ordinal, u16 offset, u32 flags with the size in bits 18-31.
const EIATTR_KPARAM_INFO: u8 = 0x17;
/// The bytes of the parameter area: the end of the last parameter.
const EIATTR_CBANK_PARAM_SIZE: u8 = 0x19;
const KERNEL_INFO_PREFIX: &str = ".nv.info.";

/// (kernel name, layout) for every kernel that has an info section; `None` where the attributes
/// cannot be read or do not describe every parameter once. An image that is no readable ELF file
/// gives nothing.
pub fn layouts(elf: &[u8]) -> Vec<(String, Option<Vec<Param>>)> {
    sections(elf)
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(name, body)| Some((name.strip_prefix(KERNEL_INFO_PREFIX)?.to_string(), kernel_layout(body))))
        .collect()
}

/// (name, bytes) of every `.nv.info.*` section; `None` if the section table cannot be read.
fn sections(b: &[u8]) -> Option<Vec<(String, &[u8])>> {
    if !b.starts_with(b"\x7fELF") || b.get(4) != Some(&2) || b.get(5) != Some(&1) {
        return None; // only 64-bit little-endian ELF files are cubins
    }
    let shoff = usize::try_from(u64_at(b, 40)?).ok()?;
    let (entry_size, count, names_index) = (u16_at(b, 58)? as usize, u16_at(b, 60)? as usize, u16_at(b, 62)? as usize);
    if entry_size < 64 {
        return None;
    }
    let header = |i: usize| -> Option<(usize, &[u8])> {
        let at = shoff.checked_add(i.checked_mul(entry_size)?)?;
        let (name, kind) = (u32_at(b, at)? as usize, u32_at(b, at + 4)? as u32);
        let (offset, size) = (usize::try_from(u64_at(b, at + 24)?).ok()?, usize::try_from(u64_at(b, at + 32)?).ok()?);
        const SHT_NOBITS: u32 = 8;
        let body = if kind == SHT_NOBITS { &[][..] } else { b.get(offset..offset.checked_add(size)?)? };
        Some((name, body))
    };
    let (_, names) = header(names_index)?;
    let mut found = Vec::new();
    for i in 0..count {
        let (name_at, body) = header(i)?;
        let name = names.get(name_at..)?;
        let name = &name[..name.iter().position(|&c| c == 0)?];
        if name.starts_with(KERNEL_INFO_PREFIX.as_bytes()) {
            found.push((String::from_utf8(name.to_vec()).ok()?, body));
        }
    }
    Some(found)
}

/// The layout the attributes of one `.nv.info.<kernel>` section describe.
fn kernel_layout(body: &[u8]) -> Option<Vec<Param>> {
    let mut by_ordinal: Vec<Option<Param>> = Vec::new();
    let mut area_size = None;
    let mut at = 0;
    while at < body.len() {
        let (format, attribute) = (*body.get(at)?, *body.get(at + 1)?);
        match format {
            EIFMT_NVAL | EIFMT_BVAL => at += 4,
            EIFMT_HVAL => {
                if attribute == EIATTR_CBANK_PARAM_SIZE {
                    area_size = Some(u16_at(body, at + 2)? as usize);
                }
                at += 4;
            }
            EIFMT_SVAL => {
                let size = u16_at(body, at + 2)? as usize;
                let value = body.get(at + 4..at + 4 + size)?;
                if attribute == EIATTR_KPARAM_INFO {
                    let (ordinal, offset, flags) = (u16_at(value, 4)? as usize, u16_at(value, 6)? as usize, u32_at(value, 8)?);
                    let param = Param { offset, size: (flags >> 18) as usize & 0x3FFF };
                    if ordinal >= by_ordinal.len() {
                        by_ordinal.resize(ordinal + 1, None);
                    }
                    if by_ordinal[ordinal].replace(param).is_some() {
                        return None; // described twice
                    }
                }
                at += 4 + size;
            }
            _ => return None, // a format we do not know: its length neither
        }
    }
    // Every ordinal once, each parameter after the one before it and inside the parameter area.
    let layout: Vec<Param> = by_ordinal.into_iter().collect::<Option<Vec<Param>>>()?;
    let end = layout.iter().try_fold(0usize, |end, p| (p.offset >= end && p.size > 0).then(|| p.offset + p.size))?;
    match area_size {
        Some(area) if end > area || (layout.is_empty() && area > 0) => None,
        _ => Some(layout),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kparam(ordinal: u16, offset: u16, size: u32) -> Vec<u8> {
        let mut r = vec![EIFMT_SVAL, EIATTR_KPARAM_INFO, 12, 0, 0, 0, 0, 0];
        r.extend_from_slice(&ordinal.to_le_bytes());
        r.extend_from_slice(&offset.to_le_bytes());
        r.extend_from_slice(&((size << 18) | 0x1f000).to_le_bytes());
        r
    }

    fn param_size(size: u16) -> Vec<u8> {
        let mut r = vec![EIFMT_HVAL, EIATTR_CBANK_PARAM_SIZE];
        r.extend_from_slice(&size.to_le_bytes());
        r
    }

    fn layout(records: &[Vec<u8>]) -> Option<Vec<(usize, usize)>> {
        kernel_layout(&records.concat()).map(|l| l.iter().map(|p| (p.offset, p.size)).collect())
    }

    #[test]
    fn parameters_come_in_any_order_and_are_sorted_by_ordinal() {
        // nvcc lists the last parameter first; other attributes come between.
        let other = vec![EIFMT_SVAL, 0x37, 4, 0, 0x76, 0, 0, 0];
        let nval = vec![EIFMT_NVAL, 0x04, 0, 0];
        assert_eq!(
            layout(&[other, kparam(2, 16, 4), nval, kparam(1, 8, 8), kparam(0, 0, 4), param_size(20)]),
            Some(vec![(0, 4), (8, 8), (16, 4)])
        );
    }

    #[test]
    fn no_parameter_attributes_and_no_parameter_area_is_a_kernel_without_parameters() {
        assert_eq!(layout(&[vec![EIFMT_HVAL, 0x1b, 0xff, 0]]), Some(vec![]));
        assert_eq!(layout(&[param_size(8)]), None, "an area of 8 bytes but no parameter described");
    }

    #[test]
    fn gaps_overlaps_duplicates_and_unknown_formats_leave_the_kernel_unknown() {
        assert_eq!(layout(&[kparam(0, 0, 4), kparam(2, 8, 4)]), None, "ordinal 1 missing");
        assert_eq!(layout(&[kparam(0, 0, 8), kparam(1, 4, 4)]), None, "overlapping");
        assert_eq!(layout(&[kparam(0, 0, 4), kparam(0, 0, 4)]), None, "described twice");
        assert_eq!(layout(&[kparam(0, 0, 8), param_size(4)]), None, "past the parameter area");
        assert_eq!(layout(&[kparam(0, 0, 4), vec![9, 1, 0, 0]]), None, "format 9");
        assert_eq!(layout(&[kparam(0, 0, 4)[..10].to_vec()]), None, "cut off");
    }

    #[test]
    fn what_is_no_cubin_gives_no_kernels() {
        assert!(layouts(b"not an ELF file").is_empty());
        let mut elf32 = vec![0u8; 64];
        elf32[..4].copy_from_slice(b"\x7fELF");
        elf32[4] = 1;
        assert!(layouts(&elf32).is_empty());
    }
}
