//! Checks a module image (PTX, cubin or fatbin) before the driver parses it. The driver trusts
//! the sizes inside an image; a truncated fatbin or ELF would make it read past our buffer. We
//! check those sizes against the real length and hand the driver an 8-byte aligned, NUL-padded
//! copy.

use crate::core::error::{Error, Result};

pub(crate) const FATBIN_MAGIC: u32 = 0xBA55_ED50;
/// Zero bytes after the image: terminates PTX text and absorbs any small over-read.
const PADDING: usize = 64;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImageKind {
    Fatbin,
    Cubin,
    Ptx,
}

/// An image copy the driver may read: aligned to 8 bytes and followed by zeros.
pub struct CheckedImage {
    words: Vec<u64>,
    pub kind: ImageKind,
}

impl CheckedImage {
    pub fn as_ptr(&self) -> *const std::ffi::c_void {
        self.words.as_ptr().cast()
    }
}

pub fn check(bytes: &[u8]) -> Result<CheckedImage> {
    if bytes.is_empty() {
        return Err(Error::invalid_argument("the module image is empty; expected PTX text, a cubin or a fatbin"));
    }
    let kind = if bytes.len() >= 4 && u32::from_le_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) == FATBIN_MAGIC {
        check_fatbin(bytes)?;
        ImageKind::Fatbin
    } else if bytes.starts_with(b"\x7fELF") {
        check_elf(bytes)?;
        ImageKind::Cubin
    } else if looks_like_ptx(bytes) {
        ImageKind::Ptx
    } else {
        return Err(Error::invalid_argument(format!(
            "the module image ({} bytes) is neither a fatbin (magic 0x{FATBIN_MAGIC:08X}), a cubin (ELF) nor PTX text",
            bytes.len()
        )));
    };
    let mut words = vec![0u64; (bytes.len() + PADDING).div_ceil(8)];
    // SAFETY: `words` holds at least bytes.len() bytes; u8 has no alignment requirement.
    unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), words.as_mut_ptr().cast::<u8>(), bytes.len()) };
    Ok(CheckedImage { words, kind })
}

fn truncated(what: &str, need: u64, have: usize) -> Error {
    Error::invalid_argument(format!("truncated {what}: its headers describe {need} bytes but the image has only {have}"))
}

pub(crate) fn u16_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 2).map(|s| u16::from_le_bytes([s[0], s[1]]) as u64)
}
pub(crate) fn u32_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 4).map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]) as u64)
}
pub(crate) fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    b.get(at..at + 8).map(|s| u64::from_le_bytes(s.try_into().unwrap_or([0; 8])))
}

/// Fatbin: a 16-byte header {magic, version, header size, payload size} followed by entries,
/// each {kind u16, version u16, header size u32, payload size u64, ...}.
fn check_fatbin(b: &[u8]) -> Result<()> {
    let header = u16_at(b, 6).ok_or_else(|| truncated("fatbin header", 16, b.len()))?;
    let payload = u64_at(b, 8).ok_or_else(|| truncated("fatbin header", 16, b.len()))?;
    let end = header.checked_add(payload).ok_or_else(|| truncated("fatbin", u64::MAX, b.len()))?;
    if end > b.len() as u64 {
        return Err(truncated("fatbin", end, b.len()));
    }
    let mut at = header;
    while at < end {
        let entry_header = u32_at(b, at as usize + 4).ok_or_else(|| truncated("fatbin entry", at + 16, b.len()))?;
        let entry_size = u64_at(b, at as usize + 8).ok_or_else(|| truncated("fatbin entry", at + 16, b.len()))?;
        let next = at.checked_add(entry_header).and_then(|x| x.checked_add(entry_size)).filter(|&n| n > at);
        match next {
            Some(n) if n <= end => at = n,
            _ => return Err(truncated("fatbin entry", at.saturating_add(entry_header).saturating_add(entry_size), end as usize)),
        }
    }
    Ok(())
}

/// 64-bit little-endian ELF: the section and program header tables and every section's bytes
/// must lie inside the image.
fn check_elf(b: &[u8]) -> Result<()> {
    if b.len() < 64 || b[4] != 2 || b[5] != 1 {
        return Err(Error::invalid_argument(format!("the cubin is not a complete 64-bit little-endian ELF file ({} bytes)", b.len())));
    }
    let bad = |need: u64| truncated("cubin (ELF)", need, b.len());
    let table_end = |off: u64, count: u64, size: u64| off.checked_add(count.checked_mul(size)?);
    let (phoff, shoff) = (u64_at(b, 32).unwrap_or(0), u64_at(b, 40).unwrap_or(0));
    let (phentsize, phnum) = (u16_at(b, 54).unwrap_or(0), u16_at(b, 56).unwrap_or(0));
    let (shentsize, shnum) = (u16_at(b, 58).unwrap_or(0), u16_at(b, 60).unwrap_or(0));
    for (off, num, size) in [(phoff, phnum, phentsize), (shoff, shnum, shentsize)] {
        match table_end(off, num, size) {
            Some(e) if e <= b.len() as u64 => {}
            other => return Err(bad(other.unwrap_or(u64::MAX))),
        }
    }
    const SHT_NOBITS: u64 = 8;
    for i in 0..shnum {
        let sh = (shoff + i * shentsize) as usize;
        let kind = u32_at(b, sh + 4).unwrap_or(0);
        let (offset, size) = (u64_at(b, sh + 24).unwrap_or(0), u64_at(b, sh + 32).unwrap_or(0));
        if kind != SHT_NOBITS {
            match offset.checked_add(size) {
                Some(e) if e <= b.len() as u64 => {}
                other => return Err(bad(other.unwrap_or(u64::MAX))),
            }
        }
    }
    Ok(())
}

fn looks_like_ptx(b: &[u8]) -> bool {
    let text = match std::str::from_utf8(&b[..b.len().min(4096)]) {
        Ok(t) => t,
        Err(e) if e.valid_up_to() > 0 && b.len() > 4096 => std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or(""),
        Err(_) => return false,
    };
    text.contains(".version") || text.contains(".target") || text.contains(".entry")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fatbin(entries: &[(u32, u64)], payload_padding: usize) -> Vec<u8> {
        let body: u64 = entries.iter().map(|(h, s)| *h as u64 + s).sum();
        let mut b = Vec::new();
        b.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(&body.to_le_bytes());
        for (h, s) in entries {
            let mut e = vec![0u8; *h as usize + *s as usize];
            e[4..8].copy_from_slice(&h.to_le_bytes());
            e[8..16].copy_from_slice(&s.to_le_bytes());
            b.extend_from_slice(&e);
        }
        b.extend(std::iter::repeat_n(0u8, payload_padding));
        b
    }

    #[test]
    fn a_well_formed_fatbin_passes_and_is_padded() {
        let b = fatbin(&[(64, 100), (64, 36)], 0);
        let img = check(&b).expect("valid");
        assert_eq!(img.kind, ImageKind::Fatbin);
        assert!(img.words.len() * 8 >= b.len() + PADDING);
    }

    #[test]
    fn a_truncated_fatbin_is_refused_with_sizes() {
        let b = fatbin(&[(64, 100)], 0);
        let err = check(&b[..b.len() - 10]).err().expect("truncated").to_string();
        assert!(err.contains("truncated fatbin"), "{err}");
    }

    #[test]
    fn an_entry_pointing_past_the_payload_is_refused() {
        let mut b = fatbin(&[(64, 100)], 0);
        b[16 + 8..16 + 16].copy_from_slice(&1000u64.to_le_bytes());
        assert!(check(&b).is_err());
    }

    #[test]
    fn elf_tables_outside_the_file_are_refused() {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[40..48].copy_from_slice(&4096u64.to_le_bytes()); // section headers at 4096
        b[58..60].copy_from_slice(&64u16.to_le_bytes());
        b[60..62].copy_from_slice(&3u16.to_le_bytes());
        let err = check(&b).err().expect("sections outside").to_string();
        assert!(err.contains("truncated cubin"), "{err}");
        assert!(check(&b[..40]).is_err());
    }

    #[test]
    fn ptx_text_is_recognised_and_garbage_is_not() {
        assert_eq!(check(b".version 7.0\n.target sm_70\n").expect("ptx").kind, ImageKind::Ptx);
        let err = check(&[1, 2, 3, 4, 5]).err().expect("garbage").to_string();
        assert!(err.contains("neither a fatbin"), "{err}");
        assert!(check(&[]).is_err());
    }
}
