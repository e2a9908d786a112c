//! NVRTC's companion `libnvrtc-builtins.so.X.Y`, which libnvrtc `dlopen`s by bare name at its
//! first compilation. A bare name is searched through `LD_LIBRARY_PATH` first, where an empty or
//! relative entry means the working directory: a planted copy there would run in this process.
//! So it is loaded here first, by absolute path, from the folder of the libnvrtc that was loaded;
//! the dynamic linker then finds it already loaded under its soname and searches nothing
//! (docs/security.md).

use std::path::Path;

/// The file name libnvrtc `X.Y` asks for (its soname): `libnvrtc-builtins.so.11.8`.
pub fn file_name(version: (i32, i32)) -> String {
    format!("libnvrtc-builtins.so.{}.{}", version.0, version.1)
}

/// Loads the builtins beside `nvrtc_path` (the file that was mapped), or says why not; the
/// library is kept loaded for the process (NVRTC uses it at every compilation).
pub fn preload(nvrtc_path: &str, version: (i32, i32)) -> Result<libloading::Library, String> {
    let folder = Path::new(nvrtc_path).parent().ok_or_else(|| format!("{nvrtc_path} has no folder"))?;
    let file = folder.join(file_name(version));
    if !file.is_absolute() || !file.exists() {
        return Err(format!("{} does not exist", file.display()));
    }
    // SAFETY: loading runs the library's initialisers. This is NVRTC's own companion, from the
    // folder of the libnvrtc this process already chose to load and run, named by an absolute
    // path; libnvrtc would load the same file itself at its first compilation.
    unsafe { libloading::Library::new(&file) }.map_err(|e| format!("{}: {e}", file.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_name_is_the_soname_libnvrtc_asks_for() {
        assert_eq!(file_name((11, 8)), "libnvrtc-builtins.so.11.8");
        assert_eq!(file_name((13, 0)), "libnvrtc-builtins.so.13.0");
    }

    #[test]
    fn a_folder_without_builtins_is_an_error_naming_the_file() {
        let err = preload("/nonexistent/libnvrtc.so.12", (12, 4)).expect_err("absent");
        assert_eq!(err, "/nonexistent/libnvrtc-builtins.so.12.4 does not exist");
    }
}
