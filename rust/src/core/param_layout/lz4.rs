//! LZ4 block decompression: nvcc stores fatbin members LZ4-compressed (the PTX by default, the
//! cubins too with `-Xfatbin=-compress-all`). Only the block format, no frames: a fatbin member is
//! one block whose uncompressed size its header gives.

/// Decompresses one LZ4 block into exactly `size` bytes; `None` if the input is malformed or does
/// not decompress to that size.
pub fn decompress_block(input: &[u8], size: usize) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(size);
    let mut at = 0;
    while at < input.len() {
        let token = input[at];
        at += 1;
        let literals = length(input, &mut at, usize::from(token >> 4))?;
        let end = at.checked_add(literals).filter(|&e| e <= input.len())?;
        if out.len() + literals > size {
            return None;
        }
        out.extend_from_slice(&input[at..end]);
        at = end;
        if at == input.len() {
            break; // the last sequence has literals only
        }
        let offset = usize::from(u16::from_le_bytes([*input.get(at)?, *input.get(at + 1)?]));
        at += 2;
        let matched = length(input, &mut at, usize::from(token & 15))?.checked_add(4)?;
        if offset == 0 || offset > out.len() || out.len() + matched > size {
            return None;
        }
        // Byte by byte: a match may overlap the bytes it produces (offset < length repeats them).
        let from = out.len() - offset;
        for i in 0..matched {
            out.push(out[from + i]);
        }
    }
    (out.len() == size).then_some(out)
}

/// A literal or match length: the token's 4 bits, and while they are 15, more bytes up to one
/// below 255.
fn length(input: &[u8], at: &mut usize, nibble: usize) -> Option<usize> {
    let mut length = nibble;
    if nibble == 15 {
        loop {
            let byte = *input.get(*at)?;
            *at += 1;
            length = length.checked_add(usize::from(byte))?;
            if byte != 255 {
                break;
            }
        }
    }
    Some(length)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_then_an_overlapping_match_repeat_the_bytes() {
        // "abc" as literals, then a match of 9 at offset 3 (token 0x35: 3 literals, 5 + 4 match
        // bytes), then the last sequence's literal "!".
        let block = [0x35, b'a', b'b', b'c', 3, 0, 0x10, b'!'];
        assert_eq!(decompress_block(&block, 13).expect("valid").as_slice(), b"abcabcabcabc!");
    }

    #[test]
    fn long_lengths_continue_in_extra_bytes() {
        // 15 + 255 + 10 = 280 literals.
        let mut block = vec![0xF0, 255, 10];
        block.extend(std::iter::repeat_n(b'x', 280));
        assert_eq!(decompress_block(&block, 280).expect("valid"), vec![b'x'; 280]);
    }

    #[test]
    fn malformed_blocks_and_wrong_sizes_are_refused() {
        assert!(decompress_block(&[0x35, b'a', b'b', b'c', 9, 0, 0x10, b'!'], 13).is_none(), "offset before the start");
        assert!(decompress_block(&[0x35, b'a', b'b', b'c', 0, 0, 0x10, b'!'], 13).is_none(), "offset 0");
        assert!(decompress_block(&[0x50, b'a'], 5).is_none(), "literals past the end");
        assert!(decompress_block(&[0x35, b'a', b'b', b'c', 3, 0, 0x10, b'!'], 12).is_none(), "more than announced");
        assert!(decompress_block(&[0x30, b'a', b'b', b'c'], 4).is_none(), "less than announced");
        assert!(decompress_block(&[0xF0, 255], 300).is_none(), "a length cut off");
    }
}
