//! Opening the first usable one of several candidate files of a shared library (libcuda,
//! libnvrtc), keeping why each other one failed: a file that is absent, a file the dynamic linker
//! refused and a library that loaded but is not the one wanted need different advice, so the
//! callers word their errors from the three lists.

/// The candidates that did not give a usable library, by why.
pub struct Tried<E> {
    /// Files that do not exist, with the dynamic linker's reason.
    pub absent: Vec<(String, String)>,
    /// Files that exist but did not load: "candidate: reason".
    pub refused: Vec<String>,
    /// Libraries that loaded but were not usable (no driver's entry points, too old...), with
    /// what `finish` said of each, in the order tried.
    pub unusable: Vec<E>,
}

/// Opens the candidates in order and hands each one that loads to `finish`, until `finish`
/// accepts one: a library that loads but lacks what is needed does not end the search.
/// Candidates must be absolute paths (a bare name would make the dynamic linker search
/// `LD_LIBRARY_PATH`, see `library_search`); any other is refused unopened.
pub fn open_first<T, E>(candidates: &[String], mut finish: impl FnMut(libloading::Library, &str) -> Result<T, E>) -> Result<T, Tried<E>> {
    let mut tried = Tried { absent: Vec::new(), refused: Vec::new(), unusable: Vec::new() };
    for candidate in candidates {
        if !candidate.starts_with('/') {
            tried.refused.push(format!("{candidate}: not an absolute path"));
            continue;
        }
        // SAFETY: loading a CUDA library runs its initialisers, which are designed to run in any
        // process; every candidate is an absolute path the caller chose (trusted configuration
        // or a system folder), never one the dynamic linker searches for.
        match unsafe { libloading::Library::new(candidate) } {
            Ok(library) => match finish(library, candidate) {
                Ok(done) => return Ok(done),
                Err(why) => tried.unusable.push(why),
            },
            // The dynamic linker's own reason is kept: "wrong ELF class", "permission denied"...
            Err(e) => {
                let reason = linker_reason(&e);
                if std::path::Path::new(candidate).exists() {
                    tried.refused.push(format!("{candidate}: {reason}"));
                } else {
                    tried.absent.push((candidate.clone(), reason));
                }
            }
        }
    }
    Err(tried)
}

/// The dynamic linker's own words (`dlerror()`), which libloading keeps as the error's source:
/// its Display alone says only "dlopen failed".
fn linker_reason(error: &libloading::Error) -> String {
    match std::error::Error::source(error) {
        Some(source) => source.to_string(),
        None => error.to_string(),
    }
}
