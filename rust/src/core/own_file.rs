//! Reading a file that must be this process's user's own, such as an entry of the compile cache
//! (code the process will run): the file is opened without following a link (`O_NOFOLLOW`) and
//! without blocking on a FIFO (`O_NONBLOCK`), and every check is made on the opened file itself
//! (`fstat`), so a name swapped between a check and the open cannot slip another file in
//! (docs/design.md, rule F1).

use std::io::Read;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};

/// Why a file was not read.
#[derive(Debug, PartialEq, Eq)]
pub enum Refusal {
    /// No file of that name.
    Absent,
    /// The file is not one this process may trust, or reading it failed; the text says which,
    /// about "it" (the caller names the file).
    Refused(String),
}

const S_IFMT: u32 = 0o170000;
const S_IFREG: u32 = 0o100000;
const GROUP_OR_OTHER_WRITE: u32 = 0o022;

/// The bytes of `path` if, as opened, it is a regular file (not a link: the open refuses one),
/// owned by `uid`, not writable by group or others, with one name (`nlink == 1`: no hard link made
/// elsewhere shares it), and of more than `min_bytes` and at most `max_bytes` bytes, checked
/// before anything is allocated for it.
pub fn read_own_file(path: &str, uid: u32, min_bytes: u64, max_bytes: u64) -> Result<Vec<u8>, Refusal> {
    let mut file = match std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(Refusal::Absent),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Err(Refusal::Refused("it is a symbolic link".to_string())),
        Err(e) => return Err(Refusal::Refused(format!("opening it failed: {e}"))),
    };
    let m = file.metadata().map_err(|e| Refusal::Refused(format!("fstat failed: {e}")))?;
    if m.mode() & S_IFMT != S_IFREG {
        return Err(Refusal::Refused(format!("it is not a regular file (mode {:o})", m.mode())));
    }
    if m.uid() != uid {
        return Err(Refusal::Refused(format!("it is owned by user {}, not by this process's user {uid}", m.uid())));
    }
    if m.mode() & GROUP_OR_OTHER_WRITE != 0 {
        return Err(Refusal::Refused(format!("it is writable by group or others (mode {:o})", m.mode() & 0o7777)));
    }
    if m.nlink() != 1 {
        return Err(Refusal::Refused(format!("it has {} names (hard links); an entry has one", m.nlink())));
    }
    if m.size() <= min_bytes || m.size() > max_bytes {
        return Err(Refusal::Refused(format!("it has {} bytes; an entry has more than {min_bytes} and at most {max_bytes}", m.size())));
    }
    let mut bytes = Vec::with_capacity(m.size() as usize);
    // One byte more than the size read: a file that grew since the fstat is not the file checked.
    file.by_ref().take(m.size() + 1).read_to_end(&mut bytes).map_err(|e| Refusal::Refused(format!("reading it failed: {e}")))?;
    if bytes.len() as u64 != m.size() {
        return Err(Refusal::Refused(format!("it changed size while it was read ({} -> {} bytes)", m.size(), bytes.len())));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn folder(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("cuhandle-own-file-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("folder");
        dir
    }

    fn me(dir: &std::path::Path) -> u32 {
        std::fs::metadata(dir).expect("folder").uid()
    }

    #[test]
    fn a_sound_file_is_read_whole() {
        let dir = folder("sound");
        let f = dir.join("entry");
        std::fs::write(&f, b"0123456789").expect("file");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let got = read_own_file(f.to_str().expect("utf-8"), me(&dir), 4, 64);
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(got, Ok(b"0123456789".to_vec()));
    }

    #[test]
    fn links_hard_links_open_modes_other_owners_and_sizes_are_refused() {
        let dir = folder("refused");
        let uid = me(&dir);
        let s = |p: &std::path::Path| p.to_str().expect("utf-8").to_string();
        let f = dir.join("entry");
        std::fs::write(&f, b"0123456789").expect("file");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let link = dir.join("link");
        std::os::unix::fs::symlink(&f, &link).expect("symlink");
        let refused = |r: Result<Vec<u8>, Refusal>, what: &str| match r {
            Err(Refusal::Refused(m)) => assert!(m.contains(what), "{m} should say {what}"),
            other => panic!("expected a refusal saying {what}, got {other:?}"),
        };
        refused(read_own_file(&s(&link), uid, 4, 64), "symbolic link");
        refused(read_own_file(&s(&f), uid.wrapping_add(1), 4, 64), "owned by user");
        refused(read_own_file(&s(&f), uid, 10, 64), "has 10 bytes");
        refused(read_own_file(&s(&f), uid, 4, 9), "has 10 bytes");
        refused(read_own_file(&s(&dir), uid, 4, 64), "not a regular file");
        let hard = dir.join("hard");
        std::fs::hard_link(&f, &hard).expect("hard link");
        refused(read_own_file(&s(&f), uid, 4, 64), "2 names");
        std::fs::remove_file(&hard).expect("unlink");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o620)).expect("chmod");
        refused(read_own_file(&s(&f), uid, 4, 64), "writable by group or others");
        assert_eq!(read_own_file(&s(&dir.join("absent")), uid, 4, 64), Err(Refusal::Absent));
        std::fs::remove_dir_all(&dir).ok();
    }
}
