//! Opening the first of several candidate files of a shared library (libcuda, libnvrtc), keeping
//! why each other one failed: a file that is absent and a file the dynamic linker refused need
//! different advice, so the callers word their errors from both lists.

/// The candidates that did not open, by why.
pub struct Tried {
    /// Names the dynamic linker found nowhere, with its reason.
    pub absent: Vec<(String, String)>,
    /// Files that exist but did not load: "candidate: reason".
    pub refused: Vec<String>,
}

/// Opens the candidates in order and hands the first one that loads to `finish`.
pub fn open_first<T>(candidates: &[String], finish: impl FnOnce(libloading::Library, &str) -> T) -> Result<T, Tried> {
    let mut tried = Tried { absent: Vec::new(), refused: Vec::new() };
    for candidate in candidates {
        // SAFETY: loading a CUDA library runs its initialisers, which are designed to run in any process.
        match unsafe { libloading::Library::new(candidate) } {
            Ok(library) => return Ok(finish(library, candidate)),
            // The dynamic linker's own reason is kept: "wrong ELF class", "permission denied"...
            Err(e) => {
                let reason = linker_reason(&e);
                if exists(candidate, &reason) {
                    tried.refused.push(format!("{candidate}: {reason}"));
                } else {
                    tried.absent.push((candidate.clone(), reason));
                }
            }
        }
    }
    Err(tried)
}

/// Whether a failed candidate is a file that exists (so its load error is the interesting part)
/// rather than a name the dynamic linker found nowhere.
fn exists(candidate: &str, reason: &str) -> bool {
    if candidate.contains('/') {
        return std::path::Path::new(candidate).exists();
    }
    !reason.contains("No such file or directory")
}

/// The dynamic linker's own words (`dlerror()`), which libloading keeps as the error's source:
/// its Display alone says only "dlopen failed".
fn linker_reason(error: &libloading::Error) -> String {
    match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => error.to_string(),
    }
}
