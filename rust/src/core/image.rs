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
    } else if looks_like_cuda_source(bytes) {
        return Err(Error::invalid_argument(format!(
            "the module image ({} bytes) is CUDA C++ source (it declares a __global__ function), not a module image: compile it \
             first, with nvcc (e.g. nvcc -fatbin -arch=native -o kernels.fatbin kernels.cu for this machine's GPUs, -gencode \
             options for others; then load the .fatbin) or at run time with Library.compile(source, CompileOptions.defaults())",
            bytes.len()
        )));
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

/// Sizes the ELF-64 format fixes: the file header, a program header, a section header, and an
/// entry of a symbol table or of a relocation table with and without addends.
const EHDR_BYTES: u64 = 64;
const PHDR_BYTES: u64 = 56;
const SHDR_BYTES: u64 = 64;
const SYM_BYTES: u64 = 24;
const RELA_BYTES: u64 = 24;
const REL_BYTES: u64 = 16;
const SHT_SYMTAB: u64 = 2;
const SHT_STRTAB: u64 = 3;
const SHT_RELA: u64 = 4;
const SHT_NOBITS: u64 = 8;
const SHT_REL: u64 = 9;
const SHT_DYNSYM: u64 = 11;
/// `e_shstrndx` and `e_phnum` values that say "the real value is in section header 0".
const SHN_XINDEX: u64 = 0xFFFF;
const PN_XNUM: u64 = 0xFFFF;

/// 64-bit little-endian ELF. The driver walks the tables by the sizes the header announces, so
/// each must be the format's own (a header claiming 65,535 section headers of size 0 passes any
/// bounds check on the table and then makes the reader run 4 MiB past the image); the tables,
/// every section's and segment's bytes and the section-name strings must lie inside the image.
fn check_elf(b: &[u8]) -> Result<()> {
    if b.len() < EHDR_BYTES as usize || b[4] != 2 || b[5] != 1 {
        return Err(Error::invalid_argument(format!("the cubin is not a complete 64-bit little-endian ELF file ({} bytes)", b.len())));
    }
    let len = b.len() as u64;
    let bad = |need: u64| truncated("cubin (ELF)", need, b.len());
    let inside = |off: u64, count: u64, size: u64| -> Result<()> {
        match count.checked_mul(size).and_then(|bytes| off.checked_add(bytes)) {
            Some(end) if end <= len => Ok(()),
            other => Err(bad(other.unwrap_or(u64::MAX))),
        }
    };
    let field = |at: usize, bytes: usize| {
        match bytes {
            2 => u16_at(b, at),
            4 => u32_at(b, at),
            _ => u64_at(b, at),
        }
        .unwrap_or(0)
    };
    let (phoff, shoff) = (field(32, 8), field(40, 8));
    let (ehsize, phentsize, mut phnum) = (field(52, 2), field(54, 2), field(56, 2));
    let (shentsize, mut shnum, mut shstrndx) = (field(58, 2), field(60, 2), field(62, 2));
    if ehsize != EHDR_BYTES {
        return Err(wrong_size("ELF header size (e_ehsize)", ehsize, EHDR_BYTES));
    }
    if shoff != 0 {
        if shentsize != SHDR_BYTES {
            return Err(wrong_size("section header size (e_shentsize)", shentsize, SHDR_BYTES));
        }
        // Section header 0 holds the real counts when they do not fit the ELF header's fields.
        inside(shoff, 1, SHDR_BYTES)?;
        let first = shoff as usize;
        if shnum == 0 {
            shnum = field(first + 32, 8);
        }
        if phnum == PN_XNUM {
            phnum = field(first + 44, 4);
        }
        if shstrndx == SHN_XINDEX {
            shstrndx = field(first + 40, 4);
        }
        inside(shoff, shnum, SHDR_BYTES)?;
    } else if shnum != 0 {
        return Err(Error::invalid_argument(format!("the cubin's ELF header announces {shnum} sections but no section header table")));
    }
    if phnum != 0 && phentsize != PHDR_BYTES {
        return Err(wrong_size("program header size (e_phentsize)", phentsize, PHDR_BYTES));
    }
    inside(phoff, phnum, PHDR_BYTES)?;
    for i in 0..phnum {
        let ph = (phoff + i * PHDR_BYTES) as usize;
        inside(field(ph + 8, 8), 1, field(ph + 32, 8))?; // p_offset, p_filesz
    }
    if shstrndx != 0 && shstrndx >= shnum {
        return Err(Error::invalid_argument(format!("the cubin's section-name table index {shstrndx} is not below its {shnum} sections")));
    }
    let section = |i: u64| {
        let sh = (shoff + i * SHDR_BYTES) as usize;
        Section {
            name: field(sh, 4),
            kind: field(sh + 4, 4),
            offset: field(sh + 24, 8),
            size: field(sh + 32, 8),
            link: field(sh + 40, 4),
            entsize: field(sh + 56, 8),
        }
    };
    for i in 0..shnum {
        let s = section(i);
        if s.kind == SHT_NOBITS {
            continue;
        }
        inside(s.offset, 1, s.size)?;
        let table_entry = match s.kind {
            SHT_SYMTAB | SHT_DYNSYM => Some(SYM_BYTES),
            SHT_RELA => Some(RELA_BYTES),
            SHT_REL => Some(REL_BYTES),
            _ => None,
        };
        if let Some(entry) = table_entry {
            if s.size > 0 && (s.entsize != entry || s.size % entry != 0) {
                return Err(Error::invalid_argument(format!(
                    "the cubin's section {i} is a table of {}-byte entries over {} bytes; ELF-64 tables of its type have {entry}-byte entries",
                    s.entsize, s.size
                )));
            }
            if s.link >= shnum {
                return Err(Error::invalid_argument(format!("the cubin's section {i} links to section {} of {shnum}", s.link)));
            }
        }
        if s.kind == SHT_STRTAB && s.size > 0 && b[(s.offset + s.size - 1) as usize] != 0 {
            return Err(Error::invalid_argument(format!("the cubin's string table (section {i}) does not end with a NUL byte")));
        }
    }
    if shnum > 0 && shstrndx != 0 {
        let names = section(shstrndx);
        if names.kind != SHT_STRTAB {
            return Err(Error::invalid_argument(format!("the cubin's section-name table (section {shstrndx}) is no string table")));
        }
        for i in 0..shnum {
            let name = section(i).name;
            if name != 0 && name >= names.size {
                return Err(Error::invalid_argument(format!(
                    "the cubin's section {i} names offset {name} of a {}-byte name table",
                    names.size
                )));
            }
        }
    }
    Ok(())
}

/// The fields of a section header that the checks read.
struct Section {
    name: u64,
    kind: u64,
    offset: u64,
    size: u64,
    link: u64,
    entsize: u64,
}

fn wrong_size(what: &str, found: u64, expected: u64) -> Error {
    Error::invalid_argument(format!("the cubin's {what} is {found}; 64-bit ELF has {expected}"))
}

/// The first 4 KiB as text, or "" when they are not UTF-8 (a cut through a character at the end is allowed).
fn leading_text(b: &[u8]) -> &str {
    match std::str::from_utf8(&b[..b.len().min(4096)]) {
        Ok(t) => t,
        Err(e) if e.valid_up_to() > 0 && b.len() > 4096 => std::str::from_utf8(&b[..e.valid_up_to()]).unwrap_or(""),
        Err(_) => "",
    }
}

fn looks_like_ptx(b: &[u8]) -> bool {
    let text = leading_text(b);
    text.contains(".version") || text.contains(".target") || text.contains(".entry")
}

/// A `.cu` file handed over as an image. Checked before PTX, whose checks a source mentioning `.entry`
/// would pass; PTX itself never declares `__global__` (PTX with the source interleaved as comments
/// may mention it, but it starts with `.version`).
fn looks_like_cuda_source(b: &[u8]) -> bool {
    let text = leading_text(b);
    text.contains("__global__") && !text.contains(".version")
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

    /// A 64-byte ELF-64 header with no tables.
    fn elf_header() -> Vec<u8> {
        let mut b = vec![0u8; 64];
        b[..4].copy_from_slice(b"\x7fELF");
        b[4] = 2;
        b[5] = 1;
        b[52..54].copy_from_slice(&64u16.to_le_bytes());
        b
    }

    fn put(b: &mut [u8], at: usize, value: u64, bytes: usize) {
        b[at..at + bytes].copy_from_slice(&value.to_le_bytes()[..bytes]);
    }

    /// A small well-formed ELF: header, a 6-byte name table ("\0.ab\0\0"), three section
    /// headers (null, the names, a 24-byte symbol table), one program header over the names.
    fn small_elf() -> Vec<u8> {
        let mut b = elf_header();
        let names_at = b.len() as u64;
        b.extend_from_slice(b"\0.ab\0\0");
        let symbols_at = b.len() as u64;
        b.extend_from_slice(&[0u8; 24]);
        let ph_at = b.len() as u64;
        b.extend_from_slice(&[0u8; 56]);
        let sh_at = b.len() as u64;
        b.extend_from_slice(&[0u8; 3 * 64]);
        put(&mut b, 32, ph_at, 8);
        put(&mut b, 40, sh_at, 8);
        put(&mut b, 54, 56, 2);
        put(&mut b, 56, 1, 2);
        put(&mut b, 58, 64, 2);
        put(&mut b, 60, 3, 2);
        put(&mut b, 62, 1, 2);
        let ph = ph_at as usize;
        put(&mut b, ph + 8, names_at, 8);
        put(&mut b, ph + 32, 6, 8);
        let (names, symbols) = (sh_at as usize + 64, sh_at as usize + 128);
        put(&mut b, names + 4, SHT_STRTAB, 4);
        put(&mut b, names + 24, names_at, 8);
        put(&mut b, names + 32, 6, 8);
        put(&mut b, symbols, 1, 4);
        put(&mut b, symbols + 4, SHT_SYMTAB, 4);
        put(&mut b, symbols + 24, symbols_at, 8);
        put(&mut b, symbols + 32, 24, 8);
        put(&mut b, symbols + 40, 1, 4);
        put(&mut b, symbols + 56, 24, 8);
        b
    }

    #[test]
    fn a_well_formed_elf_passes() {
        assert_eq!(check(&small_elf()).expect("well formed").kind, ImageKind::Cubin);
        assert_eq!(check(&elf_header()).expect("no tables at all").kind, ImageKind::Cubin);
    }

    /// Issue 26 (5): a 64-byte ELF claiming 65,535 section headers of size 0 passed, and the
    /// driver would then read 65,535 real 64-byte headers from a 64-byte buffer.
    #[test]
    fn header_entry_sizes_must_be_elf64s_own() {
        let mut b = elf_header();
        put(&mut b, 40, 64, 8);
        put(&mut b, 58, 0, 2);
        put(&mut b, 60, 65_535, 2);
        let err = check(&b).err().expect("section headers of size 0").to_string();
        assert!(err.contains("section header size (e_shentsize) is 0; 64-bit ELF has 64"), "{err}");
        let mut b = small_elf();
        put(&mut b, 54, 8, 2);
        assert!(check(&b).err().expect("program headers of size 8").to_string().contains("e_phentsize"));
        let mut b = small_elf();
        put(&mut b, 52, 16, 2);
        assert!(check(&b).err().expect("a 16-byte ELF header").to_string().contains("e_ehsize"));
        let mut b = elf_header();
        put(&mut b, 60, 3, 2);
        assert!(check(&b).err().expect("sections without a table").to_string().contains("no section header table"));
    }

    #[test]
    fn sections_tables_and_names_must_lie_inside() {
        let symbols = 64 + 6 + 24 + 56 + 128;
        let mut b = small_elf();
        put(&mut b, symbols + 56, 0, 8); // symbol entries of size 0
        assert!(check(&b).err().expect("symbol size 0").to_string().contains("24-byte entries"));
        let mut b = small_elf();
        put(&mut b, symbols + 40, 7, 4); // links to a section that does not exist
        assert!(check(&b).err().expect("bad link").to_string().contains("links to section 7"));
        let mut b = small_elf();
        put(&mut b, 62, 3, 2); // name table index past the sections
        assert!(check(&b).err().expect("bad shstrndx").to_string().contains("not below its 3 sections"));
        let mut b = small_elf();
        put(&mut b, symbols, 4000, 4); // a name offset past the name table
        assert!(check(&b).err().expect("bad name").to_string().contains("names offset 4000"));
        let mut b = small_elf();
        b[64 + 5] = b'x'; // the name table no longer ends with NUL
        assert!(check(&b).err().expect("unterminated names").to_string().contains("does not end with a NUL"));
        let mut b = small_elf();
        put(&mut b, 64 + 6 + 24 + 32, 4096, 8); // a segment past the end
        assert!(check(&b).err().expect("segment outside").to_string().contains("truncated cubin"));
        let mut b = small_elf();
        put(&mut b, 60, 0, 2); // extended numbering: the count is in section 0, here 0
        assert!(check(&b).err().expect("0 sections but a name index").to_string().contains("not below its 0 sections"));
        put(&mut b, 64 + 6 + 24 + 56 + 32, 3, 8); // section 0's sh_size holds the real count
        check(&b).expect("extended section numbering");
    }

    #[test]
    fn elf_tables_outside_the_file_are_refused() {
        let mut b = elf_header();
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

    #[test]
    fn cuda_source_is_refused_with_how_to_compile_it() {
        let source = b"extern \"C\" __global__ void scale(float *x, float a, int n) { x[threadIdx.x] *= a; }\n";
        let err = check(source).err().expect("source is no image").to_string();
        assert!(err.contains("is CUDA C++ source"), "{err}");
        assert!(err.contains("nvcc -fatbin"), "{err}");
        assert!(err.contains("Library.compile"), "{err}");
        // PTX that carries its source as comments (nvcc -src-in-ptx) is still PTX.
        let ptx = b".version 8.0\n.target sm_90\n// __global__ void scale(float *x)\n.entry scale()\n{\n}\n";
        assert_eq!(check(ptx).expect("ptx").kind, ImageKind::Ptx);
    }
}
