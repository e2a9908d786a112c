//! Finding, loading and initialising libcuda (rule H12: never a panic, always a clear error).

mod api;
pub mod conditional_node;
pub mod dev_resource;
pub mod launch;
pub mod launch_config;
pub mod logs;
pub mod memcpy_batch;
pub mod stream_context;

pub use api::Optional;
use api::{CuResult, DriverApi};

use crate::core::configured_path::ConfiguredPath;
use crate::core::error::{
    CudaFailure, Error, Result, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_SUPPORTED,
    CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
};
use crate::core::library_search;
use crate::core::shared_library;
use cudarc::driver::sys::CUevent;

use std::ffi::CStr;
use std::sync::OnceLock;

/// Environment variable naming the libcuda file to load (the Java property
/// `cuhandle.driver.path` takes precedence and is handed over by [`set_driver_path`]).
pub const DRIVER_PATH_ENV: &str = "CUHANDLE_DRIVER_PATH";

/// The oldest driver API cuhandle binds: `cuLibrary*` and `cuCtxGetId` arrived in 12.0.
pub const MIN_DRIVER_VERSION: i32 = 12000;

/// File names of the driver, preferred first (`libcuda.so` is the unversioned link of toolkits).
const DRIVER_NAMES: &[&str] = &["libcuda.so.1", "libcuda.so"];
/// Folders where drivers are installed, searched first (then LD_LIBRARY_PATH's absolute entries
/// and the dynamic linker's cache, see `library_search`): Debian/Ubuntu, Red Hat/SUSE, NVIDIA's
/// container runtime, WSL.
const DRIVER_FOLDERS: &[&str] = &["/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/local/nvidia/lib64", "/usr/lib/wsl/lib"];

/// The loaded driver library with its resolved entry points.
pub struct Driver {
    /// The entry points, private to this floor: the crate calls them through the checked methods
    /// `api.rs` generates (one per entry point) and the few below whose codes are answers.
    api: DriverApi,
    /// The file that was loaded (as the dynamic linker mapped it, when that can be read).
    pub path: String,
    /// `cuDriverGetVersion`, e.g. 13000 for CUDA 13.0.
    pub version: i32,
    // Never unloaded: the function pointers in `api` point into it.
    _library: libloading::Library,
}

static CONFIGURED_PATH: ConfiguredPath = ConfiguredPath::new("cuhandle.driver.path", DRIVER_PATH_ENV);
static LOADED: OnceLock<std::result::Result<Driver, CudaFailure>> = OnceLock::new();
static INITIALISED: OnceLock<std::result::Result<(), CudaFailure>> = OnceLock::new();

/// Unregisters the driver's error-log callback, if it was registered, so that the driver never calls
/// into this library after it is unloaded (JNI_OnUnload). Loads nothing.
pub fn detach_logs_from_errors() {
    let (Some(Ok(driver)), Some(handle)) = (LOADED.get(), logs::take_registration()) else {
        return;
    };
    // SAFETY: the handle came from cuLogsRegisterCallback of this driver and is unregistered once
    // (`take_registration` hands it out once).
    let _ = unsafe { driver.cuLogsUnregisterCallback(handle) };
}

/// Sets the libcuda file to load. Only effective before the first driver use.
pub fn set_driver_path(path: Option<String>) {
    CONFIGURED_PATH.set(path);
}

/// The driver library, loaded on first use. Does not call `cuInit`.
pub fn loaded() -> Result<&'static Driver> {
    LOADED.get_or_init(load).as_ref().map_err(|f| Error::Cuda(f.clone()))
}

/// The driver library after a successful `cuInit(0)`; every CUDA operation goes through this.
pub fn initialised() -> Result<&'static Driver> {
    let driver = loaded()?;
    INITIALISED
        .get_or_init(|| {
            // SAFETY: cuInit takes a flags word (must be 0) and may be called from any thread.
            unsafe { driver.cuInit(0) }.map(|()| driver.attach_logs_to_errors()).map_err(|e| match e {
                Error::Cuda(f) => f,
                other => CudaFailure::new(CUDA_ERROR_NOT_INITIALIZED, "cuInit", other.to_string()),
            })
        })
        .as_ref()
        .map_err(|f| Error::Cuda(f.clone()))?;
    Ok(driver)
}

fn load() -> std::result::Result<Driver, CudaFailure> {
    match CONFIGURED_PATH.get() {
        Ok(Some(path)) => load_from(&[path], None),
        Ok(None) => {
            let folders = folders();
            load_from(&library_search::candidates(DRIVER_NAMES, &folders), Some(&library_search::searched_places(&folders)))
        }
        Err(message) => Err(CudaFailure::new(CUDA_ERROR_INVALID_VALUE, OPERATION, message)),
    }
}

fn folders() -> Vec<String> {
    DRIVER_FOLDERS.iter().map(|s| s.to_string()).collect()
}

const OPERATION: &str = "loading the CUDA driver library";

/// Loads the first candidate that is a usable driver. `searched` describes the default search,
/// for the message when it found no file at all (None: the candidates are what was configured).
fn load_from(candidates: &[String], searched: Option<&str>) -> std::result::Result<Driver, CudaFailure> {
    library_search::warn_once_about_ld_library_path();
    shared_library::open_first(candidates, finish_load).map_err(|tried| {
        let advice = format!("Set -Dcuhandle.driver.path=/path/to/libcuda.so.1 or {DRIVER_PATH_ENV} to choose one");
        let wording = library_search::Wording {
            library: "libcuda",
            not_found: "libcuda was not found (is the NVIDIA driver installed?)",
            names: DRIVER_NAMES,
            advice: &advice,
        };
        let (code, message) = library_search::failure(&wording, tried, candidates, searched);
        CudaFailure::new(code, OPERATION, message)
    })
}

fn finish_load(library: libloading::Library, candidate: &str) -> std::result::Result<Driver, (i32, String)> {
    let path = mapped_path_of(&library_stem(candidate)).unwrap_or_else(|| candidate.to_string());
    let api = DriverApi::resolve(&library).map_err(|symbol| {
        (
            CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND,
            format!("{path} lacks the driver entry point {symbol}: it is not an NVIDIA CUDA driver library, or one older than CUDA 12.0 (cuhandle needs 12.0 or newer)"),
        )
    })?;
    let mut version = 0;
    // SAFETY: the out-pointer is a valid local; cuDriverGetVersion needs no cuInit.
    let rc = unsafe { (api.cuDriverGetVersion)(&mut version) };
    if rc != 0 {
        return Err((rc, format!("cuDriverGetVersion of {path} returned {rc}")));
    }
    if version < MIN_DRIVER_VERSION {
        return Err((
            CUDA_ERROR_NOT_SUPPORTED,
            format!("{path} is a driver for CUDA {}; cuhandle needs CUDA 12.0 or newer: update the NVIDIA driver", version_string(version)),
        ));
    }
    Ok(Driver { api, path, version, _library: library })
}

/// The file the dynamic linker mapped for a library whose name contains `needle`.
pub(crate) fn mapped_path_of(needle: &str) -> Option<String> {
    let maps = std::fs::read_to_string("/proc/self/maps").ok()?;
    maps.lines()
        .filter_map(|line| line.split_whitespace().nth(5))
        .find(|path| path.rsplit('/').next().is_some_and(|file| file.starts_with(needle)))
        .map(str::to_string)
}

/// "libcuda.so" for "/usr/lib/libcuda.so.1": the part of a file name every version of it shares.
pub(crate) fn library_stem(candidate: &str) -> String {
    let file = candidate.rsplit('/').next().unwrap_or(candidate);
    match file.find(".so") {
        Some(i) => file[..i + 3].to_string(),
        None => file.to_string(),
    }
}

/// "13.0" for 13000.
pub fn version_string(version: i32) -> String {
    format!("{}.{}", version / 1000, (version % 1000) / 10)
}

impl Driver {
    /// Turns a `CUresult` into `Ok` or an error naming the operation and the driver's own name and
    /// description of the code.
    #[inline]
    fn check(&self, rc: CuResult, operation: &str) -> Result<()> {
        if rc == 0 {
            Ok(())
        } else {
            Err(self.failure(rc, operation))
        }
    }

    /// The error of a failed call: the code's name and description, and the driver's log lines of
    /// this thread about it.
    #[cold]
    fn failure(&self, rc: CuResult, operation: &str) -> Error {
        // Taken before `describe`, whose own calls must not add to the lines about this failure.
        let driver_log = logs::take_for_this_thread();
        Error::Cuda(CudaFailure { driver_log, ..CudaFailure::new(rc, operation, self.describe(rc)) })
    }

    /// Registers `logs::on_driver_log` with a driver that has the logs API (12.9+), once, so that a
    /// failed call's error carries what the driver logged about it. Without the API, or if the
    /// registration fails, errors carry the code's description alone.
    fn attach_logs_to_errors(&self) {
        if !self.supports(Optional::cuLogsRegisterCallback) {
            return;
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: the callback has the CUlogsCallback signature and never unwinds; it takes no user
        // data; the handle is a valid out-pointer. The registration lasts until the library is
        // unloaded (`detach_logs_from_errors`, from JNI_OnUnload).
        match unsafe { self.cuLogsRegisterCallback(logs::on_driver_log, std::ptr::null_mut(), &mut handle) } {
            Ok(()) => logs::remember_registration(handle),
            Err(e) => log::debug!("errors will not carry the driver's log: {e}"),
        }
    }

    /// `cuEventQuery` as an answer: `Ok(true)` when the work before the event is done, `Ok(false)`
    /// while it runs (`CUDA_ERROR_NOT_READY`, which is no failure and builds no error: this is polled).
    ///
    /// # Safety
    /// `event` is a live event; the context it was created in need not be current.
    #[inline]
    pub unsafe fn event_is_done(&self, event: CUevent) -> Result<bool> {
        // SAFETY: the caller's contract.
        let rc = unsafe { (self.api.cuEventQuery)(event) };
        if rc == CUDA_ERROR_NOT_READY {
            return Ok(false);
        }
        self.check(rc, "cuEventQuery").map(|()| true)
    }

    /// The error for an optional entry point this driver lacks.
    fn lacks(&self, entry: Optional) -> Error {
        Error::cuda(
            CUDA_ERROR_NOT_SUPPORTED,
            format!("{entry:?}"),
            format!(
                "the driver {} (CUDA {}) lacks {entry:?}, which arrived in CUDA {}: update the NVIDIA driver",
                self.path,
                version_string(self.version),
                version_string(entry.since())
            ),
        )
    }

    /// "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected".
    fn describe(&self, rc: CuResult) -> String {
        let mut name: *const std::ffi::c_char = std::ptr::null();
        let mut text: *const std::ffi::c_char = std::ptr::null();
        // SAFETY: both calls only write a pointer to a static string owned by the driver (or
        // leave it null and return an error for unknown codes).
        let (rn, rt) = unsafe { ((self.api.cuGetErrorName)(rc, &mut name), (self.api.cuGetErrorString)(rc, &mut text)) };
        // SAFETY: on success the driver returned pointers to NUL-terminated static strings.
        let read = |r: CuResult, p: *const std::ffi::c_char| {
            (r == 0 && !p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
        };
        match (read(rn, name), read(rt, text)) {
            (Some(n), Some(t)) => format!("{n} ({rc}): {t}"),
            (Some(n), None) => format!("{n} ({rc})"),
            _ => format!("CUresult {rc} (unknown to this driver)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::error::{CUDA_ERROR_FILE_NOT_FOUND, CUDA_ERROR_SHARED_OBJECT_INIT_FAILED};

    #[test]
    fn library_stem_drops_directories_and_versions() {
        assert_eq!(library_stem("/usr/lib/x86_64-linux-gnu/libcuda.so.1"), "libcuda.so");
        assert_eq!(library_stem("libcuda.so"), "libcuda.so");
        assert_eq!(library_stem("/opt/libcuda.so.535.247.01"), "libcuda.so");
    }

    #[test]
    fn version_string_splits_major_and_minor() {
        assert_eq!(version_string(12020), "12.2");
        assert_eq!(version_string(13000), "13.0");
        assert_eq!(version_string(12040), "12.4");
    }

    #[test]
    fn a_missing_driver_is_an_error_listing_every_path_tried() {
        let candidates = vec!["/nonexistent/libcuda.so.1".to_string(), "/also/not/here/libcuda.so".to_string()];
        let err = load_from(&candidates, None).err().map(Error::Cuda).expect("loading a nonexistent file must fail");
        assert_eq!(err.cuda_code(), Some(CUDA_ERROR_FILE_NOT_FOUND));
        let text = err.to_string();
        assert!(text.contains("/nonexistent/libcuda.so.1") && text.contains("/also/not/here/libcuda.so"), "{text}");
        assert!(text.contains(DRIVER_PATH_ENV), "{text}");
    }

    #[test]
    fn a_library_that_is_not_a_driver_is_refused_by_name_of_the_missing_symbol() {
        // libc loads fine but exports no cuInit.
        let libc = mapped_path_of("libc.so").expect("libc is mapped");
        let err = load_from(&[libc], None).err().map(Error::Cuda).expect("libc is no driver").to_string();
        assert!(err.contains("lacks the driver entry point cuInit"), "{err}");
    }

    /// Issue 26 (4): a library that loaded but was no driver ended the search.
    #[test]
    fn a_library_without_the_driver_entry_points_does_not_end_the_search() {
        let libc = mapped_path_of("libc.so").expect("libc is mapped");
        let driver = "/usr/lib/x86_64-linux-gnu/libcuda.so.1".to_string();
        if !std::path::Path::new(&driver).exists() {
            eprintln!("skipped: no libcuda at {driver} to find after libc");
            return;
        }
        let loaded = load_from(&[libc, driver], None).expect("the driver after libc is found");
        assert!(loaded.path.contains("libcuda.so"), "{}", loaded.path);
    }

    #[test]
    fn relative_candidates_are_never_opened_and_an_empty_search_says_where_it_looked() {
        let err = load_from(&["libcuda.so.1".to_string()], None).err().expect("a bare name is refused");
        assert!(err.message.contains("libcuda.so.1: not an absolute path"), "{}", err.message);
        let err = load_from(&[], Some("/usr/lib64, the dynamic linker's cache (ldconfig)")).err().expect("nothing to load");
        assert_eq!(err.code, CUDA_ERROR_FILE_NOT_FOUND);
        assert!(err.message.contains("tried: no libcuda.so.1 or libcuda.so in /usr/lib64, the dynamic linker's cache"), "{}", err.message);
    }

    #[test]
    fn a_file_that_exists_but_cannot_load_keeps_the_linker_reason() {
        let dir = std::env::temp_dir().join(format!("cuhandle-driver-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let bogus = dir.join("libcuda.so.1");
        std::fs::write(&bogus, b"not an ELF file").expect("write");
        let err = load_from(&[bogus.display().to_string(), "/nonexistent/libcuda.so.1".to_string()], None)
            .err()
            .map(Error::Cuda)
            .expect("refused");
        std::fs::remove_dir_all(&dir).ok();
        assert_eq!(err.cuda_code(), Some(CUDA_ERROR_SHARED_OBJECT_INIT_FAILED));
        let text = err.to_string();
        assert!(text.contains("exists but could not be loaded") && text.contains(&bogus.display().to_string()), "{text}");
        assert!(text.contains("also tried: /nonexistent/libcuda.so.1"), "{text}");
        assert!(text.contains("too short"), "the dynamic linker's own reason is kept: {text}");
    }

    #[test]
    fn mapped_path_finds_a_library_of_this_process() {
        // Every Rust test binary on Linux maps libc.
        let p = mapped_path_of("libc.so");
        assert!(p.is_some_and(|p| p.starts_with('/')));
        assert_eq!(mapped_path_of("no-such-library-xyz"), None);
    }
}
