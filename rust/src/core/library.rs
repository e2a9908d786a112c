//! Context-independent modules (`cuLibraryLoadData`, rule H10) and their kernels (rule K2).

use crate::core::driver::{self, Driver};
use crate::core::error::{Error, Result};
use crate::core::image;
use cudarc::driver::sys::{CUdevice, CUkernel, CUlibrary};
use std::ffi::{c_void, CStr, CString};

const CU_JIT_ERROR_LOG_BUFFER: i32 = 5;
const CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES: i32 = 6;
const CUDA_ERROR_INVALID_VALUE: i32 = 1;
const CUDA_ERROR_NOT_FOUND: i32 = 500;
const CUDA_ERROR_INVALID_CONTEXT: i32 = 201;
/// No kernel has more parameters than this (the driver's limit is 4 KiB of parameters anyway).
const MAX_PROBED_PARAMS: usize = 1024;

pub struct Library {
    raw: CUlibrary,
    driver: &'static Driver,
    /// The JIT error log buffer handed to the driver. With lazy module loading (the default) the
    /// driver compiles a kernel at its first lookup and may write the log then, so the buffer
    /// lives as long as the library; lookup errors quote it.
    jit_log: Box<[u8]>,
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
    /// The driver predates `cuKernelGetParamInfo` (12.4): launches go unchecked.
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

/// A kernel of a library, with its parameter sizes where the driver can tell them (12.4+).
pub struct KernelInfo {
    pub raw: CUkernel,
    pub param_sizes: ParamSizes,
}

/// "; JIT log: ..." from a NUL-terminated log buffer, or "" when empty.
fn jit_log_text(log: &[u8]) -> String {
    let end = log.iter().position(|&c| c == 0).unwrap_or(log.len());
    let text = String::from_utf8_lossy(&log[..end]).trim().to_string();
    if text.is_empty() { String::new() } else { format!("; JIT log: {text}") }
}

impl Library {
    /// Loads PTX, a cubin or a fatbin. A rejected image gives the JIT's error log in the message.
    pub fn load(bytes: &[u8]) -> Result<Library> {
        let driver = driver::initialised()?;
        let image = image::check(bytes)?;
        let mut log = vec![0u8; 16 * 1024].into_boxed_slice();
        let mut options = [CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES];
        let mut values = [log.as_mut_ptr().cast::<c_void>(), log.len() as *mut c_void];
        let mut raw = std::ptr::null_mut();
        // SAFETY: the image was bounds-checked and padded; option arrays have 2 entries and the
        // log buffer has the size we announce; no library options.
        let rc = unsafe {
            (driver.api.cuLibraryLoadData)(&mut raw, image.as_ptr(), options.as_mut_ptr(), values.as_mut_ptr(), 2, std::ptr::null_mut(), std::ptr::null_mut(), 0)
        };
        if rc != 0 {
            let detail = jit_log_text(&log);
            return Err(Error::cuda(rc, "cuLibraryLoadData", format!("{} (a {:?} image of {} bytes){detail}", driver.describe(rc), image.kind, bytes.len())));
        }
        Ok(Library { raw, driver, jit_log: log })
    }

    pub fn raw(&self) -> CUlibrary {
        self.raw
    }

    /// The kernel called `name`; unknown names list the library's kernels where possible.
    pub fn kernel(&self, name: &str) -> Result<KernelInfo> {
        let c_name = CString::new(name).map_err(|_| Error::invalid_argument(format!("kernel name {name:?} contains a NUL character")))?;
        let mut raw = std::ptr::null_mut();
        // SAFETY: NUL-terminated name; out-pointer is valid; the library is loaded.
        let rc = unsafe { (self.driver.api.cuLibraryGetKernel)(&mut raw, self.raw, c_name.as_ptr()) };
        if rc == CUDA_ERROR_NOT_FOUND || rc == CUDA_ERROR_INVALID_VALUE {
            let known = match self.kernel_names() {
                Some(names) => format!("; the library has: {}", names.join(", ")),
                None => "; this driver cannot list a library's kernels (needs CUDA 12.4)".to_string(),
            };
            return Err(Error::invalid_argument(format!(
                "no kernel named '{name}' in this library (kernels must be extern \"C\" or named by their mangled name){known}"
            )));
        }
        if rc != 0 {
            // Lazy loading defers JIT compilation (and its errors) to the first lookup.
            return Err(Error::cuda(rc, "cuLibraryGetKernel", format!("{} (kernel '{name}'){}", self.driver.describe(rc), jit_log_text(&self.jit_log))));
        }
        // The driver answers parameter queries only with a context current; without one the
        // sizes are probed at the first launch, where the handle's context is active.
        let param_sizes = match self.param_sizes(raw) {
            Err(e) if e.cuda_code() == Some(CUDA_ERROR_INVALID_CONTEXT) => ParamSizes::NeedContext,
            other => other?,
        };
        Ok(KernelInfo { raw, param_sizes })
    }

    /// Parameter sizes by probing `cuKernelGetParamInfo` until it says the index is past the end.
    /// Needs a current context.
    pub fn param_sizes(&self, kernel: CUkernel) -> Result<ParamSizes> {
        let Some(get_info) = self.driver.api.cuKernelGetParamInfo else { return Ok(ParamSizes::Unsupported) };
        let mut sizes = Vec::new();
        for index in 0..MAX_PROBED_PARAMS {
            let (mut offset, mut size) = (0usize, 0usize);
            // SAFETY: out-pointers are valid locals; the kernel belongs to a loaded library.
            let rc = unsafe { get_info(kernel, index, &mut offset, &mut size) };
            if rc == CUDA_ERROR_INVALID_VALUE {
                return Ok(ParamSizes::Known(sizes));
            }
            self.driver.check(rc, "cuKernelGetParamInfo")?;
            sizes.push(size);
        }
        Ok(ParamSizes::Known(sizes))
    }

    /// Names of all kernels, where the driver can enumerate them (12.4+).
    pub fn kernel_names(&self) -> Option<Vec<String>> {
        let (count_fn, enumerate) = (self.driver.api.cuLibraryGetKernelCount?, self.driver.api.cuLibraryEnumerateKernels?);
        let name_of = self.driver.api.cuKernelGetName?;
        let mut count = 0u32;
        // SAFETY: out-pointer is valid.
        if unsafe { count_fn(&mut count, self.raw) } != 0 {
            return None;
        }
        let mut kernels = vec![std::ptr::null_mut(); count as usize];
        // SAFETY: the array holds `count` entries.
        if unsafe { enumerate(kernels.as_mut_ptr(), count, self.raw) } != 0 {
            return None;
        }
        let mut names: Vec<String> = kernels
            .iter()
            .filter_map(|&k| {
                let mut p: *const std::ffi::c_char = std::ptr::null();
                // SAFETY: `k` came from the enumeration; the name is a static driver string.
                (unsafe { name_of(&mut p, k) } == 0 && !p.is_null()).then(|| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned())
            })
            .collect();
        names.sort();
        Some(names)
    }

    /// `cuKernelGetAttribute` for `device` (e.g. max threads per block, registers).
    pub fn kernel_attribute(&self, kernel: CUkernel, attribute: i32, device: CUdevice) -> Result<i32> {
        let mut value = 0;
        // SAFETY: out-pointer is valid; the driver validates attribute and device.
        self.driver.check(unsafe { (self.driver.api.cuKernelGetAttribute)(&mut value, attribute, kernel, device) }, "cuKernelGetAttribute")?;
        Ok(value)
    }

    /// Unloads the library. Its kernels must not be launched afterwards (the Java side enforces).
    pub fn unload(self) {
        // SAFETY: loaded by us, unloaded once (consumes self).
        let rc = unsafe { (self.driver.api.cuLibraryUnload)(self.raw) };
        if rc != 0 {
            log::warn!("cuLibraryUnload failed: {}", self.driver.describe(rc));
        }
    }
}
