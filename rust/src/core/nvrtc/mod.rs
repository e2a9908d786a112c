//! Run-time compilation of CUDA C++ with NVRTC, loaded on first use (optional: without libnvrtc
//! only compilation fails, with an error that lists what was tried and how to install it).

mod api;
mod builtins;
mod compile_gate;
mod program;
mod target;

pub use program::{Outcome, Request};
pub use target::{Output, Target};

use crate::core::configured_path::ConfiguredPath;
use crate::core::driver::{library_stem, mapped_path_of};
use crate::core::error::{
    CudaFailure, Error, Result, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
};
use crate::core::library_search;
use crate::core::shared_library;
use api::NvrtcApi;
use compile_gate::CompileGate;
use std::sync::OnceLock;
use std::time::Duration;

/// Environment variable naming the libnvrtc file to load (the Java property
/// `cuhandle.nvrtc.path` takes precedence and is handed over by [`set_path`]).
pub const NVRTC_PATH_ENV: &str = "CUHANDLE_NVRTC_PATH";

/// File names of NVRTC, newest first: CUDA 13 and 12 toolkits install `libnvrtc.so.13`/`.12`;
/// Debian's 11.8 package has `.so.11.2`.
const NAMES: &[&str] = &["libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so", "libnvrtc.so.11.2"];
/// Folders where toolkits put NVRTC (searched first; `/usr/local/cuda-X.Y/lib64` come between
/// the two, newest first), then LD_LIBRARY_PATH's absolute entries and the linker's cache.
const FOLDERS: &[&str] = &["/usr/local/cuda/lib64", "/usr/lib/x86_64-linux-gnu"];

const OPERATION: &str = "loading NVRTC (libnvrtc, for run-time compilation)";
const INSTALL: &str = "install the CUDA toolkit's NVRTC (Debian/Ubuntu: nvidia-cuda-toolkit; NVIDIA's repositories: cuda-nvrtc-12-x or cuda-nvrtc-13-x) or set -Dcuhandle.nvrtc.path=/path/to/libnvrtc.so (or CUHANDLE_NVRTC_PATH)";

/// The loaded NVRTC with its resolved entry points.
pub struct Nvrtc {
    api: NvrtcApi,
    /// The file that was loaded (as the dynamic linker mapped it, when that can be read).
    pub path: String,
    /// `nvrtcVersion`, e.g. (11, 8).
    pub version: (i32, i32),
    /// `nvrtcGetSupportedArchs`, ascending: 10 * major + minor, e.g. 90 for sm_90.
    pub architectures: Vec<i32>,
    /// NVRTC's `libnvrtc-builtins`, loaded by absolute path before NVRTC asks for it by name.
    _builtins: Option<libloading::Library>,
    // Never unloaded: the function pointers in `api` point into it.
    _library: libloading::Library,
}

static CONFIGURED_PATH: ConfiguredPath = ConfiguredPath::new("cuhandle.nvrtc.path", NVRTC_PATH_ENV);
static LOADED: OnceLock<std::result::Result<Nvrtc, CudaFailure>> = OnceLock::new();
/// NVRTC 11.x compilations take turns (NVRTC documents concurrent use of distinct programs only
/// from CUDA 12 on); 12 and later compile concurrently, so one slow compile delays no other.
static TURNS: CompileGate = CompileGate::new();
/// How long an NVRTC 11.x compilation waits for its turn before it fails with a timeout.
const TURN_WAIT: Duration = Duration::from_secs(300);

/// Sets the libnvrtc file to load. Only effective before the first NVRTC use.
pub fn set_path(path: Option<String>) {
    CONFIGURED_PATH.set(path);
}

/// NVRTC, loaded on first use; the outcome (either way) is kept for the process.
pub fn loaded() -> Result<&'static Nvrtc> {
    LOADED
        .get_or_init(|| match CONFIGURED_PATH.get() {
            Ok(Some(path)) => load_from(&[path], None),
            Ok(None) => {
                let folders = folders();
                load_from(&default_candidates(&folders), Some(&library_search::searched_places(&folders)))
            }
            Err(message) => Err(CudaFailure::new(CUDA_ERROR_INVALID_VALUE, OPERATION, message)),
        })
        .as_ref()
        .map_err(|f| Error::Cuda(f.clone()))
}

/// The usual folders, CUDA installations newest first (`/usr/local/cuda-13.0` before
/// `/usr/local/cuda-12.4`).
fn folders() -> Vec<String> {
    let mut folders: Vec<String> = vec![FOLDERS[0].to_string()];
    let mut versioned: Vec<String> = std::fs::read_dir("/usr/local")
        .map(|entries| {
            entries
                .filter_map(|e| e.ok()?.file_name().into_string().ok())
                .filter(|n| n.starts_with("cuda-1"))
                .map(|n| format!("/usr/local/{n}/lib64"))
                .collect()
        })
        .unwrap_or_default();
    versioned.sort_by_key(|f| std::cmp::Reverse(version_key(f)));
    folders.extend(versioned);
    folders.extend(FOLDERS[1..].iter().map(|s| s.to_string()));
    folders
}

/// Absolute paths only: the names in `folders`, LD_LIBRARY_PATH and the linker's cache (see
/// `library_search`), then every other `libnvrtc.so*` (not the builtins) in `folders`.
fn default_candidates(folders: &[String]) -> Vec<String> {
    let mut candidates = library_search::candidates(NAMES, folders);
    for folder in folders {
        let Ok(entries) = std::fs::read_dir(folder) else { continue };
        let mut files: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.starts_with("libnvrtc.so"))
            .map(|n| format!("{folder}/{n}"))
            .filter(|path| !candidates.contains(path))
            .collect();
        files.sort_by_key(|f| std::cmp::Reverse(version_key(f)));
        candidates.extend(files);
    }
    candidates
}

/// (13, 0) for "/usr/local/cuda-13.0/lib64", (11, 8, 89) for ".../libnvrtc.so.11.8.89": the
/// numbers of a name in order, for sorting newest first.
fn version_key(name: &str) -> Vec<u32> {
    name.split(|c: char| !c.is_ascii_digit()).filter(|s| !s.is_empty()).filter_map(|s| s.parse().ok()).collect()
}

/// Loads the first candidate that is a usable NVRTC. `searched` describes the default search, for
/// the message when it found no file at all (None: the candidates are what was configured).
fn load_from(candidates: &[String], searched: Option<&str>) -> std::result::Result<Nvrtc, CudaFailure> {
    library_search::warn_once_about_ld_library_path();
    shared_library::open_first(candidates, finish_load).map_err(|tried| {
        let advice = format!("To compile CUDA source at run time, {INSTALL}");
        let wording =
            library_search::Wording { library: "libnvrtc", not_found: "NVRTC (libnvrtc) was not found", names: NAMES, advice: &advice };
        let (code, message) = library_search::failure(&wording, tried, candidates, searched);
        CudaFailure::new(code, OPERATION, message)
    })
}

fn finish_load(library: libloading::Library, candidate: &str) -> std::result::Result<Nvrtc, (i32, String)> {
    let path = mapped_path_of(&library_stem(candidate)).unwrap_or_else(|| candidate.to_string());
    let api = NvrtcApi::resolve(&library).map_err(|symbol| {
        (
            CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
            format!(
                "{path} lacks the NVRTC entry point {symbol}: it is not NVRTC, or one older than CUDA 11.2 (cuhandle needs 11.2 or newer)"
            ),
        )
    })?;
    let (mut major, mut minor, mut count) = (0, 0, 0);
    // SAFETY: out-pointers are valid locals; these calls need no other NVRTC state.
    let rc = unsafe { ((api.nvrtcVersion)(&mut major, &mut minor), (api.nvrtcGetNumSupportedArchs)(&mut count)) };
    if rc != (api::NVRTC_SUCCESS, api::NVRTC_SUCCESS) || count <= 0 {
        return Err((
            CUDA_ERROR_SHARED_OBJECT_INIT_FAILED,
            format!("{path}: nvrtcVersion/nvrtcGetNumSupportedArchs failed ({rc:?}, {count} architectures)"),
        ));
    }
    let mut architectures = vec![0; count as usize];
    // SAFETY: the array holds the `count` entries NVRTC just announced.
    let rc = unsafe { (api.nvrtcGetSupportedArchs)(architectures.as_mut_ptr()) };
    if rc != api::NVRTC_SUCCESS {
        return Err((CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, format!("{path}: nvrtcGetSupportedArchs failed with nvrtcResult {rc}")));
    }
    architectures.sort_unstable();
    log::debug!("loaded NVRTC {major}.{minor} from {path}; architectures {architectures:?}");
    let builtins = match builtins::preload(&path, (major, minor)) {
        Ok(b) => Some(b),
        Err(why) => {
            log::warn!(
                "NVRTC's {} was not loaded from NVRTC's folder ({why}); NVRTC will look for it by name at its first compilation, through \
                 LD_LIBRARY_PATH and the linker's cache (see docs/security.md)",
                builtins::file_name((major, minor))
            );
            None
        }
    };
    Ok(Nvrtc { api, path, version: (major, minor), architectures, _builtins: builtins, _library: library })
}

impl Nvrtc {
    /// "11.8".
    pub fn version_string(&self) -> String {
        format!("{}.{}", self.version.0, self.version.1)
    }

    /// The architecture to compile for: `architecture` when the caller names one (it must be one
    /// this NVRTC supports), else the one for devices of `capabilities` (see
    /// [`target::for_devices`]).
    pub fn target(&self, architecture: Option<&str>, capabilities: &[i32], ptx: bool) -> Result<Target> {
        match architecture {
            Some(name) => target::explicit(name, &self.architectures, &self.version_string()),
            None => target::for_devices(capabilities, &self.architectures, ptx, &self.version_string()),
        }
    }

    /// Compiles `request` for `target`: concurrently with other compilations on NVRTC 12+, else
    /// one at a time in the process (waiting at most [`TURN_WAIT`] for the turn).
    pub fn compile(&self, request: &Request, target: &Target) -> Result<Outcome> {
        let _turn = match compile_gate::needs_turns(self.version.0) {
            true => Some(TURNS.enter_or_fail(TURN_WAIT, &self.version_string())?),
            false => None,
        };
        let outcome = program::compile(&self.api, request, target)?;
        if let Outcome::Compiled { log, .. } = &outcome {
            if !log.is_empty() {
                // Prefixed and escaped: the log quotes the source (`#line` names), which could forge records.
                let log = crate::core::log_text::quoted_lines(log, "  nvrtc| ");
                log::info!(
                    "NVRTC compiled {} for {} with messages:\n{log}",
                    crate::core::log_text::escaped(&request.program_name),
                    target.name()
                );
            }
        }
        Ok(outcome)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::CUDA_ERROR_FILE_NOT_FOUND;

    /// This machine's NVRTC, or None (then the tests that need it say so and pass: NVRTC is
    /// optional; CI's machines have Debian's 11.8).
    fn nvrtc() -> Option<&'static Nvrtc> {
        match loaded() {
            Ok(n) => Some(n),
            Err(e) => {
                eprintln!("NVRTC-dependent test skipped: {e}");
                None
            }
        }
    }

    const SAXPY: &str = r#"
#include "scale.h"
extern "C" __global__ void KERNEL_NAME(float a, const float* x, float* y, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = SCALE * a * x[i] + y[i];
}
"#;

    fn request(options: &[&str]) -> Request {
        Request {
            source: SAXPY.to_string(),
            program_name: "saxpy.cu".to_string(),
            headers: vec![("scale.h".to_string(), "#define SCALE 3.0f\n".to_string())],
            options: options.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_missing_nvrtc_is_an_error_listing_the_paths_and_how_to_install() {
        let err = Error::Cuda(
            load_from(&["/nonexistent/libnvrtc.so".to_string(), "/not/here/libnvrtc.so.99".to_string()], None).err().expect("absent"),
        );
        assert_eq!(err.cuda_code(), Some(CUDA_ERROR_FILE_NOT_FOUND));
        let text = err.to_string();
        assert!(text.contains("/nonexistent/libnvrtc.so") && text.contains("/not/here/libnvrtc.so.99"), "{text}");
        assert!(text.contains("nvidia-cuda-toolkit") && text.contains("-Dcuhandle.nvrtc.path"), "{text}");
    }

    #[test]
    fn a_library_that_is_not_nvrtc_is_refused_by_name_of_the_missing_symbol() {
        let libc = mapped_path_of("libc.so").expect("libc is mapped");
        let err = load_from(&[libc], None).err().expect("libc is no NVRTC");
        assert_eq!(err.code, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND);
        assert!(err.message.contains("lacks the NVRTC entry point nvrtcVersion"), "{}", err.message);
    }

    #[test]
    fn default_candidates_are_absolute_newest_first() {
        let c = default_candidates(&folders());
        assert!(c.iter().all(|p| p.starts_with('/')), "only absolute paths are opened: {c:?}");
        assert!(c.iter().all(|p| !p.contains("builtins")), "libnvrtc-builtins is no NVRTC: {c:?}");
        assert!(version_key("/usr/local/cuda-13.0/lib64") > version_key("/usr/local/cuda-12.9/lib64"));
        assert!(version_key("/usr/local/cuda-12.10/lib64") > version_key("/usr/local/cuda-12.9/lib64"));
        assert_eq!(folders()[0], "/usr/local/cuda/lib64");
    }

    /// Issue 26 (4): a library that loaded but was no NVRTC ended the search.
    #[test]
    fn a_library_that_is_not_nvrtc_does_not_end_the_search() {
        let Some(real) = nvrtc() else { return };
        let libc = mapped_path_of("libc.so").expect("libc is mapped");
        let found = load_from(&[libc, real.path.clone()], None).expect("NVRTC after libc is found");
        assert_eq!(found.version, real.version);
    }

    #[test]
    fn a_kernel_compiles_to_ptx_with_defines_and_headers_applied() {
        let Some(nvrtc) = nvrtc() else { return };
        let target = nvrtc.target(Some("compute_70"), &[], false).expect("compute_70");
        let Outcome::Compiled { image, .. } = nvrtc.compile(&request(&["-DKERNEL_NAME=saxpy_from_define"]), &target).expect("compile")
        else {
            panic!("the kernel did not compile")
        };
        let ptx = String::from_utf8(image).expect("PTX is text");
        assert!(ptx.contains(".target sm_70"), "{ptx}");
        assert!(ptx.contains(".entry saxpy_from_define("), "{ptx}");
        // SCALE from the header: 3.0f is 0f40400000 in PTX.
        assert!(ptx.contains("0f40400000"), "{ptx}");
        assert!(!ptx.ends_with('\0'));
    }

    #[test]
    fn a_kernel_compiles_to_a_cubin_for_sm_70() {
        let Some(nvrtc) = nvrtc() else { return };
        let target = nvrtc.target(Some("sm_70"), &[], false).expect("sm_70");
        let Outcome::Compiled { image, .. } = nvrtc.compile(&request(&["-DKERNEL_NAME=k"]), &target).expect("compile") else {
            panic!("the kernel did not compile")
        };
        assert!(image.starts_with(b"\x7fELF"), "a cubin is an ELF file");
        crate::core::image::check(&image).expect("a well-formed cubin");
    }

    /// The ELF checks (image.rs) accept NVRTC's cubins for each architecture it supports, also
    /// with line information and with device debug information (DWARF sections, relocations).
    #[test]
    fn nvrtcs_cubins_pass_the_elf_checks_for_every_architecture() {
        let Some(nvrtc) = nvrtc() else { return };
        for &arch in nvrtc.architectures.iter().filter(|&&a| a >= 70) {
            let target = nvrtc.target(Some(&format!("sm_{arch}")), &[], false).expect("a supported architecture");
            for extra in [None, Some("-lineinfo"), Some("-G")] {
                let options: Vec<&str> = std::iter::once("-DKERNEL_NAME=k").chain(extra).collect();
                let Outcome::Compiled { image, .. } = nvrtc.compile(&request(&options), &target).expect("compile") else {
                    panic!("the kernel did not compile for sm_{arch}")
                };
                crate::core::image::check(&image).unwrap_or_else(|e| panic!("sm_{arch} {extra:?}: {e}"));
            }
        }
    }

    #[test]
    fn a_compile_error_keeps_the_log_with_the_line_number() {
        let Some(nvrtc) = nvrtc() else { return };
        let target = nvrtc.target(Some("compute_70"), &[], false).expect("compute_70");
        // Line 5 of saxpy.cu (the source starts with a newline) uses an undeclared name.
        let mut broken = request(&["-DKERNEL_NAME=k"]);
        broken.source = broken.source.replace("SCALE * a", "SCALE * undefined_thing * a");
        match nvrtc.compile(&broken, &target).expect("NVRTC ran") {
            Outcome::Failed { result, name, log } => {
                assert_eq!((result, name.as_str()), (api::NVRTC_ERROR_COMPILATION, "NVRTC_ERROR_COMPILATION"), "NVRTC's own result");
                assert!(log.contains("saxpy.cu(5)"), "{log}");
                assert!(log.contains("undefined_thing"), "{log}");
            }
            Outcome::Compiled { .. } => panic!("an undefined identifier compiled"),
        }
    }

    #[test]
    fn an_unknown_option_is_an_invalid_argument() {
        let Some(nvrtc) = nvrtc() else { return };
        let target = nvrtc.target(Some("compute_70"), &[], false).expect("compute_70");
        let err = nvrtc.compile(&request(&["-DKERNEL_NAME=k", "--no-such-nvrtc-option"]), &target).expect_err("refused");
        assert!(matches!(err, Error::InvalidArgument(_)), "{err}");
        assert!(err.to_string().contains("--no-such-nvrtc-option") && err.to_string().contains("NVRTC_ERROR_INVALID_OPTION (5)"), "{err}");
    }
}
