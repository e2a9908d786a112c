//! The stream-ordered memory pool of one context (rule M1): `cuMemAllocFromPoolAsync` and
//! `cuMemFreeAsync` instead of `cuMemAlloc` and a context-wide wait before `cuMemFree` (rule L3).
//!
//! cuhandle makes a pool of its own per context (`cuMemPoolCreate`) rather than using the
//! device's default pool, so that its release threshold never changes what the application's
//! own `cudaMallocAsync` does. Memory freed into the pool stays reserved for reuse up to the
//! release threshold (`-Dcuhandle.pool.releaseThreshold`, bytes; unlimited by default, as
//! PyTorch's caching allocator keeps what it freed) and goes back to the device with
//! `Handle.trimMemory()`, when an allocation runs out of memory (trim, then one retry), and when
//! the last cuhandle object of the context is gone (the pool is destroyed).

use crate::core::context::Context;
use crate::core::error::{Result, CUDA_ERROR_OUT_OF_MEMORY};
use crate::core::memory::failed_allocation::failed_allocation;
use cudarc::driver::sys::{CUdevice, CUdeviceptr, CUmemAllocationType, CUmemLocationType, CUmemPool_attribute, CUstream};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};

/// `CUmemPoolProps` of cuda.h (the 12.0 layout; later versions use part of `reserved` for fields
/// whose zero value means "the default").
#[repr(C)]
struct PoolProps {
    alloc_type: i32,
    handle_types: i32,
    location_type: i32,
    location_id: i32,
    win32_security_attributes: *mut c_void,
    reserved: [u8; 64],
}
const _: () = assert!(std::mem::size_of::<PoolProps>() == 88);

/// `CU_MEM_ALLOCATION_TYPE_PINNED`: device memory that stays resident.
const ALLOCATION_TYPE_PINNED: i32 = CUmemAllocationType::CU_MEM_ALLOCATION_TYPE_PINNED as i32;
/// `CU_MEM_LOCATION_TYPE_DEVICE`.
const LOCATION_TYPE_DEVICE: i32 = CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE as i32;
/// `CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES` (an `int`).
const ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES: i32 = CUmemPool_attribute::CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES as i32;
/// `CU_MEMPOOL_ATTR_RELEASE_THRESHOLD` (a `cuuint64_t`).
const ATTR_RELEASE_THRESHOLD: i32 = CUmemPool_attribute::CU_MEMPOOL_ATTR_RELEASE_THRESHOLD as i32;
/// `CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT`: bytes the pool holds from the device.
const ATTR_RESERVED_MEM_CURRENT: i32 = CUmemPool_attribute::CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT as i32;
/// `CU_MEMPOOL_ATTR_USED_MEM_CURRENT`: bytes of it handed out and not freed.
const ATTR_USED_MEM_CURRENT: i32 = CUmemPool_attribute::CU_MEMPOOL_ATTR_USED_MEM_CURRENT as i32;

/// "Keep everything": the release threshold when none is configured.
pub const UNLIMITED: u64 = u64::MAX;
static RELEASE_THRESHOLD: AtomicU64 = AtomicU64::new(UNLIMITED);
/// 0 = pools are used where the device supports them; 1 = never (today's synchronous path),
/// `-Dcuhandle.pool.enabled=false`.
static DISABLED: AtomicU64 = AtomicU64::new(0);

/// Sets the release threshold of pools made from now on, and whether pools are used at all.
pub fn configure(release_threshold: u64, enabled: bool) {
    RELEASE_THRESHOLD.store(release_threshold, Ordering::Relaxed);
    DISABLED.store(u64::from(!enabled), Ordering::Relaxed);
}

/// Whether new contexts get a pool when their device supports one.
pub fn enabled() -> bool {
    DISABLED.load(Ordering::Relaxed) == 0
}

pub fn release_threshold() -> u64 {
    RELEASE_THRESHOLD.load(Ordering::Relaxed)
}

/// Bytes a pool holds, as the driver counts them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PoolStats {
    /// Handed out and not yet freed.
    pub used: u64,
    /// Held from the device (used plus cached for reuse).
    pub reserved: u64,
}

pub struct Pool {
    raw: usize,
}

impl Pool {
    /// A pool on `device` with the configured release threshold. The context must be active.
    pub fn create(ctx: &Context, device: CUdevice) -> Result<Pool> {
        let props = PoolProps {
            alloc_type: ALLOCATION_TYPE_PINNED,
            handle_types: 0,
            location_type: LOCATION_TYPE_DEVICE,
            location_id: device,
            win32_security_attributes: std::ptr::null_mut(),
            reserved: [0; 64],
        };
        let driver = ctx.driver();
        let mut raw: *mut c_void = std::ptr::null_mut();
        // SAFETY: the properties are a valid CUmemPoolProps (zeroed reserved part); the
        // out-pointer is a valid local; the context is active.
        ctx.noted(unsafe { driver.cuMemPoolCreate(&mut raw, (&props as *const PoolProps).cast()) })?;
        let pool = Pool { raw: raw as usize };
        let mut threshold = release_threshold();
        // Memory freed on one handle's stream may serve another handle's allocation once the free
        // has run, or when the allocating stream already waits for it, but the driver must not
        // make the allocating stream wait for the freeing one (an internal dependency): that would
        // tie unrelated handles' streams together, and `uses` orders every real dependency itself.
        let mut no_internal_dependencies: i32 = 0;
        // SAFETY: a live pool; the threshold attribute takes a pointer to a cuuint64_t, the reuse
        // policy one to an int.
        let threshold_set = unsafe { driver.cuMemPoolSetAttribute(raw, ATTR_RELEASE_THRESHOLD, (&mut threshold as *mut u64).cast()) };
        let set = ctx.noted(threshold_set.map_err(|e| e.in_operation("cuMemPoolSetAttribute(RELEASE_THRESHOLD)"))).and_then(|()| {
            // SAFETY: as above.
            let policy_set = unsafe {
                driver.cuMemPoolSetAttribute(
                    raw,
                    ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES,
                    (&mut no_internal_dependencies as *mut i32).cast(),
                )
            };
            ctx.noted(policy_set.map_err(|e| e.in_operation("cuMemPoolSetAttribute(REUSE_ALLOW_INTERNAL_DEPENDENCIES)")))
        });
        if let Err(e) = set {
            pool.destroy(ctx);
            return Err(e);
        }
        Ok(pool)
    }

    /// `bytes` (> 0) from the pool, ordered on `stream`, a stream of the pool's context, which is
    /// active or one the driver takes from the stream (`driver::stream_context`). Out of memory:
    /// gives the pool's cached memory back to the device and tries once more.
    pub fn allocate(&self, ctx: &Context, bytes: usize, stream: CUstream) -> Result<CUdeviceptr> {
        match self.try_allocate(ctx, bytes, stream) {
            Ok(ptr) => Ok(ptr),
            Err(e) if e.cuda_code() == Some(CUDA_ERROR_OUT_OF_MEMORY) => {
                self.trim(ctx)?;
                self.try_allocate(ctx, bytes, stream).map_err(|e| failed_allocation(ctx, e, bytes))
            }
            Err(e) => Err(failed_allocation(ctx, e, bytes)),
        }
    }

    fn try_allocate(&self, ctx: &Context, bytes: usize, stream: CUstream) -> Result<CUdeviceptr> {
        let mut ptr: CUdeviceptr = 0;
        // SAFETY: a live pool of the context and a live stream of it (the caller's contract above);
        // the out-pointer is valid.
        unsafe { ctx.driver().cuMemAllocFromPoolAsync(&mut ptr, bytes, self.raw as *mut c_void, stream) }.map(|()| ptr)
    }

    /// Gives cached memory back to the device (`cuMemPoolTrimTo(0)`): what is handed out stays,
    /// and so does memory whose free has not run yet on its stream.
    pub fn trim(&self, ctx: &Context) -> Result<()> {
        let _scope = ctx.activate()?; // also from an allocation made without activation
                                      // SAFETY: a live pool of the context, which is active (the scope above).
        ctx.noted(unsafe { ctx.driver().cuMemPoolTrimTo(self.raw as *mut c_void, 0) })
    }

    pub fn stats(&self, ctx: &Context) -> Result<PoolStats> {
        let read = |attribute: i32, what: &str| -> Result<u64> {
            let mut value = 0u64;
            // SAFETY: a live pool; both attributes are cuuint64_t, written through the pointer.
            let read = unsafe { ctx.driver().cuMemPoolGetAttribute(self.raw as *mut c_void, attribute, (&mut value as *mut u64).cast()) };
            ctx.noted(read.map_err(|e| e.in_operation(what)))?;
            Ok(value)
        };
        Ok(PoolStats {
            used: read(ATTR_USED_MEM_CURRENT, "cuMemPoolGetAttribute(USED_MEM_CURRENT)")?,
            reserved: read(ATTR_RESERVED_MEM_CURRENT, "cuMemPoolGetAttribute(RESERVED_MEM_CURRENT)")?,
        })
    }

    /// Destroys the pool. Memory still handed out or with frees still queued is released by the
    /// driver once those complete (`cuMemPoolDestroy`), so this never waits. The context must be
    /// active.
    pub fn destroy(self, ctx: &Context) {
        // SAFETY: a pool we created, destroyed once (consumes self).
        if let Err(e) = unsafe { ctx.driver().cuMemPoolDestroy(self.raw as *mut c_void) } {
            log::warn!("destroying the memory pool of context id {}: {e}", ctx.id());
        }
    }
}
