//! The dynamic linker's cache (`/etc/ld.so.cache`, written by `ldconfig` from the folders root
//! registered in `/etc/ld.so.conf`), read so that libraries it knows are opened by their absolute
//! paths: `dlopen` of a bare name would also search `LD_LIBRARY_PATH`, whose empty entries mean
//! the current folder.
//!
//! Format (glibc's `dl-cache.h`, the "new" format every glibc since 2.32 writes alone and older
//! ones after the old format): the 20-byte magic `glibc-ld.so.cache1.1`, `nlibs` u32,
//! `len_strings` u32, flags, padding and an extension offset up to byte 48, then `nlibs` entries
//! of 24 bytes {flags i32, key u32, value u32, osversion u32, hwcap u64}; key and value are
//! offsets of NUL-terminated strings (the library's name and its path) from the new header's start.

const CACHE_FILE: &str = "/etc/ld.so.cache";
const OLD_MAGIC: &[u8] = b"ld.so-1.7.0";
const NEW_MAGIC: &[u8] = b"glibc-ld.so.cache1.1";
const NEW_HEADER_BYTES: usize = 48;
const NEW_ENTRY_BYTES: usize = 24;
const OLD_ENTRY_BYTES: usize = 12;
/// A cache larger than this is not read (a real one holds a few thousand entries in under 1 MiB).
const MAX_CACHE_BYTES: u64 = 16 << 20;

/// `FLAG_ELF_LIBC6` with the architecture flag this process needs (`FLAG_X8664_LIB64`,
/// `FLAG_AARCH64_LIB64`): entries of other architectures would only fail to load.
#[cfg(target_arch = "x86_64")]
const WANTED_FLAGS: u32 = 0x0303;
#[cfg(target_arch = "aarch64")]
const WANTED_FLAGS: u32 = 0x0a03;
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const WANTED_FLAGS: u32 = 0x0003;

/// The cache file's bytes, read once for a whole search (every name is looked up in the same
/// read); empty where the file is missing or unreadable.
pub struct Cache(Vec<u8>);

impl Cache {
    pub fn read() -> Cache {
        use std::io::Read;
        let mut bytes = Vec::new();
        let read = std::fs::File::open(CACHE_FILE).and_then(|file| file.take(MAX_CACHE_BYTES).read_to_end(&mut bytes));
        Cache(if read.is_ok() { bytes } else { Vec::new() })
    }

    /// The absolute paths the cache records for `name` (e.g. `libcuda.so.1`), in the cache's order.
    pub fn paths_of(&self, name: &str) -> Vec<String> {
        lookup(&self.0, name)
    }
}

/// The paths recorded for `name` in a cache file's bytes; nothing for a file of another format.
pub fn lookup(cache: &[u8], name: &str) -> Vec<String> {
    let Some(start) = new_format_start(cache) else { return Vec::new() };
    let new = &cache[start..];
    let u32_at = |at: usize| new.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]));
    let string_at = |offset: u32| {
        let tail = new.get(offset as usize..)?;
        let end = tail.iter().position(|&c| c == 0)?;
        std::str::from_utf8(&tail[..end]).ok()
    };
    let Some(count) = u32_at(NEW_MAGIC.len()) else { return Vec::new() };
    let mut paths = Vec::new();
    for i in 0..count as usize {
        let at = NEW_HEADER_BYTES + i * NEW_ENTRY_BYTES;
        let (Some(flags), Some(key), Some(value)) = (u32_at(at), u32_at(at + 4), u32_at(at + 8)) else { break };
        if flags & 0xFFFF != WANTED_FLAGS || string_at(key) != Some(name) {
            continue;
        }
        if let Some(path) = string_at(value).filter(|p| p.starts_with('/')) {
            paths.push(path.to_string());
        }
    }
    paths
}

/// Where the new-format header begins: at 0, or after the old format's entries (aligned to 8).
fn new_format_start(cache: &[u8]) -> Option<usize> {
    if cache.starts_with(NEW_MAGIC) {
        return Some(0);
    }
    if !cache.starts_with(OLD_MAGIC) {
        return None;
    }
    let at = OLD_MAGIC.len() + 1; // the magic is followed by its padding to 12 bytes
    let count = cache.get(at..at + 4).map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))? as usize;
    let start = (at + 4).checked_add(count.checked_mul(OLD_ENTRY_BYTES)?)?.checked_add(7)? & !7;
    cache.get(start..)?.starts_with(NEW_MAGIC).then_some(start)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A new-format cache with the given (flags, name, path) entries.
    fn cache(entries: &[(u32, &str, &str)]) -> Vec<u8> {
        let strings_at = NEW_HEADER_BYTES + entries.len() * NEW_ENTRY_BYTES;
        let mut strings = Vec::new();
        let mut b = NEW_MAGIC.to_vec();
        b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
        b.resize(NEW_HEADER_BYTES, 0);
        for (flags, name, path) in entries {
            let key = strings_at + strings.len();
            strings.extend_from_slice(name.as_bytes());
            strings.push(0);
            let value = strings_at + strings.len();
            strings.extend_from_slice(path.as_bytes());
            strings.push(0);
            b.extend_from_slice(&flags.to_le_bytes());
            b.extend_from_slice(&(key as u32).to_le_bytes());
            b.extend_from_slice(&(value as u32).to_le_bytes());
            b.extend_from_slice(&[0u8; 12]);
        }
        b.extend_from_slice(&strings);
        b
    }

    #[test]
    fn a_name_gives_the_absolute_paths_of_this_architecture() {
        let c = cache(&[
            (WANTED_FLAGS, "libcuda.so.1", "/usr/lib/x86_64-linux-gnu/libcuda.so.1"),
            (0x0003, "libcuda.so.1", "/usr/lib/i386-linux-gnu/libcuda.so.1"),
            (WANTED_FLAGS, "libcudart.so", "/usr/lib/libcudart.so"),
            (WANTED_FLAGS, "libcuda.so.1", "relative/libcuda.so.1"),
            (WANTED_FLAGS, "libcuda.so.1", "/opt/nvidia/libcuda.so.1"),
        ]);
        assert_eq!(lookup(&c, "libcuda.so.1"), ["/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/opt/nvidia/libcuda.so.1"]);
        assert_eq!(lookup(&c, "libnvrtc.so"), Vec::<String>::new());
    }

    #[test]
    fn damaged_or_foreign_caches_give_nothing_and_never_panic() {
        let c = cache(&[(WANTED_FLAGS, "libcuda.so.1", "/usr/lib/libcuda.so.1")]);
        for cut in 0..c.len() {
            let _ = lookup(&c[..cut], "libcuda.so.1");
        }
        let mut huge_count = c.clone();
        huge_count[20..24].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(lookup(&huge_count, "libcuda.so.1"), ["/usr/lib/libcuda.so.1"]);
        assert!(lookup(b"not a cache at all", "libcuda.so.1").is_empty());
    }

    #[test]
    fn the_old_format_is_skipped_to_the_new_one_after_it() {
        let mut b = OLD_MAGIC.to_vec();
        b.push(0);
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&[0u8; OLD_ENTRY_BYTES]);
        b.resize((b.len() + 7) & !7, 0);
        b.extend_from_slice(&cache(&[(WANTED_FLAGS, "libnvrtc.so", "/opt/cuda/lib64/libnvrtc.so")]));
        assert_eq!(lookup(&b, "libnvrtc.so"), ["/opt/cuda/lib64/libnvrtc.so"]);
    }

    #[test]
    fn this_machines_cache_is_read() {
        // Every glibc system has a cache that knows libc itself.
        if std::path::Path::new(CACHE_FILE).exists() {
            assert!(Cache::read().paths_of("libc.so.6").iter().all(|p| p.starts_with('/')));
        }
    }
}
