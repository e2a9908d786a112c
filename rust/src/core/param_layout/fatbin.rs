//! The members of a fatbin: cubins for some architectures and PTX for others, each maybe
//! LZ4-compressed. Every member of one image declares the same kernels with the same parameters
//! (nvcc compiles them from one source), so any member that describes a kernel will do.

use super::lz4;
use crate::core::image::{u16_at, u32_at, u64_at, FATBIN_MAGIC};

/// What a member holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Member {
    Ptx(String),
    Cubin(Vec<u8>),
}

/// Member kinds in the entry header.
const KIND_PTX: u64 = 1;
const KIND_ELF: u64 = 2;
/// Entry flag: the payload is one LZ4 block (uncompressed size at byte 56 of the entry header).
const FLAG_LZ4: u64 = 0x2000;
/// No member of a real image comes near this; a larger announced size is a damaged header.
const MAX_MEMBER_BYTES: u64 = 1 << 30;

/// The PTX and cubin members of every fatbin in `b` (nvcc can put several one after another),
/// decompressed. Members of other kinds, or that cannot be read, are left out.
pub fn members(b: &[u8]) -> Vec<Member> {
    let mut found = Vec::new();
    let mut start = 0usize;
    // A fatbin: {magic u32, version u16, header size u16, payload size u64}, then its entries.
    while u32_at(b, start) == Some(u64::from(FATBIN_MAGIC)) {
        let (Some(header), Some(payload)) = (u16_at(b, start + 6), u64_at(b, start + 8)) else { break };
        let Some(end) = (start as u64).checked_add(header).and_then(|e| e.checked_add(payload)).filter(|&e| e <= b.len() as u64) else {
            break;
        };
        let end = end as usize;
        let mut at = start + header as usize;
        // An entry: {kind u16, version u16, header size u32, payload size u64, compressed size u32,
        // ..., flags u64 at 40, uncompressed size u64 at 56}.
        while at + 16 <= end {
            let (Some(kind), Some(entry_header), Some(size)) = (u16_at(b, at), u32_at(b, at + 4), u64_at(b, at + 8)) else { break };
            let Some(next) =
                (at as u64).checked_add(entry_header).and_then(|n| n.checked_add(size)).filter(|&n| n <= end as u64 && entry_header >= 16)
            else {
                break;
            };
            let data = &b[at + entry_header as usize..next as usize];
            let compressed = u32_at(b, at + 16).unwrap_or(0);
            let flags = if entry_header >= 48 { u64_at(b, at + 40).unwrap_or(0) } else { 0 };
            let expanded = if entry_header >= 64 { u64_at(b, at + 56).unwrap_or(0) } else { 0 };
            if let Some(member) = member(kind, flags, compressed, expanded, data) {
                found.push(member);
            }
            at = next as usize;
        }
        // The next fatbin, if any, starts at the end or at the next 8-byte boundary.
        start = if u32_at(b, end) == Some(u64::from(FATBIN_MAGIC)) { end } else { end.next_multiple_of(8) };
    }
    found
}

fn member(kind: u64, flags: u64, compressed: u64, expanded: u64, data: &[u8]) -> Option<Member> {
    if kind != KIND_PTX && kind != KIND_ELF {
        return None;
    }
    let bytes = if flags & FLAG_LZ4 != 0 {
        if expanded == 0 || expanded > MAX_MEMBER_BYTES {
            return None;
        }
        // The payload is padded after the compressed bytes.
        let block = if compressed > 0 && compressed < data.len() as u64 { &data[..compressed as usize] } else { data };
        lz4::decompress_block(block, expanded as usize)?
    } else {
        data.to_vec()
    };
    if kind == KIND_ELF {
        // Another compression than LZ4 (flags this code does not know) shows as no ELF header.
        return bytes.starts_with(b"\x7fELF").then_some(Member::Cubin(bytes));
    }
    // PTX text, NUL-padded to the payload's size.
    let text = &bytes[..bytes.iter().position(|&c| c == 0).unwrap_or(bytes.len())];
    let text = std::str::from_utf8(text).ok()?;
    text.contains(".version").then(|| Member::Ptx(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry header of 64 bytes with `kind`, `flags` and the uncompressed size, then `data`
    /// padded to a multiple of 8 bytes, as nvcc pads compressed members.
    fn entry(kind: u16, flags: u64, expanded: u64, data: &[u8]) -> Vec<u8> {
        let mut e = vec![0u8; 64];
        e[..2].copy_from_slice(&kind.to_le_bytes());
        e[4..8].copy_from_slice(&64u32.to_le_bytes());
        e[8..16].copy_from_slice(&(data.len().next_multiple_of(8) as u64).to_le_bytes());
        e[16..20].copy_from_slice(&(data.len() as u32).to_le_bytes());
        e[40..48].copy_from_slice(&flags.to_le_bytes());
        e[56..64].copy_from_slice(&expanded.to_le_bytes());
        e.extend_from_slice(data);
        e.resize(64 + data.len().next_multiple_of(8), 0);
        e
    }

    fn fatbin(entries: &[Vec<u8>]) -> Vec<u8> {
        let body = entries.concat();
        let mut b = Vec::new();
        b.extend_from_slice(&FATBIN_MAGIC.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(&(body.len() as u64).to_le_bytes());
        b.extend_from_slice(&body);
        b
    }

    #[test]
    fn plain_and_compressed_members_are_read_and_others_skipped() {
        let ptx = b".version 7.8\n.target sm_70\n\0\0\0";
        // "\x7fELF" as 4 literals, then a match of 4 at offset 4 repeating them (token 0x40), then
        // the last sequence's one literal: 9 bytes.
        let lz4_elf = [0x40, 0x7f, b'E', b'L', b'F', 4, 0, 0x10, b'!'];
        let b = fatbin(&[entry(1, 0, 0, ptx), entry(2, FLAG_LZ4, 9, &lz4_elf), entry(8, 0, 0, b"nvvm ir"), entry(2, 0x8000, 9, b"zstd?")]);
        let found = members(&b);
        assert_eq!(found, vec![Member::Ptx(".version 7.8\n.target sm_70\n".into()), Member::Cubin(b"\x7fELF\x7fELF!".to_vec())]);
    }

    #[test]
    fn damaged_headers_end_the_walk_without_reading_past_the_image() {
        let mut b = fatbin(&[entry(1, 0, 0, b".version 7.8\n")]);
        b[16 + 8..16 + 16].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(members(&b).is_empty());
        assert!(members(&b[..10]).is_empty());
        let compressed_but_no_size = fatbin(&[entry(1, FLAG_LZ4, 0, b"x")]);
        assert!(members(&compressed_but_no_size).is_empty());
    }
}
