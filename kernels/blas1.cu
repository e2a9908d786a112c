// BLAS level 1 for float (s) and double (d): scal, axpy, copy, swap, dot, nrm2, asum, iamax.
//
// Launch contract (blas1_abi.h has the constants, the grid formula and the host result packet
// that the reductions' last parameter, sequence, asks for): n >= 1, blockDim.x ==
// CUH_BLOCK_THREADS, any gridDim.x >= 1 (<= CUH_MAX_REDUCE_BLOCKS for the reductions). Pointers
// point at the lowest-address element the operation touches; element i of a vector with
// increment inc is p[inc >= 0 ? i * inc : (n - 1 - i) * -inc], as in reference BLAS. Pointers are
// only element-aligned: buffers may be slices at any element offset.
//
// Every operation is memory-bound, so the work is all about keeping enough bytes in flight and
// moving whole sectors:
//   - Unit stride takes the vector path: scalar head elements up to a kVectorAlignBytes boundary
//     of y (of x for the one-vector ops), then 16-byte loads and stores (float4 / double2),
//     several independent ones per array per thread, then a scalar tail.
//     Slices at arbitrary element offsets thereby stay fully vectorised. When x is at a
//     different offset from a 16-byte boundary than y, x is accessed element by element at
//     constant offsets from each vector's address, which keeps the register cost, and so the
//     loads in flight, of the aligned case.
//   - Other increments (including a zero read increment) take a scalar grid-stride path, also
//     with several independent loads per thread.
//   - Grids are sized to what is resident on the device at once (grid-stride loops), so there
//     is no tail wave.
//
// Reductions are one launch and deterministic: the order of every addition depends only on n,
// the grid and the pointers' alignment, never on timing. Each thread accumulates its elements in
// a fixed order, each block reduces in a fixed shuffle tree, block b stores its partial in
// workspace slot b, and the last block to arrive (found with an atomic counter) combines the
// slots in slot order and writes *result, then resets the counter for the next reduction.

#include <stdint.h>

#include "blas1_abi.h"

namespace {

constexpr int kThreads = CUH_BLOCK_THREADS;
constexpr int kWarps = kThreads / 32;

// 16-byte vectors per array that each thread loads before it uses any. Both pairings with the
// blocks per SM in blas1_abi.h keep 64 KB per array in flight per SM, about twice what HBM's
// latency-bandwidth product asks per SM; the element-wise ops are fastest with 8 vectors at 2
// blocks per SM, the reductions with 4 at 4 (docs/performance-notes.md, "BLAS level 1 kernels").
// copy, with one array's vectors per thread, keeps 8 at 4 blocks per SM
// (CUH_COPY_BLOCKS_PER_SM: 128 KB in flight).
constexpr int kElementwiseUnroll = 8;
constexpr int kReduceUnroll = 4;
// Element loads in flight per thread on the strided path: more than vectors, to make up for
// their smaller size, as far as registers allow (two-array ops would spill at 16).
constexpr int kStridedUnroll1 = 16;
constexpr int kStridedUnroll2 = 8;
// Where the vector part of a unit-stride operation starts. 16 bytes would do for the vector
// accesses, but writes reach full speed only when each warp's 512-byte store starts on a
// 256-byte boundary (presumably because sectors and lines shared by two warps get written in
// parts; the figures are in docs/performance-notes.md).
constexpr unsigned kVectorAlignBytes = 256;

// Register caps that guarantee the resident block counts that blas1_abi.h tells the host to
// size grids by.
#define CUH_ELEMENTWISE_BOUNDS __launch_bounds__(CUH_BLOCK_THREADS, CUH_ELEMENTWISE_BLOCKS_PER_SM)
#define CUH_COPY_BOUNDS __launch_bounds__(CUH_BLOCK_THREADS, CUH_COPY_BLOCKS_PER_SM)
#define CUH_REDUCE_BOUNDS __launch_bounds__(CUH_BLOCK_THREADS, CUH_REDUCE_BLOCKS_PER_SM)

// ---------------------------------------------------------------------------------------------
// 16-byte vectors

template <class T>
struct Pack {
  static constexpr int kWidth = 16 / sizeof(T);
  T v[kWidth];
};

// Read-only data (never written by the kernel) may use the non-coherent load path.
__device__ __forceinline__ Pack<float> vload_ro(const float* p) {
  const float4 a = __ldg(reinterpret_cast<const float4*>(p));
  return {{a.x, a.y, a.z, a.w}};
}
__device__ __forceinline__ Pack<double> vload_ro(const double* p) {
  const double2 a = __ldg(reinterpret_cast<const double2*>(p));
  return {{a.x, a.y}};
}
__device__ __forceinline__ Pack<float> vload_rw(const float* p) {
  const float4 a = *reinterpret_cast<const float4*>(p);
  return {{a.x, a.y, a.z, a.w}};
}
__device__ __forceinline__ Pack<double> vload_rw(const double* p) {
  const double2 a = *reinterpret_cast<const double2*>(p);
  return {{a.x, a.y}};
}
// A plain float4 store through a pointer gets split by nvcc 11.8 into 4- and 8-byte stores here
// (the 16-byte alignment is lost on the way); the store intrinsic keeps one 16-byte store.
__device__ __forceinline__ void vstore(float* p, const Pack<float>& a) {
  __stwb(reinterpret_cast<float4*>(p), make_float4(a.v[0], a.v[1], a.v[2], a.v[3]));
}
__device__ __forceinline__ void vstore(double* p, const Pack<double>& a) {
  __stwb(reinterpret_cast<double2*>(p), make_double2(a.v[0], a.v[1]));
}

// How a vector op reaches its second array (x): as 16-byte vectors when x is as far from a
// 16-byte boundary as the aligned array, otherwise as kWidth single elements.
struct Vectors {
  template <class T>
  __device__ static Pack<T> load_ro(const T* p) { return vload_ro(p); }
  template <class T>
  __device__ static Pack<T> load_rw(const T* p) { return vload_rw(p); }
  template <class T>
  __device__ static void store(T* p, const Pack<T>& a) { vstore(p, a); }
};
struct Elements {
  template <class T>
  __device__ static Pack<T> load_ro(const T* p) {
    Pack<T> a;
#pragma unroll
    for (int j = 0; j < Pack<T>::kWidth; ++j) a.v[j] = __ldg(p + j);
    return a;
  }
  template <class T>
  __device__ static Pack<T> load_rw(const T* p) {
    Pack<T> a;
#pragma unroll
    for (int j = 0; j < Pack<T>::kWidth; ++j) a.v[j] = p[j];
    return a;
  }
  template <class T>
  __device__ static void store(T* p, const Pack<T>& a) {
#pragma unroll
    for (int j = 0; j < Pack<T>::kWidth; ++j) p[j] = a.v[j];
  }
};

// Elements before p + head is kVectorAlignBytes-aligned (p is element-aligned), at most n.
template <class T>
__device__ __forceinline__ long long aligned_head(const T* p, long long n) {
  constexpr unsigned mask = kVectorAlignBytes - 1;
  const unsigned misalign = static_cast<unsigned>(reinterpret_cast<uintptr_t>(p)) & mask;
  const long long head = ((kVectorAlignBytes - misalign) & mask) / sizeof(T);
  return head < n ? head : n;
}

// Whether the head that aligns one pointer leaves the other 16-byte aligned too.
template <class T>
__device__ __forceinline__ bool same_misalignment(const T* x, const T* y) {
  return ((reinterpret_cast<uintptr_t>(x) ^ reinterpret_cast<uintptr_t>(y)) & 15u) == 0;
}

// Reference BLAS indexing folded into a base pointer: element i is at base[i * inc] for any
// sign of inc (a zero inc reads p[0] every time).
template <class T>
__device__ __forceinline__ T* strided_base(T* p, long long n, long long inc) {
  return inc >= 0 ? p : p + (n - 1) * -inc;
}

// ---------------------------------------------------------------------------------------------
// Grid-stride driver.
//
// An op has Item load(i) and apply(i, item, acc). The driver issues up to U loads before the
// first apply, so U independent loads per array are in flight per thread. The last round is
// predicated rather than left to a one-load-at-a-time remainder loop, so a small n, which gets
// one round per thread, is never latency-bound. A thread visits its indices in increasing order
// (iamax relies on that to keep the first of equal maxima).
//
// When the grid has a thread for every index (every n up to the resident threads for the
// element-wise ops, whose grid has a thread per element; the scalar head and tail always), each
// thread has at most one index, and a plain bounds check replaces the loop: the same loads and
// applies in the same order (the same bits for reductions), without the U predicates and 64-bit
// addresses of the unrolled round or the loop's trip count (a 64-bit division for U = 1). At
// those sizes a call is a few microseconds, most of it fixed cost, and this is the part of it
// that each thread spends before its first load and after it.

struct NoAcc {};

template <int U, class Op, class Acc>
__device__ __forceinline__ void grid_stride(long long count, Op op, Acc& acc) {
  const long long stride = static_cast<long long>(gridDim.x) * kThreads;
  const long long first = static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x;
  if (count <= stride) {
    if (first < count) op.apply(first, op.load(first), acc);
    return;
  }
  for (long long i = first; i < count; i += U * stride) {
    typename Op::Item items[U];
#pragma unroll
    for (int k = 0; k < U; ++k) {
      if (i + k * stride < count) items[k] = op.load(i + k * stride);
    }
#pragma unroll
    for (int k = 0; k < U; ++k) {
      if (i + k * stride < count) op.apply(i + k * stride, items[k], acc);
    }
  }
}

// Runs a unit-stride operation: scalar head up to the kVectorAlignBytes boundary of `aligned`,
// vectors, scalar tail. ScalarOp and VectorOp provide at(offset): the same op starting `offset`
// elements further on.
template <class T, int U, class ScalarOp, class VectorOp, class Acc>
__device__ __forceinline__ void unit_stride(long long n, const T* aligned, ScalarOp scalar,
                                            VectorOp vector, Acc& acc) {
  constexpr int W = Pack<T>::kWidth;
  const long long head = aligned_head(aligned, n);
  const long long vectors = (n - head) / W;
  const long long tail_begin = head + vectors * W;
  grid_stride<1>(head, scalar, acc);
  grid_stride<U>(vectors, vector.at(head), acc);
  grid_stride<1>(n - tail_begin, scalar.at(tail_begin), acc);
}

// ---------------------------------------------------------------------------------------------
// scal: x = alpha * x. Multiplies even when alpha is 0, as reference BLAS does (NaN * 0 stays
// NaN).

template <class T>
struct ScalScalar {
  using Item = T;
  T alpha;
  T* x;
  long long incx;
  __device__ ScalScalar at(long long off) const { return {alpha, x + off, incx}; }
  __device__ T load(long long i) const { return x[i * incx]; }
  __device__ void apply(long long i, T v, NoAcc&) const { x[i * incx] = alpha * v; }
};

template <class T>
struct ScalVector {
  using Item = Pack<T>;
  T alpha;
  T* x;
  __device__ ScalVector at(long long off) const { return {alpha, x + off}; }
  __device__ Item load(long long i) const { return vload_rw(x + i * Item::kWidth); }
  __device__ void apply(long long i, Item v, NoAcc&) const {
#pragma unroll
    for (int j = 0; j < Item::kWidth; ++j) v.v[j] *= alpha;
    vstore(x + i * Item::kWidth, v);
  }
};

template <class T>
__device__ __forceinline__ void scal(long long n, T alpha, T* x, long long incx) {
  NoAcc none;
  if (incx == 1) {
    unit_stride<T, kElementwiseUnroll>(n, x, ScalScalar<T>{alpha, x, 1},
                                       ScalVector<T>{alpha, x}, none);
  } else {
    grid_stride<kStridedUnroll1>(n, ScalScalar<T>{alpha, strided_base(x, n, incx), incx}, none);
  }
}

// ---------------------------------------------------------------------------------------------
// axpy: y = alpha * x + y, with one rounding (fma).

template <class T>
struct AxpyScalar {
  struct Item {
    T x, y;
  };
  T alpha;
  const T* x;
  long long incx;
  T* y;
  long long incy;
  __device__ AxpyScalar at(long long off) const { return {alpha, x + off, incx, y + off, incy}; }
  __device__ Item load(long long i) const { return {__ldg(x + i * incx), y[i * incy]}; }
  __device__ void apply(long long i, Item v, NoAcc&) const { y[i * incy] = fma(alpha, v.x, v.y); }
};

template <class T, class XAccess>
struct AxpyVector {
  struct Item {
    Pack<T> x, y;
  };
  static constexpr int W = Pack<T>::kWidth;
  T alpha;
  const T* x;
  T* y;
  __device__ AxpyVector at(long long off) const { return {alpha, x + off, y + off}; }
  __device__ Item load(long long i) const {
    return {XAccess::load_ro(x + i * W), vload_rw(y + i * W)};
  }
  __device__ void apply(long long i, Item v, NoAcc&) const {
#pragma unroll
    for (int j = 0; j < W; ++j) v.y.v[j] = fma(alpha, v.x.v[j], v.y.v[j]);
    vstore(y + i * W, v.y);
  }
};

template <class T>
__device__ __forceinline__ void axpy(long long n, T alpha, const T* x, long long incx, T* y,
                                     long long incy) {
  // Reference BLAS returns before touching y when alpha is 0, so Inf or NaN in x must not leak
  // into y through 0 * x.
  if (alpha == T(0)) return;
  NoAcc none;
  if (incx == 1 && incy == 1) {
    const AxpyScalar<T> scalar{alpha, x, 1, y, 1};
    if (same_misalignment(x, y)) {
      unit_stride<T, kElementwiseUnroll>(n, y, scalar, AxpyVector<T, Vectors>{alpha, x, y}, none);
    } else {
      unit_stride<T, kElementwiseUnroll>(n, y, scalar, AxpyVector<T, Elements>{alpha, x, y},
                                         none);
    }
  } else {
    grid_stride<kStridedUnroll2>(
        n, AxpyScalar<T>{alpha, strided_base(x, n, incx), incx, strided_base(y, n, incy), incy},
        none);
  }
}

// ---------------------------------------------------------------------------------------------
// copy: y = x

template <class T>
struct CopyScalar {
  using Item = T;
  const T* x;
  long long incx;
  T* y;
  long long incy;
  __device__ CopyScalar at(long long off) const { return {x + off, incx, y + off, incy}; }
  __device__ T load(long long i) const { return __ldg(x + i * incx); }
  __device__ void apply(long long i, T v, NoAcc&) const { y[i * incy] = v; }
};

template <class T, class XAccess>
struct CopyVector {
  using Item = Pack<T>;
  const T* x;
  T* y;
  __device__ CopyVector at(long long off) const { return {x + off, y + off}; }
  __device__ Item load(long long i) const { return XAccess::load_ro(x + i * Item::kWidth); }
  __device__ void apply(long long i, const Item& v, NoAcc&) const {
    vstore(y + i * Item::kWidth, v);
  }
};

template <class T>
__device__ __forceinline__ void copy(long long n, const T* x, long long incx, T* y,
                                     long long incy) {
  NoAcc none;
  if (incx == 1 && incy == 1) {
    const CopyScalar<T> scalar{x, 1, y, 1};
    if (same_misalignment(x, y)) {
      unit_stride<T, kElementwiseUnroll>(n, y, scalar, CopyVector<T, Vectors>{x, y}, none);
    } else {
      unit_stride<T, kElementwiseUnroll>(n, y, scalar, CopyVector<T, Elements>{x, y}, none);
    }
  } else {
    grid_stride<kStridedUnroll2>(
        n, CopyScalar<T>{strided_base(x, n, incx), incx, strided_base(y, n, incy), incy}, none);
  }
}

// ---------------------------------------------------------------------------------------------
// swap: x <-> y

template <class T>
struct SwapScalar {
  struct Item {
    T x, y;
  };
  T* x;
  long long incx;
  T* y;
  long long incy;
  __device__ SwapScalar at(long long off) const { return {x + off, incx, y + off, incy}; }
  __device__ Item load(long long i) const { return {x[i * incx], y[i * incy]}; }
  __device__ void apply(long long i, Item v, NoAcc&) const {
    x[i * incx] = v.y;
    y[i * incy] = v.x;
  }
};

template <class T, class XAccess>
struct SwapVector {
  struct Item {
    Pack<T> x, y;
  };
  static constexpr int W = Pack<T>::kWidth;
  T* x;
  T* y;
  __device__ SwapVector at(long long off) const { return {x + off, y + off}; }
  __device__ Item load(long long i) const {
    return {XAccess::load_rw(x + i * W), vload_rw(y + i * W)};
  }
  __device__ void apply(long long i, const Item& v, NoAcc&) const {
    XAccess::store(x + i * W, v.y);
    vstore(y + i * W, v.x);
  }
};

template <class T>
__device__ __forceinline__ void swap(long long n, T* x, long long incx, T* y, long long incy) {
  NoAcc none;
  if (incx == 1 && incy == 1) {
    const SwapScalar<T> scalar{x, 1, y, 1};
    if (same_misalignment(x, y)) {
      unit_stride<T, kElementwiseUnroll>(n, y, scalar, SwapVector<T, Vectors>{x, y}, none);
    } else {
      unit_stride<T, kElementwiseUnroll>(n, y, scalar, SwapVector<T, Elements>{x, y}, none);
    }
  } else {
    grid_stride<kStridedUnroll2>(
        n, SwapScalar<T>{strided_base(x, n, incx), incx, strided_base(y, n, incy), incy}, none);
  }
}

// ---------------------------------------------------------------------------------------------
// Reduction accumulators. Each has identity(), combine(a, b) (a holds the earlier elements),
// shfl_down and a workspace load that bypasses L1 (the partials were written by other SMs).

struct Sum {
  double s;
  __device__ static Sum identity() { return {0.0}; }
};
__device__ __forceinline__ Sum combine(Sum a, Sum b) { return {a.s + b.s}; }
__device__ __forceinline__ Sum shfl_down(Sum a, int d) {
  return {__shfl_down_sync(0xffffffffu, a.s, d)};
}
__device__ __forceinline__ Sum load_cg(const Sum* p) { return {__ldcg(&p->s)}; }

// Blue's algorithm (LAPACK 3.10 dnrm2): squares of tiny values scaled up, of huge values scaled
// down, so no square overflows or underflows.
struct Blue {
  double small, medium, big;
  __device__ static Blue identity() { return {0.0, 0.0, 0.0}; }
};
__device__ __forceinline__ Blue combine(Blue a, Blue b) {
  return {a.small + b.small, a.medium + b.medium, a.big + b.big};
}
__device__ __forceinline__ Blue shfl_down(Blue a, int d) {
  return {__shfl_down_sync(0xffffffffu, a.small, d), __shfl_down_sync(0xffffffffu, a.medium, d),
          __shfl_down_sync(0xffffffffu, a.big, d)};
}
__device__ __forceinline__ Blue load_cg(const Blue* p) {
  return {__ldcg(&p->small), __ldcg(&p->medium), __ldcg(&p->big)};
}

// Largest |x| and its 0-based index. NaN compares false, so an accumulator that starts at -1
// never takes a NaN element; the index of an empty accumulator is never reported (see iamax).
template <class T>
struct MaxAbs {
  T value;
  long long index;
  __device__ static MaxAbs identity() { return {T(-1), 0x7fffffffffffffffLL}; }
};
template <class T>
__device__ __forceinline__ MaxAbs<T> combine(MaxAbs<T> a, MaxAbs<T> b) {
  // Threads interleave their indices, so equal values are decided by index, not by position.
  return (b.value > a.value || (b.value == a.value && b.index < a.index)) ? b : a;
}
template <class T>
__device__ __forceinline__ MaxAbs<T> shfl_down(MaxAbs<T> a, int d) {
  return {__shfl_down_sync(0xffffffffu, a.value, d), __shfl_down_sync(0xffffffffu, a.index, d)};
}
template <class T>
__device__ __forceinline__ MaxAbs<T> load_cg(const MaxAbs<T>* p) {
  return {__ldcg(&p->value), __ldcg(&p->index)};
}

// Fixed tree over the block; the result is valid in thread 0 only.
template <class Acc>
__device__ __forceinline__ Acc block_reduce(Acc a) {
  __shared__ Acc warp_partials[kWarps];
#pragma unroll
  for (int d = 16; d > 0; d >>= 1) a = combine(a, shfl_down(a, d));
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (lane == 0) warp_partials[warp] = a;
  __syncthreads();
  if (warp == 0) {
    a = lane < kWarps ? warp_partials[lane] : Acc::identity();
#pragma unroll
    for (int d = kWarps / 2; d > 0; d >>= 1) a = combine(a, shfl_down(a, d));
  }
  return a;
}

// Where a reduction's result goes (blas1_abi.h, host result packet). Sequence 0: a plain store
// of the value (a device result, or device memory the host copies from). Otherwise `result` is
// mapped host memory, and the value goes there as one 16-byte packet {low 32 bits, flag, high 32
// bits, flag} with flag = the sequence number's low 32 bits, as NCCL's LL protocol stores data
// with flags: each 8-byte half reaches the host whole, so a host that sees the flag in both
// halves has the whole value, and no system-wide fence is needed between a value and a flag
// written after it (that fence, waiting for the value's write to the host to complete, was on
// the path of every host result).
template <class R>
struct ResultSlot {
  static_assert(sizeof(R) == 4 || sizeof(R) == 8, "results are 4 or 8 bytes");
  R* result;
  unsigned long long sequence;
  __device__ void store(R value) const {
    if (sequence == 0) {
      *result = value;
      return;
    }
    unsigned long long bits = 0;
    memcpy(&bits, &value, sizeof(R));
    const unsigned flag = static_cast<unsigned>(sequence);
    asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(result),
                 "r"(static_cast<unsigned>(bits)), "r"(flag),
                 "r"(static_cast<unsigned>(bits >> 32)), "r"(flag)
                 : "memory");
  }
};

// Block partial -> workspace slot; the last block to arrive combines all slots in slot order
// and calls finish(total) in its thread 0, then resets the arrival counter to 0.
//
// A grid of one block (the host's grid for small n, e.g. every host-result reduction of 1000
// elements) finishes straight from its block reduction: the two-phase path would put a
// workspace store, two fences, an atomic round trip to L2, a reload and a second block
// reduction on the path to the result. The counter is not touched and stays 0. The result has
// the two-phase path's bits: that path's second phase computes combine(identity, partial) and
// then only combines with identities, which leave a value unchanged; the one combine with the
// identity is kept here because it is not a no-op for a ddot partial of -0.0 (products that
// underflow to -0.0), which it turns into +0.0, as reference BLAS's 0.0 + x does.
template <class Acc, class Finish>
__device__ __forceinline__ void reduce_grid(Acc acc, void* workspace, Finish finish) {
  static_assert(sizeof(Acc) <= CUH_WORKSPACE_SLOT_BYTES, "partial does not fit a workspace slot");
  if (gridDim.x == 1) {
    acc = block_reduce(acc);
    if (threadIdx.x == 0) {
      finish(combine(Acc::identity(), acc));
    }
    return;
  }
  char* const base = static_cast<char*>(workspace);
  unsigned* const counter = reinterpret_cast<unsigned*>(base + CUH_WORKSPACE_COUNTER_OFFSET);
  // Slots are CUH_WORKSPACE_SLOT_BYTES apart whatever the partial's size.
  auto slot = [base](unsigned b) {
    return reinterpret_cast<Acc*>(base + b * CUH_WORKSPACE_SLOT_BYTES);
  };
  __shared__ bool is_last;

  acc = block_reduce(acc);
  if (threadIdx.x == 0) {
    *slot(blockIdx.x) = acc;
    // Publish the partial before announcing arrival.
    __threadfence();
    is_last = atomicAdd(counter, 1u) == gridDim.x - 1;
  }
  __syncthreads();
  if (!is_last) return;

  // Every other block's partial is visible once its arrival is; order our reads after the
  // atomic we observed.
  __threadfence();
  Acc total = Acc::identity();
  for (unsigned b = threadIdx.x; b < gridDim.x; b += kThreads) {
    total = combine(total, load_cg(slot(b)));
  }
  total = block_reduce(total);
  if (threadIdx.x == 0) {
    finish(total);
    // Only this launch uses the workspace now and every block has arrived, so a plain store
    // leaves it ready for the next reduction on the stream.
    *counter = 0;
  }
}

// ---------------------------------------------------------------------------------------------
// Per-element accumulation. Float inputs accumulate in double: exact products and squares, and
// a sum 2^29 times more precise than float, at no cost in a memory-bound loop.

__device__ __forceinline__ void add_product(Sum& acc, float x, float y) {
  acc.s = fma(static_cast<double>(x), static_cast<double>(y), acc.s);
}
__device__ __forceinline__ void add_product(Sum& acc, double x, double y) {
  acc.s = fma(x, y, acc.s);
}
__device__ __forceinline__ void add_abs(Sum& acc, float x) {
  acc.s += fabs(static_cast<double>(x));
}
__device__ __forceinline__ void add_abs(Sum& acc, double x) { acc.s += fabs(x); }
// float: a double holds the square of any finite float, so the plain sum neither overflows nor
// underflows.
__device__ __forceinline__ void add_square(Sum& acc, float x) {
  const double d = x;
  acc.s = fma(d, d, acc.s);
}

// LAPACK 3.10 la_constants for double: tsml = 2^ceil((minexponent - 1) / 2),
// tbig = 2^floor((maxexponent - digits + 1) / 2), ssml = 2^-floor((minexponent - digits) / 2),
// sbig = 2^-ceil((maxexponent + digits - 1) / 2), with minexponent -1021, maxexponent 1024,
// digits 53.
constexpr double kBlueTsml = 0x1p-511;
constexpr double kBlueTbig = 0x1p+486;
constexpr double kBlueSsml = 0x1p+537;
constexpr double kBlueSbig = 0x1p-538;

__device__ __forceinline__ void add_square(Blue& acc, double x) {
  const double ax = fabs(x);
  // Branch-free: each element goes to exactly one accumulator. NaN fails both tests and lands in
  // medium, Inf lands in big; the final combination turns those into NaN and Inf. LAPACK skips
  // small values once a big one was seen; here they are always summed and simply unused when
  // big is non-zero, which gives the same result.
  const bool big = ax > kBlueTbig;
  const bool small = ax < kBlueTsml;
  const double scaled = ax * (big ? kBlueSbig : (small ? kBlueSsml : 1.0));
  const double sq = scaled * scaled;
  acc.big += big ? sq : 0.0;
  acc.small += small ? sq : 0.0;
  acc.medium += (big || small) ? 0.0 : sq;
}

// LAPACK 3.10 dnrm2's final combination of the three accumulators.
__device__ __forceinline__ double blue_finish(Blue a) {
  double scale, sumsq;
  const bool medium_used = a.medium > 0.0 || a.medium != a.medium;
  if (a.big > 0.0) {
    // Combine big and medium; small values are negligible next to a big one.
    if (medium_used) a.big += (a.medium * kBlueSbig) * kBlueSbig;
    scale = 1.0 / kBlueSbig;
    sumsq = a.big;
  } else if (a.small > 0.0) {
    if (medium_used) {
      const double medium = sqrt(a.medium);
      const double small = sqrt(a.small) / kBlueSsml;
      const double ymin = small > medium ? medium : small;
      const double ymax = small > medium ? small : medium;
      scale = 1.0;
      sumsq = ymax * ymax * (1.0 + (ymin / ymax) * (ymin / ymax));
    } else {
      scale = 1.0 / kBlueSsml;
      sumsq = a.small;
    }
  } else {
    scale = 1.0;
    sumsq = a.medium;
  }
  return scale * sqrt(sumsq);
}

// ---------------------------------------------------------------------------------------------
// Reductions over one vector. Rule::add(acc, x, element) accumulates one element.

struct AbsSum {
  template <class T>
  __device__ static void add(Sum& acc, T x, long long) { add_abs(acc, x); }
};

struct SquareSum {
  __device__ static void add(Sum& acc, float x, long long) { add_square(acc, x); }
  __device__ static void add(Blue& acc, double x, long long) { add_square(acc, x); }
};

struct FirstMaxAbs {
  // Strict: among equal values a thread keeps its first, and it visits elements in increasing
  // order.
  template <class T>
  __device__ static void add(MaxAbs<T>& acc, T x, long long element) {
    const T a = fabs(x);
    if (a > acc.value) {
      acc.value = a;
      acc.index = element;
    }
  }
};

template <class Rule, class T>
struct Reduce1Scalar {
  using Item = T;
  const T* x;
  long long incx;
  long long first;  // element number of x[0]
  __device__ Reduce1Scalar at(long long off) const { return {x + off, incx, first + off}; }
  __device__ T load(long long i) const { return __ldg(x + i * incx); }
  template <class Acc>
  __device__ void apply(long long i, T v, Acc& acc) const { Rule::add(acc, v, first + i); }
};

template <class Rule, class T>
struct Reduce1Vector {
  using Item = Pack<T>;
  static constexpr int W = Item::kWidth;
  const T* x;
  long long first;
  __device__ Reduce1Vector at(long long off) const { return {x + off, first + off}; }
  __device__ Item load(long long i) const { return vload_ro(x + i * W); }
  template <class Acc>
  __device__ void apply(long long i, const Item& v, Acc& acc) const {
#pragma unroll
    for (int j = 0; j < W; ++j) Rule::add(acc, v.v[j], first + i * W + j);
  }
};

// `acc` is the calling thread's starting accumulator (the identity unless the op seeds one).
template <class Rule, class Acc, class T>
__device__ __forceinline__ Acc reduce1(long long n, const T* x, long long incx,
                                       Acc acc = Acc::identity()) {
  if (incx == 1) {
    unit_stride<T, kReduceUnroll>(n, x, Reduce1Scalar<Rule, T>{x, 1, 0},
                                  Reduce1Vector<Rule, T>{x, 0}, acc);
  } else {
    grid_stride<kStridedUnroll1>(n, Reduce1Scalar<Rule, T>{strided_base(x, n, incx), incx, 0},
                                 acc);
  }
  return acc;
}

// ---------------------------------------------------------------------------------------------
// dot

template <class T>
struct DotScalar {
  struct Item {
    T x, y;
  };
  const T* x;
  long long incx;
  const T* y;
  long long incy;
  __device__ DotScalar at(long long off) const { return {x + off, incx, y + off, incy}; }
  __device__ Item load(long long i) const { return {__ldg(x + i * incx), __ldg(y + i * incy)}; }
  __device__ void apply(long long, Item v, Sum& acc) const { add_product(acc, v.x, v.y); }
};

template <class T, class XAccess>
struct DotVector {
  struct Item {
    Pack<T> x, y;
  };
  static constexpr int W = Pack<T>::kWidth;
  const T* x;
  const T* y;
  __device__ DotVector at(long long off) const { return {x + off, y + off}; }
  __device__ Item load(long long i) const {
    return {XAccess::load_ro(x + i * W), vload_ro(y + i * W)};
  }
  __device__ void apply(long long, const Item& v, Sum& acc) const {
#pragma unroll
    for (int j = 0; j < W; ++j) add_product(acc, v.x.v[j], v.y.v[j]);
  }
};

template <class T>
__device__ __forceinline__ void dot(long long n, const T* x, long long incx, const T* y,
                                    long long incy, void* workspace, T* result,
                                    unsigned long long sequence) {
  Sum acc = Sum::identity();
  if (incx == 1 && incy == 1) {
    const DotScalar<T> scalar{x, 1, y, 1};
    if (same_misalignment(x, y)) {
      unit_stride<T, kReduceUnroll>(n, y, scalar, DotVector<T, Vectors>{x, y}, acc);
    } else {
      unit_stride<T, kReduceUnroll>(n, y, scalar, DotVector<T, Elements>{x, y}, acc);
    }
  } else {
    grid_stride<kStridedUnroll2>(
        n, DotScalar<T>{strided_base(x, n, incx), incx, strided_base(y, n, incy), incy}, acc);
  }
  const ResultSlot<T> out{result, sequence};
  reduce_grid(acc, workspace, [&](Sum total) { out.store(static_cast<T>(total.s)); });
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Entry points

// Programmatic dependent launch (compute capability 9.0+; blas.rs launches these kernels with
// CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION there): the next BLAS kernel on the stream
// may be scheduled while this one still runs, which hides the launch gap between dependent
// kernels (graphs of BLAS calls, back-to-back calls). Every kernel first waits until the kernels
// before it on the stream have completed and their writes are visible (griddepcontrol.wait), so
// it never reads or writes memory early; then it lets its own dependents be scheduled. On older
// devices these are no-ops and blas.rs launches without the attribute.
__device__ __forceinline__ void cuh_dependent_launch_begin() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}

extern "C" __global__ void CUH_ELEMENTWISE_BOUNDS cuh_sscal(long long n, float alpha, float* x,
                                                            long long incx) {
  cuh_dependent_launch_begin();
  scal(n, alpha, x, incx);
}
extern "C" __global__ void CUH_ELEMENTWISE_BOUNDS cuh_dscal(long long n, double alpha, double* x,
                                                            long long incx) {
  cuh_dependent_launch_begin();
  scal(n, alpha, x, incx);
}

extern "C" __global__ void CUH_ELEMENTWISE_BOUNDS cuh_saxpy(long long n, float alpha,
                                                            const float* __restrict__ x,
                                                            long long incx, float* __restrict__ y,
                                                            long long incy) {
  cuh_dependent_launch_begin();
  axpy(n, alpha, x, incx, y, incy);
}
extern "C" __global__ void CUH_ELEMENTWISE_BOUNDS cuh_daxpy(long long n, double alpha,
                                                            const double* __restrict__ x,
                                                            long long incx, double* __restrict__ y,
                                                            long long incy) {
  cuh_dependent_launch_begin();
  axpy(n, alpha, x, incx, y, incy);
}

extern "C" __global__ void CUH_COPY_BOUNDS cuh_scopy(long long n,
                                                            const float* __restrict__ x,
                                                            long long incx, float* __restrict__ y,
                                                            long long incy) {
  cuh_dependent_launch_begin();
  copy(n, x, incx, y, incy);
}
extern "C" __global__ void CUH_COPY_BOUNDS cuh_dcopy(long long n,
                                                            const double* __restrict__ x,
                                                            long long incx, double* __restrict__ y,
                                                            long long incy) {
  cuh_dependent_launch_begin();
  copy(n, x, incx, y, incy);
}

extern "C" __global__ void CUH_ELEMENTWISE_BOUNDS cuh_sswap(long long n, float* __restrict__ x,
                                                            long long incx, float* __restrict__ y,
                                                            long long incy) {
  cuh_dependent_launch_begin();
  swap(n, x, incx, y, incy);
}
extern "C" __global__ void CUH_ELEMENTWISE_BOUNDS cuh_dswap(long long n, double* __restrict__ x,
                                                            long long incx, double* __restrict__ y,
                                                            long long incy) {
  cuh_dependent_launch_begin();
  swap(n, x, incx, y, incy);
}

extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_sdot(long long n, const float* __restrict__ x,
                                                      long long incx, const float* __restrict__ y,
                                                      long long incy, void* workspace,
                                                      float* result,
                                                      unsigned long long sequence) {
  cuh_dependent_launch_begin();
  dot(n, x, incx, y, incy, workspace, result, sequence);
}
extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_ddot(long long n, const double* __restrict__ x,
                                                      long long incx, const double* __restrict__ y,
                                                      long long incy, void* workspace,
                                                      double* result,
                                                      unsigned long long sequence) {
  cuh_dependent_launch_begin();
  dot(n, x, incx, y, incy, workspace, result, sequence);
}

extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_snrm2(long long n, const float* __restrict__ x,
                                                       long long incx, void* workspace,
                                                       float* result,
                                                       unsigned long long sequence) {
  cuh_dependent_launch_begin();
  const Sum acc = reduce1<SquareSum, Sum>(n, x, incx);
  const ResultSlot<float> out{result, sequence};
  reduce_grid(acc, workspace, [&](Sum total) { out.store(static_cast<float>(sqrt(total.s))); });
}
extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_dnrm2(long long n, const double* __restrict__ x,
                                                       long long incx, void* workspace,
                                                       double* result,
                                                       unsigned long long sequence) {
  cuh_dependent_launch_begin();
  const Blue acc = reduce1<SquareSum, Blue>(n, x, incx);
  const ResultSlot<double> out{result, sequence};
  reduce_grid(acc, workspace, [&](Blue total) { out.store(blue_finish(total)); });
}

extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_sasum(long long n, const float* __restrict__ x,
                                                       long long incx, void* workspace,
                                                       float* result,
                                                       unsigned long long sequence) {
  cuh_dependent_launch_begin();
  const Sum acc = reduce1<AbsSum, Sum>(n, x, incx);
  const ResultSlot<float> out{result, sequence};
  reduce_grid(acc, workspace, [&](Sum total) { out.store(static_cast<float>(total.s)); });
}
extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_dasum(long long n, const double* __restrict__ x,
                                                       long long incx, void* workspace,
                                                       double* result,
                                                       unsigned long long sequence) {
  cuh_dependent_launch_begin();
  const Sum acc = reduce1<AbsSum, Sum>(n, x, incx);
  const ResultSlot<double> out{result, sequence};
  reduce_grid(acc, workspace, [&](Sum total) { out.store(total.s); });
}

// iamax returns the 1-based index of the first element of largest |x_i|, with reference BLAS's
// NaN behaviour, which follows from its loop (smax = |x_1|; take x_i only if |x_i| > smax):
//   - if x_1 is NaN the answer is 1 (nothing compares greater than NaN);
//   - otherwise NaN elements are never chosen, as if smaller than every number; in particular
//     the answer is 1 when every element after the first is NaN.
// The parallel search skips NaNs (they never compare greater). For the first rule, block 0's
// thread 0 reads x_1 before it searches and, if x_1 is NaN, starts from {+Inf, index 0}, which
// wins every comparison and combination (nothing is greater, no tie has a lower index). That
// read is issued alongside the search's own loads, where a read of x_1 by the last block after
// the combination was one more memory round trip on the way to the result.
template <class T>
__device__ __forceinline__ void iamax(long long n, const T* x, long long incx, void* workspace,
                                      long long* result, unsigned long long sequence) {
  MaxAbs<T> start = MaxAbs<T>::identity();
  if (blockIdx.x == 0 && threadIdx.x == 0 && isnan(__ldg(x))) start = {T(INFINITY), 0};
  const MaxAbs<T> acc = reduce1<FirstMaxAbs, MaxAbs<T>>(n, x, incx, start);
  const ResultSlot<long long> out{result, sequence};
  reduce_grid(acc, workspace, [&](MaxAbs<T> best) { out.store(best.index + 1); });
}

extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_isamax(long long n, const float* __restrict__ x,
                                                        long long incx, void* workspace,
                                                        long long* result,
                                                        unsigned long long sequence) {
  cuh_dependent_launch_begin();
  iamax(n, x, incx, workspace, result, sequence);
}
extern "C" __global__ void CUH_REDUCE_BOUNDS cuh_idamax(long long n, const double* __restrict__ x,
                                                        long long incx, void* workspace,
                                                        long long* result,
                                                        unsigned long long sequence) {
  cuh_dependent_launch_begin();
  iamax(n, x, incx, workspace, result, sequence);
}
