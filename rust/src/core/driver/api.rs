//! The table of driver entry points cuhandle calls, resolved once from the loaded libcuda.
//!
//! Why our own table instead of cudarc's `sys` functions: cudarc resolves each symbol lazily and
//! panics when it is missing, and its loader panics when no libcuda is found and cannot be pointed
//! at a specific file. Here every required symbol is resolved up front (a missing one is an error
//! naming it), newer ones are optional (`None` disables the feature), and the return type is a
//! plain `i32` so that a code unknown to the bindings can never become an invalid Rust enum value.
//! cudarc still supplies the handle and pointer types and the attribute enumerations.

use super::conditional_node::ConditionalNodeParams;
use super::dev_resource::DevResource;
use super::launch_config::LaunchConfig;
use super::logs::LogsCallback;
use super::memcpy_batch::MemcpyAttributes;
use super::Driver;
use crate::core::error::Result;
use cudarc::driver::sys::{
    CUDA_KERNEL_NODE_PARAMS_v2, CUcontext, CUdevice, CUdeviceptr, CUdriverProcAddressQueryResult, CUdriverProcAddress_flags, CUevent,
    CUfunction, CUgraph, CUgraphExec, CUgraphNode, CUkernel, CUlibrary, CUstream,
};
use std::ffi::{c_char, c_int, c_uint, c_ulonglong, c_void};

/// A raw `CUresult`.
pub type CuResult = c_int;

/// `CUhostFn`: a host function queued with `cuLaunchHostFunc`, run on a driver thread.
pub type HostFn = unsafe extern "C" fn(*mut c_void);

macro_rules! driver_api {
    (
        required { $( $name:ident = $sym:literal ( $( $arg:ident : $ty:ty ),* ); )* }
        optional { $( $oname:ident = $osym:literal since $over:literal $( for $only:ident )? ( $( $oarg:ident : $oty:ty ),* ); )* }
    ) => {
        /// Entry points of the CUDA driver. Required ones are the CUDA 12.0 set (present in every
        /// 12.x and 13.x driver); optional ones are looked up with `cuGetProcAddress` and are
        /// `None` when the driver predates them. Private to the driver floor: the rest of the crate
        /// calls the checked methods of [`Driver`] generated below, one per entry.
        #[allow(non_snake_case)]
        pub(super) struct DriverApi {
            $( pub(super) $name: unsafe extern "C" fn( $( $ty ),* ) -> CuResult, )*
            $( pub(super) $oname: Option<unsafe extern "C" fn( $( $oty ),* ) -> CuResult>, )*
        }

        /// The entry points a driver may lack, for [`Driver::supports`].
        #[allow(non_camel_case_types)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub enum Optional {
            $( $oname, )*
        }

        impl Optional {
            /// The CUDA version (e.g. 12040) that brought the entry point.
            pub fn since(self) -> i32 {
                match self {
                    $( Optional::$oname => $over, )*
                }
            }

            /// Whether only the tests' probes call the entry point (`for tests` in the table): the
            /// environment report leaves those out of what a driver lacks.
            pub fn only_for_tests(self) -> bool {
                match self {
                    $( Optional::$oname => {
                        let marks: &[&str] = &[$( stringify!($only) )?];
                        !marks.is_empty()
                    } )*
                }
            }
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
                        *lib.get::<unsafe extern "C" fn( $( $ty ),* ) -> CuResult>(concat!($sym, "\0").as_bytes())
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
                            std::mem::transmute::<*mut c_void, unsafe extern "C" fn( $( $oty ),* ) -> CuResult>(p)
                        })
                    });
                )*
                Ok(DriverApi { $( $name, )* $( $oname, )* })
            }
        }

        // The driver floor: one checked method per entry point, named as cuda.h names it. A call
        // site above the floor is one line, `unsafe { driver.cuX(...) }?`, and its error names the
        // call and the driver's own name and description of the code.
        #[allow(non_snake_case, clippy::too_many_arguments)]
        impl Driver {
            $(
                #[doc = concat!("`", stringify!($name), "`: a code other than `CUDA_SUCCESS` is an error naming the call.")]
                ///
                /// # Safety
                /// The arguments meet the contract cuda.h documents for this call: handles of live
                /// driver objects (and of the context the call needs current, where it needs one),
                /// pointers valid for everything the call reads or writes, for as long as the
                /// driver uses them (for an asynchronous call, until the queued work ran).
                #[inline]
                pub unsafe fn $name(&self, $( $arg: $ty ),* ) -> Result<()> {
                    // SAFETY: the caller meets the entry point's contract (this method's Safety).
                    let rc = unsafe { (self.api.$name)( $( $arg ),* ) };
                    self.check(rc, stringify!($name))
                }
            )*
            $(
                #[doc = concat!("`", stringify!($oname), "` (CUDA ", stringify!($over), "+): an error naming the call when it failed, ")]
                /// and `CUDA_ERROR_NOT_SUPPORTED` when this driver predates it (ask [`Driver::supports`] first
                /// where that is an answer rather than a failure).
                ///
                /// # Safety
                /// As for the required entry points: the arguments meet cuda.h's contract for this call.
                #[inline]
                pub unsafe fn $oname(&self, $( $oarg: $oty ),* ) -> Result<()> {
                    let Some(entry) = self.api.$oname else {
                        return Err(self.lacks(Optional::$oname));
                    };
                    // SAFETY: the caller meets the entry point's contract (this method's Safety).
                    let rc = unsafe { entry( $( $oarg ),* ) };
                    self.check(rc, stringify!($oname))
                }
            )*

            /// Names of the optional entry points this driver lacks that a feature of cuhandle uses
            /// (for the environment report; the tests' probes are left out).
            pub fn missing_optional(&self) -> Vec<&'static str> {
                let mut missing = Vec::new();
                $( if self.api.$oname.is_none() && !Optional::$oname.only_for_tests() { missing.push($osym); } )*
                missing
            }

            /// Whether this driver has `entry` (loaded drivers older than its CUDA version lack it).
            pub fn supports(&self, entry: Optional) -> bool {
                match entry {
                    $( Optional::$oname => self.api.$oname.is_some(), )*
                }
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
        // Initialization, version and error handling
        cuInit = "cuInit"(flags: c_uint);
        cuDriverGetVersion = "cuDriverGetVersion"(version: *mut c_int);
        cuGetErrorName = "cuGetErrorName"(error: CuResult, name: *mut *const c_char);
        cuGetErrorString = "cuGetErrorString"(error: CuResult, text: *mut *const c_char);
        // Device management
        cuDeviceGet = "cuDeviceGet"(device: *mut CUdevice, ordinal: c_int);
        cuDeviceGetCount = "cuDeviceGetCount"(count: *mut c_int);
        cuDeviceGetName = "cuDeviceGetName"(name: *mut c_char, length: c_int, device: CUdevice);
        cuDeviceGetAttribute = "cuDeviceGetAttribute"(value: *mut c_int, attribute: c_int, device: CUdevice);
        cuDeviceTotalMem = "cuDeviceTotalMem_v2"(bytes: *mut usize, device: CUdevice);
        // Primary context management
        cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain"(context: *mut CUcontext, device: CUdevice);
        cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2"(device: CUdevice);
        cuDevicePrimaryCtxGetState = "cuDevicePrimaryCtxGetState"(device: CUdevice, flags: *mut c_uint, active: *mut c_int);
        cuDevicePrimaryCtxReset = "cuDevicePrimaryCtxReset_v2"(device: CUdevice);
        // Context management
        cuCtxCreate = "cuCtxCreate_v2"(context: *mut CUcontext, flags: c_uint, device: CUdevice);
        cuCtxDestroy = "cuCtxDestroy_v2"(context: CUcontext);
        cuCtxGetCurrent = "cuCtxGetCurrent"(context: *mut CUcontext);
        cuCtxSetCurrent = "cuCtxSetCurrent"(context: CUcontext);
        cuCtxGetDevice = "cuCtxGetDevice"(device: *mut CUdevice);
        cuCtxGetId = "cuCtxGetId"(context: CUcontext, id: *mut c_ulonglong);
        cuCtxSynchronize = "cuCtxSynchronize"();
        // Stream management
        cuStreamCreate = "cuStreamCreate"(stream: *mut CUstream, flags: c_uint);
        cuStreamDestroy = "cuStreamDestroy_v2"(stream: CUstream);
        cuStreamSynchronize = "cuStreamSynchronize"(stream: CUstream);
        cuStreamGetCtx = "cuStreamGetCtx"(stream: CUstream, context: *mut CUcontext);
        cuStreamWaitEvent = "cuStreamWaitEvent"(stream: CUstream, event: CUevent, flags: c_uint);
        // Event management (and cuLaunchHostFunc, which runs host code in stream order)
        cuEventCreate = "cuEventCreate"(event: *mut CUevent, flags: c_uint);
        cuEventDestroy = "cuEventDestroy_v2"(event: CUevent);
        cuEventRecord = "cuEventRecord"(event: CUevent, stream: CUstream);
        cuEventSynchronize = "cuEventSynchronize"(event: CUevent);
        cuEventQuery = "cuEventQuery"(event: CUevent);
        cuLaunchHostFunc = "cuLaunchHostFunc"(stream: CUstream, function: HostFn, user_data: *mut c_void);
        cuEventElapsedTime = "cuEventElapsedTime"(milliseconds: *mut f32, start: CUevent, end: CUevent);
        // Memory management, stream-ordered memory allocator and copies
        cuMemAlloc = "cuMemAlloc_v2"(pointer: *mut CUdeviceptr, bytes: usize);
        cuMemFree = "cuMemFree_v2"(pointer: CUdeviceptr);
        cuMemAllocFromPoolAsync = "cuMemAllocFromPoolAsync"(pointer: *mut CUdeviceptr, bytes: usize, pool: *mut c_void, stream: CUstream);
        cuMemPoolCreate = "cuMemPoolCreate"(pool: *mut *mut c_void, properties: *const c_void);
        cuMemPoolDestroy = "cuMemPoolDestroy"(pool: *mut c_void);
        cuMemPoolSetAttribute = "cuMemPoolSetAttribute"(pool: *mut c_void, attribute: c_int, value: *mut c_void);
        cuMemPoolGetAttribute = "cuMemPoolGetAttribute"(pool: *mut c_void, attribute: c_int, value: *mut c_void);
        cuMemPoolTrimTo = "cuMemPoolTrimTo"(pool: *mut c_void, min_bytes_to_keep: usize);
        cuMemFreeAsync = "cuMemFreeAsync"(pointer: CUdeviceptr, stream: CUstream);
        cuMemGetInfo = "cuMemGetInfo_v2"(free: *mut usize, total: *mut usize);
        cuMemcpyHtoDAsync = "cuMemcpyHtoDAsync_v2"(dst: CUdeviceptr, src: *const c_void, bytes: usize, stream: CUstream);
        cuMemcpyDtoHAsync = "cuMemcpyDtoHAsync_v2"(dst: *mut c_void, src: CUdeviceptr, bytes: usize, stream: CUstream);
        cuMemcpyDtoDAsync = "cuMemcpyDtoDAsync_v2"(dst: CUdeviceptr, src: CUdeviceptr, bytes: usize, stream: CUstream);
        cuMemsetD8Async = "cuMemsetD8Async"(dst: CUdeviceptr, value: u8, count: usize, stream: CUstream);
        cuMemHostAlloc = "cuMemHostAlloc"(pointer: *mut *mut c_void, bytes: usize, flags: c_uint);
        cuMemFreeHost = "cuMemFreeHost"(pointer: *mut c_void);
        cuMemHostGetDevicePointer = "cuMemHostGetDevicePointer_v2"(device_pointer: *mut CUdeviceptr, host_pointer: *mut c_void, flags: c_uint);
        cuMemHostRegister = "cuMemHostRegister_v2"(pointer: *mut c_void, bytes: usize, flags: c_uint);
        cuMemHostUnregister = "cuMemHostUnregister"(pointer: *mut c_void);
        // Library management (context-independent loading, CUDA 12.0)
        cuLibraryLoadData = "cuLibraryLoadData"(library: *mut CUlibrary, image: *const c_void, jit_options: *mut c_int, jit_option_values: *mut *mut c_void, num_jit_options: c_uint, library_options: *mut c_int, library_option_values: *mut *mut c_void, num_library_options: c_uint);
        cuLibraryUnload = "cuLibraryUnload"(library: CUlibrary);
        cuLibraryGetKernel = "cuLibraryGetKernel"(kernel: *mut CUkernel, library: CUlibrary, name: *const c_char);
        cuLibraryGetGlobal = "cuLibraryGetGlobal"(pointer: *mut CUdeviceptr, bytes: *mut usize, library: CUlibrary, name: *const c_char);
        cuLibraryGetManaged = "cuLibraryGetManaged"(pointer: *mut CUdeviceptr, bytes: *mut usize, library: CUlibrary, name: *const c_char);
        cuKernelGetFunction = "cuKernelGetFunction"(function: *mut CUfunction, kernel: CUkernel);
        cuKernelGetAttribute = "cuKernelGetAttribute"(value: *mut c_int, attribute: c_int, kernel: CUkernel, device: CUdevice);
        // Execution control
        cuLaunchKernel = "cuLaunchKernel"(function: CUfunction, grid_x: c_uint, grid_y: c_uint, grid_z: c_uint, block_x: c_uint, block_y: c_uint, block_z: c_uint, shared_bytes: c_uint, stream: CUstream, params: *mut *mut c_void, extra: *mut *mut c_void);
        cuLaunchKernelEx = "cuLaunchKernelEx"(config: *const LaunchConfig, function: CUfunction, params: *mut *mut c_void, extra: *mut *mut c_void);
        cuKernelSetAttribute = "cuKernelSetAttribute"(attribute: c_int, value: c_int, kernel: CUkernel, device: CUdevice);
        cuFuncSetAttribute = "cuFuncSetAttribute"(function: CUfunction, attribute: c_int, value: c_int);
        // Stream capture and graph management
        cuStreamBeginCapture = "cuStreamBeginCapture_v2"(stream: CUstream, mode: c_int);
        cuStreamEndCapture = "cuStreamEndCapture"(stream: CUstream, graph: *mut CUgraph);
        cuStreamIsCapturing = "cuStreamIsCapturing"(stream: CUstream, status: *mut c_int);
        cuGraphInstantiateWithFlags = "cuGraphInstantiateWithFlags"(exec: *mut CUgraphExec, graph: CUgraph, flags: c_ulonglong);
        cuGraphLaunch = "cuGraphLaunch"(exec: CUgraphExec, stream: CUstream);
        cuGraphExecDestroy = "cuGraphExecDestroy"(exec: CUgraphExec);
        cuGraphDestroy = "cuGraphDestroy"(graph: CUgraph);
        cuGraphGetNodes = "cuGraphGetNodes"(graph: CUgraph, nodes: *mut CUgraphNode, count: *mut usize);
        // Graphs that change without a new capture (graph_node.rs): the node a capture recorded
        // last, and new arguments, grid and block for a kernel node of an executable graph.
        cuStreamGetCaptureInfo = "cuStreamGetCaptureInfo_v2"(stream: CUstream, status: *mut c_int, id: *mut u64, graph: *mut CUgraph, dependencies: *mut *const CUgraphNode, count: *mut usize);
        cuGraphExecKernelNodeSetParams = "cuGraphExecKernelNodeSetParams_v2"(exec: CUgraphExec, node: CUgraphNode, params: *const CUDA_KERNEL_NODE_PARAMS_v2);
        // The capture's dependencies after a node added to its graph by hand (a conditional node).
        cuStreamUpdateCaptureDependencies = "cuStreamUpdateCaptureDependencies"(stream: CUstream, nodes: *mut CUgraphNode, count: usize, flags: c_uint);
    }
    optional {
        cuKernelGetParamInfo = "cuKernelGetParamInfo" since 12040 (kernel: CUkernel, index: usize, offset: *mut usize, size: *mut usize);
        cuLibraryGetKernelCount = "cuLibraryGetKernelCount" since 12040 (count: *mut c_uint, library: CUlibrary);
        cuLibraryEnumerateKernels = "cuLibraryEnumerateKernels" since 12040 (kernels: *mut CUkernel, count: c_uint, library: CUlibrary);
        cuKernelGetName = "cuKernelGetName" since 12030 (name: *mut *const c_char, kernel: CUkernel);
        // Error log management: the driver's own explanation of a failure, attached to its error (logs.rs).
        cuLogsRegisterCallback = "cuLogsRegisterCallback" since 12090 (callback: LogsCallback, user_data: *mut c_void, handle: *mut *mut c_void);
        cuLogsUnregisterCallback = "cuLogsUnregisterCallback" since 12090 (handle: *mut c_void);
        // Test probes: the module loading mode in force and the device pool's stream-ordered allocation.
        cuModuleGetLoadingMode = "cuModuleGetLoadingMode" since 11070 for tests (mode: *mut c_int);
        cuMemAllocAsync = "cuMemAllocAsync" since 11020 for tests (pointer: *mut CUdeviceptr, bytes: usize, stream: CUstream);
        // Green contexts: a group of the device's SMs as a context of its own (SM partitions,
        // core/green_context.rs).
        cuDeviceGetDevResource = "cuDeviceGetDevResource" since 12040 (device: CUdevice, resource: *mut DevResource, kind: c_int);
        cuDevSmResourceSplitByCount = "cuDevSmResourceSplitByCount" since 12040 (
            result: *mut DevResource, groups: *mut c_uint, input: *const DevResource, remaining: *mut DevResource, use_flags: c_uint, min_count: c_uint
        );
        cuDevResourceGenerateDesc = "cuDevResourceGenerateDesc" since 12040 (desc: *mut *mut c_void, resources: *mut DevResource, count: c_uint);
        cuGreenCtxCreate = "cuGreenCtxCreate" since 12040 (green: *mut *mut c_void, desc: *mut c_void, device: CUdevice, flags: c_uint);
        cuCtxFromGreenCtx = "cuCtxFromGreenCtx" since 12040 (context: *mut CUcontext, green: *mut c_void);
        cuGreenCtxDestroy = "cuGreenCtxDestroy" since 12040 (green: *mut c_void);
        cuStreamGetGreenCtx = "cuStreamGetGreenCtx" since 12040 (stream: CUstream, green: *mut *mut c_void);
        // Many copies in one call (CUDA 12.8+): the copies of a staged batch of Java arrays
        // (core/transfer/batch.rs). Looked up for 12.8, whose ABI has `failIdx` (memcpy_batch.rs).
        cuMemcpyBatchAsync = "cuMemcpyBatchAsync" since 12080 (
            dsts: *mut CUdeviceptr, srcs: *mut CUdeviceptr, sizes: *mut usize, count: usize, attrs: *mut MemcpyAttributes, attrs_idxs: *mut usize,
            num_attrs: usize, fail_idx: *mut usize, stream: CUstream
        );
        // Conditional nodes (graph_conditional.rs): IF and WHILE nodes added to a capture's graph, their
        // bodies captured into the graph the node owns. cuGraphAddNode is asked for with its 12.2 ABI
        // (no edge data); the feature needs CUDA 12.4 (graph_conditional.rs says why).
        cuGraphConditionalHandleCreate = "cuGraphConditionalHandleCreate" since 12030 (handle: *mut u64, graph: CUgraph, ctx: CUcontext, default_value: c_uint, flags: c_uint);
        cuGraphAddNode = "cuGraphAddNode" since 12020 (node: *mut CUgraphNode, graph: CUgraph, dependencies: *const CUgraphNode, count: usize, params: *mut ConditionalNodeParams);
        cuStreamBeginCaptureToGraph = "cuStreamBeginCaptureToGraph" since 12030 (stream: CUstream, graph: CUgraph, dependencies: *const CUgraphNode, edge_data: *const c_void, count: usize, mode: c_int);
        cuOccupancyMaxPotentialClusterSize = "cuOccupancyMaxPotentialClusterSize" since 11080 (cluster_size: *mut c_int, function: CUfunction, config: *const LaunchConfig);
    }
}
