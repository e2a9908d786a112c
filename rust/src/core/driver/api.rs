//! The table of driver entry points cuhandle calls, resolved once from the loaded libcuda.
//!
//! Why our own table instead of cudarc's `sys` functions: cudarc resolves each symbol lazily and
//! panics when it is missing, and its loader panics when no libcuda is found and cannot be pointed
//! at a specific file. Here every required symbol is resolved up front (a missing one is an error
//! naming it), newer ones are optional (`None` disables the feature), and the return type is a
//! plain `i32` so that a code unknown to the bindings can never become an invalid Rust enum value.
//! cudarc still supplies the handle and pointer types and the attribute enumerations.

use super::launch_config::LaunchConfig;
use cudarc::driver::sys::{
    CUcontext, CUdevice, CUdeviceptr, CUdriverProcAddressQueryResult, CUdriverProcAddress_flags, CUevent, CUfunction, CUgraph, CUgraphExec,
    CUgraphNode, CUkernel, CUlibrary, CUstream,
};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};

/// A raw `CUresult`.
pub type CuResult = c_int;

/// `CUhostFn`: a host function queued with `cuLaunchHostFunc`, run on a driver thread.
pub type HostFn = unsafe extern "C" fn(*mut c_void);

macro_rules! driver_api {
    (
        required { $( $name:ident = $sym:literal ( $( $arg:ty ),* ); )* }
        optional { $( $oname:ident = $osym:literal since $over:literal ( $( $oarg:ty ),* ); )* }
    ) => {
        /// Entry points of the CUDA driver. Required ones are the CUDA 12.0 set (present in every
        /// 12.x and 13.x driver); optional ones are looked up with `cuGetProcAddress` and are
        /// `None` when the driver predates them.
        #[allow(non_snake_case)]
        pub struct DriverApi {
            $( pub $name: unsafe extern "C" fn( $( $arg ),* ) -> CuResult, )*
            $( pub $oname: Option<unsafe extern "C" fn( $( $oarg ),* ) -> CuResult>, )*
        }

        impl DriverApi {
            /// Resolves every required symbol from `lib`; the first missing one is named in the error.
            #[allow(non_snake_case)]
            pub(super) fn resolve(lib: &libloading::Library) -> std::result::Result<DriverApi, String> {
                $(
                    // SAFETY: the symbol's C signature is the one declared in CUDA 12.0's cuda.h
                    // for this exported name; copying the function pointer out is sound because
                    // the library is never unloaded (it lives in a process-wide static).
                    let $name = unsafe {
                        *lib.get::<unsafe extern "C" fn( $( $arg ),* ) -> CuResult>(concat!($sym, "\0").as_bytes())
                            .map_err(|_| $sym.to_string())?
                    };
                )*
                let get_proc = cu_get_proc_address_of(lib);
                $(
                    let $oname = get_proc.and_then(|gp| {
                        let p = lookup_optional(gp, concat!($osym, "\0"), $over);
                        // SAFETY: cuGetProcAddress returned the entry point of this name for the
                        // requested CUDA version, whose signature is the declared one.
                        p.map(|p| unsafe {
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn( $( $oarg ),* ) -> CuResult>(p)
                        })
                    });
                )*
                Ok(DriverApi { $( $name, )* $( $oname, )* })
            }

            /// Names of the optional entry points this driver lacks (for the environment report).
            pub fn missing_optional(&self) -> Vec<&'static str> {
                let mut missing = Vec::new();
                $( if self.$oname.is_none() { missing.push($osym); } )*
                missing
            }
        }
    };
}

type GetProcAddress = unsafe extern "C" fn(*const c_char, *mut *mut c_void, c_int, u64, *mut c_int) -> CuResult;

fn cu_get_proc_address_of(lib: &libloading::Library) -> Option<GetProcAddress> {
    // SAFETY: cuGetProcAddress_v2 has this signature in every driver that exports it (12.0+).
    unsafe { lib.get::<GetProcAddress>(b"cuGetProcAddress_v2\0").ok().map(|s| *s) }
}

fn lookup_optional(get_proc: GetProcAddress, symbol: &str, cuda_version: c_int) -> Option<*mut c_void> {
    let mut pfn: *mut c_void = std::ptr::null_mut();
    let mut status: c_int = 0;
    // SAFETY: `symbol` is NUL-terminated, the out-pointers are valid locals.
    let rc = unsafe {
        get_proc(symbol.as_ptr().cast(), &mut pfn, cuda_version, CUdriverProcAddress_flags::CU_GET_PROC_ADDRESS_DEFAULT as u64, &mut status)
    };
    (rc == 0 && status == CUdriverProcAddressQueryResult::CU_GET_PROC_ADDRESS_SUCCESS as c_int && !pfn.is_null()).then_some(pfn)
}

driver_api! {
    required {
        cuInit = "cuInit"(c_uint);
        cuDriverGetVersion = "cuDriverGetVersion"(*mut c_int);
        cuGetErrorName = "cuGetErrorName"(CuResult, *mut *const c_char);
        cuGetErrorString = "cuGetErrorString"(CuResult, *mut *const c_char);
        cuDeviceGet = "cuDeviceGet"(*mut CUdevice, c_int);
        cuDeviceGetCount = "cuDeviceGetCount"(*mut c_int);
        cuDeviceGetName = "cuDeviceGetName"(*mut c_char, c_int, CUdevice);
        cuDeviceGetAttribute = "cuDeviceGetAttribute"(*mut c_int, c_int, CUdevice);
        cuDeviceTotalMem = "cuDeviceTotalMem_v2"(*mut usize, CUdevice);
        cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain"(*mut CUcontext, CUdevice);
        cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2"(CUdevice);
        cuDevicePrimaryCtxGetState = "cuDevicePrimaryCtxGetState"(CUdevice, *mut c_uint, *mut c_int);
        cuDevicePrimaryCtxReset = "cuDevicePrimaryCtxReset_v2"(CUdevice);
        cuCtxCreate = "cuCtxCreate_v2"(*mut CUcontext, c_uint, CUdevice);
        cuCtxDestroy = "cuCtxDestroy_v2"(CUcontext);
        cuCtxGetCurrent = "cuCtxGetCurrent"(*mut CUcontext);
        cuCtxSetCurrent = "cuCtxSetCurrent"(CUcontext);
        cuCtxGetDevice = "cuCtxGetDevice"(*mut CUdevice);
        cuCtxGetId = "cuCtxGetId"(CUcontext, *mut c_ulonglong);
        cuCtxSynchronize = "cuCtxSynchronize"();
        cuStreamCreate = "cuStreamCreate"(*mut CUstream, c_uint);
        cuStreamDestroy = "cuStreamDestroy_v2"(CUstream);
        cuStreamSynchronize = "cuStreamSynchronize"(CUstream);
        cuStreamGetCtx = "cuStreamGetCtx"(CUstream, *mut CUcontext);
        cuStreamWaitEvent = "cuStreamWaitEvent"(CUstream, CUevent, c_uint);
        cuEventCreate = "cuEventCreate"(*mut CUevent, c_uint);
        cuEventDestroy = "cuEventDestroy_v2"(CUevent);
        cuEventRecord = "cuEventRecord"(CUevent, CUstream);
        cuEventSynchronize = "cuEventSynchronize"(CUevent);
        cuEventQuery = "cuEventQuery"(CUevent);
        cuLaunchHostFunc = "cuLaunchHostFunc"(CUstream, HostFn, *mut c_void);
        cuEventElapsedTime = "cuEventElapsedTime"(*mut f32, CUevent, CUevent);
        cuMemAlloc = "cuMemAlloc_v2"(*mut CUdeviceptr, usize);
        cuMemFree = "cuMemFree_v2"(CUdeviceptr);
        cuMemAllocFromPoolAsync = "cuMemAllocFromPoolAsync"(*mut CUdeviceptr, usize, *mut c_void, CUstream);
        cuMemPoolCreate = "cuMemPoolCreate"(*mut *mut c_void, *const c_void);
        cuMemPoolDestroy = "cuMemPoolDestroy"(*mut c_void);
        cuMemPoolSetAttribute = "cuMemPoolSetAttribute"(*mut c_void, c_int, *mut c_void);
        cuMemPoolGetAttribute = "cuMemPoolGetAttribute"(*mut c_void, c_int, *mut c_void);
        cuMemPoolTrimTo = "cuMemPoolTrimTo"(*mut c_void, usize);
        cuMemFreeAsync = "cuMemFreeAsync"(CUdeviceptr, CUstream);
        cuMemGetInfo = "cuMemGetInfo_v2"(*mut usize, *mut usize);
        cuMemcpyHtoDAsync = "cuMemcpyHtoDAsync_v2"(CUdeviceptr, *const c_void, usize, CUstream);
        cuMemcpyDtoHAsync = "cuMemcpyDtoHAsync_v2"(*mut c_void, CUdeviceptr, usize, CUstream);
        cuMemcpyDtoDAsync = "cuMemcpyDtoDAsync_v2"(CUdeviceptr, CUdeviceptr, usize, CUstream);
        cuMemsetD8Async = "cuMemsetD8Async"(CUdeviceptr, u8, usize, CUstream);
        cuMemHostAlloc = "cuMemHostAlloc"(*mut *mut c_void, usize, c_uint);
        cuMemFreeHost = "cuMemFreeHost"(*mut c_void);
        cuMemHostGetDevicePointer = "cuMemHostGetDevicePointer_v2"(*mut CUdeviceptr, *mut c_void, c_uint);
        cuMemHostRegister = "cuMemHostRegister_v2"(*mut c_void, usize, c_uint);
        cuMemHostUnregister = "cuMemHostUnregister"(*mut c_void);
        cuLibraryLoadData = "cuLibraryLoadData"(*mut CUlibrary, *const c_void, *mut c_int, *mut *mut c_void, c_uint, *mut c_int, *mut *mut c_void, c_uint);
        cuLibraryUnload = "cuLibraryUnload"(CUlibrary);
        cuLibraryGetKernel = "cuLibraryGetKernel"(*mut CUkernel, CUlibrary, *const c_char);
        cuLibraryGetGlobal = "cuLibraryGetGlobal"(*mut CUdeviceptr, *mut usize, CUlibrary, *const c_char);
        cuLibraryGetManaged = "cuLibraryGetManaged"(*mut CUdeviceptr, *mut usize, CUlibrary, *const c_char);
        cuKernelGetFunction = "cuKernelGetFunction"(*mut CUfunction, CUkernel);
        cuKernelGetAttribute = "cuKernelGetAttribute"(*mut c_int, c_int, CUkernel, CUdevice);
        cuLaunchKernel = "cuLaunchKernel"(CUfunction, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, c_uint, CUstream, *mut *mut c_void, *mut *mut c_void);
        cuLaunchKernelEx = "cuLaunchKernelEx"(*const LaunchConfig, CUfunction, *mut *mut c_void, *mut *mut c_void);
        cuKernelSetAttribute = "cuKernelSetAttribute"(c_int, c_int, CUkernel, CUdevice);
        cuFuncSetAttribute = "cuFuncSetAttribute"(CUfunction, c_int, c_int);
        cuStreamBeginCapture = "cuStreamBeginCapture_v2"(CUstream, c_int);
        cuStreamEndCapture = "cuStreamEndCapture"(CUstream, *mut CUgraph);
        cuStreamIsCapturing = "cuStreamIsCapturing"(CUstream, *mut c_int);
        cuGraphInstantiateWithFlags = "cuGraphInstantiateWithFlags"(*mut CUgraphExec, CUgraph, c_ulonglong);
        cuGraphLaunch = "cuGraphLaunch"(CUgraphExec, CUstream);
        cuGraphExecDestroy = "cuGraphExecDestroy"(CUgraphExec);
        cuGraphDestroy = "cuGraphDestroy"(CUgraph);
        cuGraphGetNodes = "cuGraphGetNodes"(CUgraph, *mut CUgraphNode, *mut usize);
    }
    optional {
        cuKernelGetParamInfo = "cuKernelGetParamInfo" since 12040 (CUkernel, usize, *mut usize, *mut usize);
        cuLibraryGetKernelCount = "cuLibraryGetKernelCount" since 12040 (*mut c_uint, CUlibrary);
        cuLibraryEnumerateKernels = "cuLibraryEnumerateKernels" since 12040 (*mut CUkernel, c_uint, CUlibrary);
        cuKernelGetName = "cuKernelGetName" since 12030 (*mut *const c_char, CUkernel);
        cuOccupancyMaxPotentialClusterSize = "cuOccupancyMaxPotentialClusterSize" since 11080 (*mut c_int, CUfunction, *const LaunchConfig);
    }
}
