/*
 * The contract between the BLAS level 1 kernels in blas1.cu and the host code that launches them.
 * Plain C preprocessor constants only, so that the Rust side can mirror them by reading this file.
 *
 * Launch shape
 *   block = CUH_BLOCK_THREADS threads, no dynamic shared memory. Every kernel assumes exactly
 *   this block size (the reductions size their shared memory from it).
 *
 *   Element-wise ops (scal, axpy, copy, swap), with bps = CUH_COPY_BLOCKS_PER_SM for copy and
 *   CUH_ELEMENTWISE_BLOCKS_PER_SM for the others:
 *     grid = max(1, min(ceil(n / (CUH_BLOCK_THREADS * CUH_ELEMENTWISE_ELEMENTS_PER_THREAD)),
 *                       SMs * bps))
 *   Reductions (dot, nrm2, asum, iamax), with ept = CUH_REDUCE_ELEMENTS_PER_THREAD_F32 or _F64:
 *     grid = max(1, min(ceil(n / (CUH_BLOCK_THREADS * ept)),
 *                       SMs * CUH_REDUCE_BLOCKS_PER_SM,
 *                       CUH_MAX_REDUCE_BLOCKS))
 *   where SMs is CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT and n is the element count (64-bit
 *   arithmetic; the grid fits in 32 bits because of the min).
 *
 *   The kernels are grid-stride loops, so any grid >= 1 is correct (reductions: <= 1024); the
 *   formula only picks a fast one. The cap is what is resident at once: the kernels' register
 *   limits (__launch_bounds__) guarantee that many blocks per SM on every architecture built
 *   (sm_70 to sm_90), so no block waits for a second wave, which would nearly double the time.
 *   The blocks-per-SM values and the per-thread element counts are the fastest measured
 *   (docs/performance-notes.md, "BLAS level 1 kernels").
 *
 * Reduction workspace (dot, nrm2, asum, iamax)
 *   CUH_WORKSPACE_BYTES of device memory, at least 16-byte aligned (cuMemAlloc gives 256),
 *   zeroed once by the host before first use and then shared by every reduction launched on one
 *   stream, one after another (never two at once). Layout: CUH_MAX_REDUCE_BLOCKS partial slots
 *   of CUH_WORKSPACE_SLOT_BYTES each, then a 32-bit arrival counter at
 *   CUH_WORKSPACE_COUNTER_OFFSET. The last block to arrive resets the counter to 0, so the
 *   workspace is ready for the next reduction without a memset. A launch that is aborted
 *   (sticky error) can leave the counter non-zero: zero the workspace again before reusing it.
 *   *result is written once, by the last block (for sequence != 0 as the packet below).

 Host result packet (reductions' last parameter, `unsigned long long sequence`)
   0: *result is written with a plain store of the result's type. Non-zero: result points into
   host memory mapped into the device (pinned, cuMemHostAlloc with CU_MEMHOSTALLOC_DEVICEMAP),
   16-byte aligned, and the last block writes CUH_HOST_RESULT_PACKET_BYTES there in one store:
   four 32-bit words {low 32 bits of the result, flag, high 32 bits (0 for a 4-byte result),
   flag}, flag = the low 32 bits of `sequence`. Each 8-byte half reaches the host whole (as in
   NCCL's LL protocol), so a host that reads its flag in both halves has the whole result, at
   once, without waiting for the kernel's end and without a fence between result and flag.
 */
#ifndef CUHANDLE_BLAS1_ABI_H
#define CUHANDLE_BLAS1_ABI_H

#define CUH_BLOCK_THREADS 256

#define CUH_ELEMENTWISE_BLOCKS_PER_SM 2
#define CUH_ELEMENTWISE_ELEMENTS_PER_THREAD 1
/* copy holds one array's vectors per thread, not two (axpy, swap): at 4 blocks per SM its
 * registers still fit, and twice the loads in flight make it faster wherever a 2-block grid needs
 * more than one pass. scal, axpy and swap are slower at 4: their registers spill. (The A/B
 * figures are in docs/performance-notes.md.) */
#define CUH_COPY_BLOCKS_PER_SM 4

#define CUH_REDUCE_BLOCKS_PER_SM 4
#define CUH_REDUCE_ELEMENTS_PER_THREAD_F32 16
#define CUH_REDUCE_ELEMENTS_PER_THREAD_F64 8

/* The reductions' last block combines at most this many partials (4 per thread). */
#define CUH_MAX_REDUCE_BLOCKS 1024

/* One slot holds the largest per-block partial: three doubles for dnrm2 (Blue's accumulators). */
#define CUH_WORKSPACE_SLOT_BYTES 32
#define CUH_WORKSPACE_COUNTER_OFFSET (CUH_MAX_REDUCE_BLOCKS * CUH_WORKSPACE_SLOT_BYTES)
#define CUH_WORKSPACE_BYTES (CUH_WORKSPACE_COUNTER_OFFSET + 16)

/* Bytes of the host result packet (see above). */
#define CUH_HOST_RESULT_PACKET_BYTES 16

#endif
