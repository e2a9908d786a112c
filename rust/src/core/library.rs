//! Context-independent modules (`cuLibraryLoadData`, rule H10) and their kernels (rule K2).

use crate::core::driver::{self, Driver, Optional};
use crate::core::error::{
    Error, Result, CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_NOT_FOUND,
};
use crate::core::image::{self, ImageKind};
use crate::core::param_layout::{ImageLayouts, Param};
use crate::core::uses::UseLog;
use cudarc::driver::sys::{CUdevice, CUjit_option, CUkernel, CUlibrary, CUlibraryOption};
use std::ffi::{c_void, CStr, CString};
use std::sync::Arc;

// JIT and library option keys, from cudarc's bindgen of cuda.h rather than written by hand.
const CU_JIT_MAX_REGISTERS: i32 = CUjit_option::CU_JIT_MAX_REGISTERS as i32;
const CU_JIT_INFO_LOG_BUFFER: i32 = CUjit_option::CU_JIT_INFO_LOG_BUFFER as i32;
const CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES: i32 = CUjit_option::CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES as i32;
const CU_JIT_ERROR_LOG_BUFFER: i32 = CUjit_option::CU_JIT_ERROR_LOG_BUFFER as i32;
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: i32 = CUjit_option::CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES as i32;
const CU_JIT_OPTIMIZATION_LEVEL: i32 = CUjit_option::CU_JIT_OPTIMIZATION_LEVEL as i32;
const CU_JIT_LOG_VERBOSE: i32 = CUjit_option::CU_JIT_LOG_VERBOSE as i32;
const CU_LIBRARY_BINARY_IS_PRESERVED: i32 = CUlibraryOption::CU_LIBRARY_BINARY_IS_PRESERVED as i32;
/// Bytes of each JIT log buffer (error and info).
const JIT_LOG_BYTES: usize = 16 * 1024;
/// No kernel has more parameters than this (the driver's limit is 4 KiB of parameters anyway).
const MAX_PROBED_PARAMS: usize = 1024;

pub struct Library {
    raw: CUlibrary,
    driver: &'static Driver,
    /// The JIT error log buffer handed to the driver. With lazy module loading (the default) the
    /// driver compiles a kernel at its first lookup and may write the log then, so the buffer
    /// lives as long as the library; lookup errors quote it.
    jit_log: Box<[u8]>,
    /// The JIT information log buffer (what `CU_JIT_LOG_VERBOSE` asks for), kept as `jit_log`.
    info_log: Box<[u8]>,
    /// What the driver logged on this thread while the load succeeded (CUDA 12.9+): a JIT that
    /// failed for a device can leave the load itself successful. Taken here, so that it is
    /// neither lost nor attached to this thread's next, unrelated failure.
    load_log: String,
    /// The image itself when the driver was told it is preserved (`CU_LIBRARY_BINARY_IS_PRESERVED`):
    /// the driver then reads it until the unload instead of copying it.
    _preserved: Option<image::CheckedImage>,
    /// The kernels' parameter layouts read from the image, where the driver cannot report them
    /// (no `cuKernelGetParamInfo` before CUDA 12.4); `None` where it can.
    image_layouts: Option<ImageLayouts>,
    /// The streams whose work runs the library's kernels or uses its variables: the unload waits
    /// for that work, so code the GPU runs is never unloaded (rule L7, docs/design.md).
    uses: Arc<UseLog>,
}

/// JIT and library options accepted at load (`cuLibraryLoadData`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LoadOptions {
    /// `CU_JIT_OPTIMIZATION_LEVEL`, 0 to 4 (the driver's default is 4).
    pub optimization_level: Option<u32>,
    /// `CU_JIT_MAX_REGISTERS` per thread.
    pub max_registers: Option<u32>,
    /// `CU_JIT_LOG_VERBOSE`: the information log says what the JIT did (registers, spills...).
    pub log_verbose: bool,
    /// `CU_LIBRARY_BINARY_IS_PRESERVED`: the driver keeps reading our copy of the image instead of
    /// making its own (only for in-memory images).
    pub binary_is_preserved: bool,
}

impl LoadOptions {
    /// Refuses values the driver would misread, before it sees them.
    pub fn check(&self) -> Result<()> {
        if let Some(level) = self.optimization_level {
            if level > 4 {
                return Err(Error::invalid_argument(format!("JIT optimization level {level} is outside [0, 4]")));
            }
        }
        if self.max_registers == Some(0) {
            return Err(Error::invalid_argument("JIT max registers 0 is not a limit; expected at least 1 (or no limit)"));
        }
        Ok(())
    }
}

/// A scalar option value: it travels in the pointer-sized slot itself (cuda.h's convention for
/// JIT and library options), as an address the driver never dereferences.
fn scalar_option(value: usize) -> *mut c_void {
    std::ptr::without_provenance_mut(value)
}

/// The driver's JIT option arrays for one load, pointing into the two log buffers.
struct JitOptions {
    keys: [i32; 8],
    values: [*mut c_void; 8],
    count: usize,
}

impl JitOptions {
    fn new(options: &LoadOptions, error_log: &mut [u8], info_log: &mut [u8]) -> JitOptions {
        let mut o = JitOptions { keys: [0; 8], values: [std::ptr::null_mut(); 8], count: 0 };
        o.push(CU_JIT_ERROR_LOG_BUFFER, error_log.as_mut_ptr().cast());
        o.push(CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, scalar_option(error_log.len()));
        o.push(CU_JIT_INFO_LOG_BUFFER, info_log.as_mut_ptr().cast());
        o.push(CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, scalar_option(info_log.len()));
        if let Some(level) = options.optimization_level {
            o.push(CU_JIT_OPTIMIZATION_LEVEL, scalar_option(level as usize));
        }
        if let Some(registers) = options.max_registers {
            o.push(CU_JIT_MAX_REGISTERS, scalar_option(registers as usize));
        }
        if options.log_verbose {
            o.push(CU_JIT_LOG_VERBOSE, scalar_option(1));
        }
        o
    }

    fn push(&mut self, key: i32, value: *mut c_void) {
        self.keys[self.count] = key;
        self.values[self.count] = value;
        self.count += 1;
    }
}

// SAFETY: a CUlibrary is a process-wide, context-independent handle usable from any thread.
unsafe impl Send for Library {}
// SAFETY: as above; all methods take &self and call thread-safe driver entry points.
unsafe impl Sync for Library {}

/// What the driver can tell about a kernel's parameters.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ParamSizes {
    Known(Vec<usize>),
    /// The driver can tell, but only with a context current.
    NeedContext,
    /// The driver predates `cuKernelGetParamInfo` (12.4) and the image describes no parameters of the
    /// kernel in a form `param_layout` reads: launches go unchecked.
    Unsupported,
}

impl ParamSizes {
    /// [count, sizes...], or [-1] when unsupported, or [-2] when a context is needed first.
    pub fn encode(&self) -> Vec<i64> {
        match self {
            ParamSizes::Known(sizes) => std::iter::once(sizes.len() as i64).chain(sizes.iter().map(|&s| s as i64)).collect(),
            ParamSizes::Unsupported => vec![-1],
            ParamSizes::NeedContext => vec![-2],
        }
    }
}

/// A kernel of a loaded library: the driver's `CUkernel`, which the queries below may pass to the
/// driver because the library it came from is still loaded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRef(CUkernel);

impl KernelRef {
    /// # Safety
    /// `raw` is a kernel of a library (from [`Library::kernel`]) that stays loaded while the value
    /// is used.
    pub unsafe fn from_raw(raw: CUkernel) -> KernelRef {
        KernelRef(raw)
    }

    pub fn raw(self) -> CUkernel {
        self.0
    }
}

/// A kernel of a library, with its parameter sizes where the driver (12.4+) or the image can tell them.
pub struct KernelInfo {
    pub kernel: KernelRef,
    pub param_sizes: ParamSizes,
}

/// The kernels' parameter layouts from the image where the driver cannot report them (rule K2 on
/// every driver: read once, here, so that launches pay nothing for it); `None` where it can.
fn layouts_unless_driver_tells(driver: &Driver, bytes: &[u8], kind: ImageKind) -> Option<ImageLayouts> {
    if driver.supports(Optional::cuKernelGetParamInfo) {
        return None;
    }
    let layouts = ImageLayouts::read(bytes, kind);
    log::debug!("read the parameters of {} kernels from a {kind:?} image (the driver has no cuKernelGetParamInfo)", layouts.len());
    Some(layouts)
}

/// The largest module file read: what a Java `byte[]` image can hold, so a file loads exactly
/// when its bytes could also be loaded from memory.
const MAX_MODULE_FILE_BYTES: u64 = i32::MAX as u64;

/// The bytes of a module file, read once; a file over [`MAX_MODULE_FILE_BYTES`] is refused before
/// anything is allocated for it.
fn read_module_file(path: &std::path::Path) -> Result<Vec<u8>> {
    use std::io::Read;
    let cannot = |e: std::io::Error| Error::invalid_argument(format!("cannot read module file {}: {e}", path.display()));
    let file = std::fs::File::open(path).map_err(cannot)?;
    let size = file.metadata().map_err(cannot)?.len();
    if size > MAX_MODULE_FILE_BYTES {
        return Err(Error::invalid_argument(format!(
            "module file {} has {size} bytes; images of at most {MAX_MODULE_FILE_BYTES} bytes are loaded",
            path.display()
        )));
    }
    let mut bytes = Vec::with_capacity(size as usize);
    // A file that grows while it is read is cut at the limit and then fails the image check.
    file.take(MAX_MODULE_FILE_BYTES).read_to_end(&mut bytes).map_err(cannot)?;
    Ok(bytes)
}

/// The text of a NUL-terminated log buffer, trimmed.
fn log_text(log: &[u8]) -> String {
    let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
    String::from_utf8_lossy(&log[..end]).trim().to_string()
}

/// "; JIT log: ..." from a NUL-terminated log buffer, or "" when empty.
fn jit_log_text(log: &[u8]) -> String {
    let text = log_text(log);
    if text.is_empty() {
        String::new()
    } else {
        format!("; JIT log: {text}")
    }
}

impl Library {
    /// Loads PTX, a cubin or a fatbin. A rejected image gives the JIT's error log in the message.
    pub fn load(bytes: &[u8]) -> Result<Library> {
        Library::load_with(bytes, &LoadOptions::default())
    }

    /// Loads an in-memory image with JIT and library options.
    pub fn load_with(bytes: &[u8], options: &LoadOptions) -> Result<Library> {
        options.check()?;
        let driver = driver::initialised()?;
        let image = image::check(bytes)?;
        let mut library_option = [CU_LIBRARY_BINARY_IS_PRESERVED];
        let mut library_value = [scalar_option(1)];
        let library_options = if options.binary_is_preserved { 1 } else { 0 };
        let image_layouts = layouts_unless_driver_tells(driver, bytes, image.kind);
        let mut jit_log = vec![0u8; JIT_LOG_BYTES].into_boxed_slice();
        let mut info_log = vec![0u8; JIT_LOG_BYTES].into_boxed_slice();
        let mut jit = JitOptions::new(options, &mut jit_log, &mut info_log);
        let mut raw = std::ptr::null_mut();
        // SAFETY: the image was bounds-checked and padded; the option arrays hold `jit.count`
        // entries (and the log buffers their announced sizes, which live as long as the library);
        // a preserved image is kept by the library.
        let loaded = unsafe {
            driver.cuLibraryLoadData(
                &mut raw,
                image.as_ptr(),
                jit.keys.as_mut_ptr(),
                jit.values.as_mut_ptr(),
                jit.count as u32,
                library_option.as_mut_ptr(),
                library_value.as_mut_ptr(),
                library_options,
            )
        };
        loaded.map_err(|e| e.reworded(|m| format!("{m} (a {:?} image of {} bytes){}", image.kind, bytes.len(), jit_log_text(&jit_log))))?;
        let preserved = options.binary_is_preserved.then_some(image);
        let load_log = driver::logs::take_for_this_thread();
        Ok(Library { raw, driver, jit_log, info_log, load_log, _preserved: preserved, image_layouts, uses: Arc::new(UseLog::default()) })
    }

    /// Loads a module file: it is read once, checked as an in-memory image is, and those very
    /// bytes go to the driver (`cuLibraryLoadData`). Letting the driver read the file again
    /// (`cuLibraryLoadFromFile`) would load whatever the file held by then, not what was checked.
    /// `binary_is_preserved` does not apply to files (the checked copy is the driver's to copy).
    pub fn load_file(path: &std::path::Path, options: &LoadOptions) -> Result<Library> {
        options.check()?;
        let bytes = read_module_file(path)?;
        let options = LoadOptions { binary_is_preserved: false, ..*options };
        Library::load_with(&bytes, &options).map_err(|e| match e {
            Error::InvalidArgument(m) => Error::invalid_argument(format!("{m} (module file {})", path.display())),
            other => other,
        })
    }

    /// The JIT's information log so far (empty for machine code the JIT did not touch), and what
    /// the driver logged while the load succeeded.
    pub fn info_log(&self) -> String {
        let info = log_text(&self.info_log);
        match (info.is_empty(), self.load_log.is_empty()) {
            (_, true) => info,
            (true, false) => format!("the driver's log at load: {}", self.load_log),
            (false, false) => format!("{info}\nthe driver's log at load: {}", self.load_log),
        }
    }

    pub fn raw(&self) -> CUlibrary {
        self.raw
    }

    /// The kernel called `name` with its parameter sizes; unknown names list the library's kernels
    /// where possible.
    pub fn kernel(&self, name: &str) -> Result<KernelInfo> {
        let kernel = self.kernel_ref(name)?;
        if let Some(layouts) = &self.image_layouts {
            let param_sizes = match layouts.get(name) {
                Some(params) => ParamSizes::Known(params.iter().map(|p| p.size).collect()),
                None => ParamSizes::Unsupported,
            };
            return Ok(KernelInfo { kernel, param_sizes });
        }
        // The driver answers parameter queries only with a live context current; without one (or
        // with a destroyed one, which cudaDeviceReset leaves current on the calling thread) the
        // sizes are probed at the first launch, where the handle's context is active.
        let param_sizes = match self.param_sizes(kernel) {
            Err(e) if matches!(e.cuda_code(), Some(CUDA_ERROR_INVALID_CONTEXT | CUDA_ERROR_CONTEXT_IS_DESTROYED)) => {
                ParamSizes::NeedContext
            }
            other => other?,
        };
        Ok(KernelInfo { kernel, param_sizes })
    }

    /// The kernel called `name` alone, for callers that know its parameters (the built-in BLAS
    /// kernels): no parameter query. Unknown names list the library's kernels where possible.
    pub fn kernel_ref(&self, name: &str) -> Result<KernelRef> {
        let c_name = CString::new(name).map_err(|_| Error::invalid_argument(format!("kernel name {name:?} contains a NUL character")))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: NUL-terminated name; out-pointer is valid; the library is loaded.
        let found = unsafe { self.driver.cuLibraryGetKernel(&mut raw, self.raw, c_name.as_ptr()) };
        let code = found.as_ref().err().and_then(Error::cuda_code);
        if code == Some(CUDA_ERROR_NOT_FOUND) || code == Some(CUDA_ERROR_INVALID_VALUE) {
            let known = match self.kernel_names() {
                Some(names) => format!("; the library has: {}", names.join(", ")),
                None => "; this driver cannot list a library's kernels (needs CUDA 12.4)".to_string(),
            };
            return Err(Error::invalid_argument(format!(
                "no kernel named '{name}' in this library (kernels must be extern \"C\" or named by their mangled name){known}"
            )));
        }
        // Lazy loading defers JIT compilation (and its errors) to the first lookup.
        found.map_err(|e| e.reworded(|m| format!("{m} (kernel '{name}'){}", jit_log_text(&self.jit_log))))?;
        Ok(KernelRef(raw))
    }

    /// Parameter sizes from `cuKernelGetParamInfo` ([`Library::driver_param_layout`]). Needs a
    /// current context.
    pub fn param_sizes(&self, kernel: KernelRef) -> Result<ParamSizes> {
        Ok(match self.driver_param_layout(kernel)? {
            Some(layout) => ParamSizes::Known(layout.iter().map(|p| p.size).collect()),
            None => ParamSizes::Unsupported,
        })
    }

    /// Parameter offsets and sizes by probing `cuKernelGetParamInfo` until it says the index is
    /// past the end; `None` where the driver lacks it (before 12.4). Needs a current context.
    pub fn driver_param_layout(&self, kernel: KernelRef) -> Result<Option<Vec<Param>>> {
        if !self.driver.supports(Optional::cuKernelGetParamInfo) {
            return Ok(None);
        }
        let mut layout = Vec::new();
        for index in 0..MAX_PROBED_PARAMS {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: out-pointers are valid locals; the kernel belongs to a loaded library.
            match unsafe { self.driver.cuKernelGetParamInfo(kernel.raw(), index, &mut offset, &mut size) } {
                // The index is past the last parameter.
                Err(e) if e.cuda_code() == Some(CUDA_ERROR_INVALID_VALUE) => break,
                other => other?,
            }
            layout.push(Param { offset, size });
        }
        Ok(Some(layout))
    }

    /// Names of all kernels, where the driver can enumerate them (12.4+).
    pub fn kernel_names(&self) -> Option<Vec<String>> {
        if !self.driver.supports(Optional::cuKernelGetName) {
            return None;
        }
        let mut count = 0u32;
        // SAFETY: out-pointer is valid. A driver without the call (before 12.4) says so by an error.
        unsafe { self.driver.cuLibraryGetKernelCount(&mut count, self.raw) }.ok()?;
        let mut kernels = vec![std::ptr::null_mut(); count as usize];
        // SAFETY: the array holds `count` entries.
        unsafe { self.driver.cuLibraryEnumerateKernels(kernels.as_mut_ptr(), count, self.raw) }.ok()?;
        let mut names: Vec<String> = kernels
            .iter()
            .filter_map(|&k| {
                let mut p: *const std::ffi::c_char = std::ptr::null();
                // SAFETY: `k` came from the enumeration; the name is a static driver string.
                (unsafe { self.driver.cuKernelGetName(&mut p, k) }.is_ok() && !p.is_null())
                    .then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            })
            .collect();
        names.sort();
        Some(names)
    }

    /// `cuKernelGetAttribute` for `device` (e.g. max threads per block, registers).
    pub fn kernel_attribute(&self, kernel: KernelRef, attribute: i32, device: CUdevice) -> Result<i32> {
        let mut value = 0;
        // SAFETY: out-pointer is valid; the kernel belongs to a loaded library; the driver
        // validates attribute and device.
        unsafe { self.driver.cuKernelGetAttribute(&mut value, attribute, kernel.raw(), device) }?;
        Ok(value)
    }

    /// `cuKernelSetAttribute` for `device` (e.g. the most dynamic shared memory a launch may ask for).
    pub fn set_kernel_attribute(&self, kernel: KernelRef, attribute: i32, value: i32, device: CUdevice) -> Result<()> {
        // SAFETY: the kernel belongs to a loaded library; the driver validates the rest.
        unsafe { self.driver.cuKernelSetAttribute(attribute, value, kernel.raw(), device) }
    }

    /// Where launches of the library's kernels and uses of its variables are noted.
    pub fn uses(&self) -> &Arc<UseLog> {
        &self.uses
    }

    /// Unloads the library once the GPU work that uses it is done: the kernels still queued or
    /// running and graph replays still queued on the streams noted in `uses` (the host waits for
    /// those streams' work, and only theirs). Java calls this after every call using the library
    /// has returned, so nothing new is queued meanwhile.
    pub fn unload(self) {
        self.uses.wait_for_all();
        // SAFETY: loaded by us, unloaded once (consumes self), after its last use on the GPU.
        if let Err(e) = unsafe { self.driver.cuLibraryUnload(self.raw) } {
            log::warn!("{e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn load_options_the_driver_would_misread_are_refused() {
        assert!(LoadOptions::default().check().is_ok());
        let level = LoadOptions { optimization_level: Some(5), ..LoadOptions::default() };
        assert!(level.check().expect_err("refused").to_string().contains("outside [0, 4]"));
        let registers = LoadOptions { max_registers: Some(0), ..LoadOptions::default() };
        assert!(registers.check().is_err());
    }

    #[test]
    fn jit_options_always_carry_both_logs_and_only_the_options_asked_for() {
        let (mut error_log, mut info_log) = (vec![0u8; 16], vec![0u8; 32]);
        let plain = JitOptions::new(&LoadOptions::default(), &mut error_log, &mut info_log);
        assert_eq!(
            &plain.keys[..plain.count],
            &[CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES]
        );
        assert_eq!(plain.values[3] as usize, 32);
        let all = LoadOptions { optimization_level: Some(2), max_registers: Some(40), log_verbose: true, binary_is_preserved: true };
        let o = JitOptions::new(&all, &mut error_log, &mut info_log);
        assert_eq!(&o.keys[4..o.count], &[CU_JIT_OPTIMIZATION_LEVEL, CU_JIT_MAX_REGISTERS, CU_JIT_LOG_VERBOSE]);
        assert_eq!((o.values[4] as usize, o.values[5] as usize, o.values[6] as usize), (2, 40, 1));
    }
}
