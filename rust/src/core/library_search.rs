//! Where libcuda and libnvrtc are looked for when no path is configured. Every candidate is an
//! absolute path: `dlopen` of a bare name searches `LD_LIBRARY_PATH` first, whose empty entries
//! (`":/usr/local/cuda/lib64"`, a trailing `:`) and relative ones mean the current folder, so a
//! `libcuda.so.1` dropped into the working directory would run its constructors in the process.
//!
//! For each file name, in the caller's order of preference: the platform's well-known folders,
//! then the absolute entries of `LD_LIBRARY_PATH` (the others are ignored with one warning),
//! then the paths the dynamic linker's cache (`ldconfig`) records for the name.

use crate::core::error::{CUDA_ERROR_FILE_NOT_FOUND, CUDA_ERROR_SHARED_OBJECT_INIT_FAILED};
use crate::core::ld_so_cache;
use crate::core::shared_library::Tried;
use std::sync::atomic::{AtomicBool, Ordering};

/// Candidates that exist, without duplicates, for `names` (preferred first) in `folders` (searched
/// first), `LD_LIBRARY_PATH` and the linker's cache.
pub fn candidates(names: &[&str], folders: &[String]) -> Vec<String> {
    let from_env = std::env::var("LD_LIBRARY_PATH").unwrap_or_default();
    let (searched, _) = ld_library_path(&from_env);
    let cache = ld_so_cache::Cache::read();
    candidates_in(names, folders, &searched, |name| cache.paths_of(name))
}

/// As [`candidates`], with the environment's folders and the cache given (for tests).
pub fn candidates_in(names: &[&str], folders: &[String], env_folders: &[String], cache: impl Fn(&str) -> Vec<String>) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for name in names {
        let in_folders = folders.iter().chain(env_folders).map(|folder| format!("{}/{name}", folder.trim_end_matches('/')));
        for path in in_folders.chain(cache(name)) {
            if std::path::Path::new(&path).exists() && !found.contains(&path) {
                found.push(path);
            }
        }
    }
    found
}

/// `LD_LIBRARY_PATH`'s absolute entries, and the entries that are not (empty ones included),
/// which the dynamic linker would resolve against the current folder. glibc splits at `:` and `;`.
pub fn ld_library_path(value: &str) -> (Vec<String>, Vec<String>) {
    if value.is_empty() {
        return (Vec::new(), Vec::new());
    }
    value.split([':', ';']).map(str::to_string).partition(|entry| entry.starts_with('/'))
}

/// A description of the places searched, for "not found" messages.
pub fn searched_places(folders: &[String]) -> String {
    let (env, _) = ld_library_path(&std::env::var("LD_LIBRARY_PATH").unwrap_or_default());
    let mut places = folders.to_vec();
    places.extend(env.iter().map(|f| format!("{f} (LD_LIBRARY_PATH)")));
    places.push("the dynamic linker's cache (ldconfig)".to_string());
    places.join(", ")
}

/// How the failure of one library's search is worded (see [`failure`]).
pub struct Wording<'a> {
    /// The library as messages name it: `libcuda`, `libnvrtc`.
    pub library: &'a str,
    /// The sentence for "no file found": `libcuda was not found (is the NVIDIA driver installed?)`.
    pub not_found: &'a str,
    /// The file names the default search looks for, preferred first.
    pub names: &'a [&'a str],
    /// What every message ends with: how to choose or install the library.
    pub advice: &'a str,
}

/// The `CUresult` and message for a search in which no candidate gave a usable library (`tried`,
/// from `shared_library::open_first`). A library that loaded but was not usable comes first, with
/// its own code and words, then files the dynamic linker refused, then files that are absent.
/// `searched` describes the default search, for the message when it found no file at all (`None`:
/// the candidates are what was configured).
pub fn failure(wording: &Wording, tried: Tried<(i32, String)>, candidates: &[String], searched: Option<&str>) -> (i32, String) {
    let Wording { library, not_found, names, advice } = wording;
    let absent: Vec<String> = tried.absent.iter().map(|(candidate, reason)| format!("{candidate} ({reason})")).collect();
    let also = |others: Vec<String>| if others.is_empty() { String::new() } else { format!("; also tried: {}", others.join("; ")) };
    if let Some((code, message)) = tried.unusable.first() {
        let others = tried.unusable[1..].iter().map(|(_, m)| m.clone()).chain(tried.refused.iter().cloned()).chain(absent).collect();
        return (*code, format!("{message}{}. {advice}", also(others)));
    }
    if !tried.refused.is_empty() {
        return (
            CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
            format!("{library} exists but could not be loaded: {}{}. {advice}", tried.refused.join("; "), also(absent)),
        );
    }
    let what = match searched {
        Some(places) if candidates.is_empty() => format!("no {} in {places}", names.join(" or ")),
        _ => absent.join("; "),
    };
    (CUDA_ERROR_FILE_NOT_FOUND, format!("{not_found}; tried: {what}. {advice}"))
}

static WARNED: AtomicBool = AtomicBool::new(false);

/// Warns once per process, whatever library paths are configured, when `LD_LIBRARY_PATH` has
/// entries the dynamic linker resolves against the current folder: cuhandle opens libcuda and
/// libnvrtc by absolute path, and NVRTC's builtins too, but libcuda loads helpers of its own by
/// bare name (`libnvidia-ptxjitcompiler.so.1` when it compiles PTX), and those searches go
/// through such entries. Called by every load of libcuda and libnvrtc.
pub fn warn_once_about_ld_library_path() {
    let (_, ignored) = ld_library_path(&std::env::var("LD_LIBRARY_PATH").unwrap_or_default());
    if let Some(text) = unsafe_entries_warning(&ignored) {
        if !WARNED.swap(true, Ordering::Relaxed) {
            log::warn!("{text}");
        }
    }
}

/// The warning for `LD_LIBRARY_PATH`'s entries that are not absolute, or None when there are none.
pub fn unsafe_entries_warning(ignored: &[String]) -> Option<String> {
    if ignored.is_empty() {
        return None;
    }
    let shown: Vec<String> = ignored.iter().map(|e| if e.is_empty() { "an empty entry".to_string() } else { format!("'{e}'") }).collect();
    Some(format!(
        "LD_LIBRARY_PATH has {} that the dynamic linker resolves against the current folder. cuhandle opens libcuda, libnvrtc \
         and NVRTC's builtins by absolute path and never looks there, but libcuda loads helpers of its own by name (such as \
         libnvidia-ptxjitcompiler.so.1 when it compiles PTX), and the dynamic linker searches the current folder for them: a \
         library planted in the working directory would run in this process. Remove the entry (see docs/security.md)",
        shown.join(" and ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_and_relative_ld_library_path_entries_are_set_apart() {
        let (searched, ignored) = ld_library_path(":/usr/local/cuda/lib64::lib;/opt/x/");
        assert_eq!(searched, ["/usr/local/cuda/lib64", "/opt/x/"]);
        assert_eq!(ignored, ["", "", "lib"]);
        assert_eq!(ld_library_path(""), (Vec::new(), Vec::new()));
        assert_eq!(ld_library_path("/a:").1, [""], "a trailing colon is the current folder too");
    }

    #[test]
    fn the_warning_names_each_unsafe_entry_and_the_helpers_libcuda_loads_by_name() {
        assert_eq!(unsafe_entries_warning(&[]), None);
        let text = unsafe_entries_warning(&["".to_string(), "lib".to_string()]).expect("a warning");
        assert!(text.starts_with("LD_LIBRARY_PATH has an empty entry and 'lib' that"), "{text}");
        assert!(text.contains("libnvidia-ptxjitcompiler.so.1") && text.contains("Remove the entry"), "{text}");
    }

    #[test]
    fn a_failed_search_names_the_unusable_library_first_then_refused_then_absent_files() {
        let tried = Tried {
            absent: vec![("/a/libx.so".to_string(), "no such file".to_string())],
            refused: vec!["/b/libx.so: invalid ELF header".to_string()],
            unusable: vec![(302, "/c/libx.so lacks xInit".to_string()), (303, "/d/libx.so is too old".to_string())],
        };
        let wording =
            Wording { library: "libx", not_found: "libx was not found", names: &["libx.so.1", "libx.so"], advice: "Install libx" };
        let (code, message) = failure(&wording, tried, &[], None);
        assert_eq!(code, 302);
        assert_eq!(message, "/c/libx.so lacks xInit; also tried: /d/libx.so is too old; /b/libx.so: invalid ELF header; /a/libx.so (no such file). Install libx");
        let none = Tried { absent: Vec::new(), refused: Vec::new(), unusable: Vec::new() };
        assert_eq!(
            failure(&wording, none, &[], Some("/opt")),
            (CUDA_ERROR_FILE_NOT_FOUND, "libx was not found; tried: no libx.so.1 or libx.so in /opt. Install libx".to_string())
        );
    }

    /// Issue 26 (4): with `LD_LIBRARY_PATH=":/usr/local/cuda/lib64"` a `libcuda.so.1` in the
    /// current folder was loaded; no candidate is relative now, and well-known folders come first.
    #[test]
    fn candidates_are_absolute_well_known_first_and_exist() {
        let dir = std::env::temp_dir().join(format!("cuhandle-search-test-{}", std::process::id()));
        let (known, env) = (dir.join("known"), dir.join("env"));
        std::fs::create_dir_all(&known).expect("folder");
        std::fs::create_dir_all(&env).expect("folder");
        for f in [known.join("libx.so.1"), env.join("libx.so.1"), env.join("libx.so")] {
            std::fs::write(f, b"").expect("file");
        }
        let s = |p: &std::path::Path| p.display().to_string();
        let cached = s(&env.join("libx.so"));
        let found = candidates_in(&["libx.so.1", "libx.so"], &[s(&known), "/nonexistent".into()], &[s(&env)], |name| {
            if name == "libx.so" {
                vec![cached.clone(), "/nonexistent/libx.so".into()]
            } else {
                Vec::new()
            }
        });
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(found, [s(&known.join("libx.so.1")), s(&env.join("libx.so.1")), s(&env.join("libx.so"))]);
        assert!(found.iter().all(|p| p.starts_with('/')));
    }
}
