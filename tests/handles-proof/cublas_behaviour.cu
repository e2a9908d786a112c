// What a cuBLAS handle does in each usage pattern of docs/handles.md, measured on the GPU host.
//
// Build and run (tests/bench/run-all.sh does this as its `proof` step, output in $OUT/proof.log):
//   nvcc -O2 -std=c++17 -arch=sm_90 cublas_behaviour.cu -o cublas_behaviour -lcublas -lcuda
//   ./cublas_behaviour
//
// Every scenario runs in a process of its own (this program re-runs itself with the scenario's name),
// because several of them break process-wide state on purpose: a destroyed or reset context, a sticky
// fault, a crash of cuBLAS. The parent reports how each child ended.
//
// Output lines:
//   CHECK <name>: <observed> (expected <what docs/handles.md says>) ... PASS|FAIL
//   OBSERVE <name>: <observed>      (recorded, not asserted: crashes of cuBLAS, which are undefined
//                                    behaviour, and details the page quotes but does not rely on)
//   SKIP <name>: <why>              (e.g. needs two GPUs)
// The program exits 1 when any CHECK failed, or a scenario died before its measured crash point
// (crash_point below), else 0. Failed CHECKs count even when their process crashes afterwards: the
// child reports each one to the parent through a pipe as it happens.
#include <cuda.h>
#include <cuda_runtime.h>
#include <cublas_v2.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <sys/wait.h>
#include <unistd.h>

static int g_failures = 0;
// Write end of the pipe to the parent ('F' per failed CHECK, 'C' at a crash point); -1 when run by hand.
static int g_report_fd = -1;

static void report(char what) {
  if (g_report_fd >= 0) (void)!write(g_report_fd, &what, 1);
}

// From here on the scenario does what crashed cuBLAS on the H200 (undefined behaviour: a stale handle or
// a destroyed context). A death by a signal after this point is an observation; before it, a failure.
static void crash_point(const char* name, const char* what) {
  printf("OBSERVE %s: %s (a crash is reported by the parent)\n", name, what);
  fflush(stdout);
  report('C');
}

static const char* cu_name(CUresult r) {
  const char* s = "?";
  cuGetErrorName(r, &s);
  return s;
}

static CUcontext current_ctx() {
  CUcontext c = nullptr;
  cuCtxGetCurrent(&c);
  return c;
}

static void check(const char* name, bool ok, const std::string& observed, const char* expected) {
  printf("CHECK %s: %s (expected %s) ... %s\n", name, observed.c_str(), expected, ok ? "PASS" : "FAIL");
  if (!ok) {
    g_failures++;
    report('F');
  }
}

static void observe(const char* name, const std::string& observed) { printf("OBSERVE %s: %s\n", name, observed.c_str()); }

static std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
static std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// A user-created context on `dev`, current afterwards (cuCtxCreate's signature changed in CUDA 13).
static CUresult create_user_context(CUcontext* ctx, CUdevice dev) {
#if CUDA_VERSION >= 13000
  CUctxCreateParams p = {};
  return cuCtxCreate(ctx, &p, 0, dev);
#else
  return cuCtxCreate(ctx, 0, dev);
#endif
}

static const int N = 4096;
// Exit status of a scenario process that could not run (no GPU).
static const int SKIPPED = 77;

// N floats of value 1 in the current context.
static float* ones_on_device() {
  static float host[N];
  for (float& v : host) v = 1.0f;
  CUdeviceptr d = 0;
  if (cuMemAlloc(&d, sizeof host) != CUDA_SUCCESS) return nullptr;
  cuMemcpyHtoD(d, host, sizeof host);
  return (float*)d;
}

// The first element of d, read in context ctx (pushed and popped).
static float first_element(CUcontext ctx, const float* d) {
  float v = -1.0f;
  cuCtxPushCurrent(ctx);
  cuCtxSynchronize();
  cuMemcpyDtoH(&v, (CUdeviceptr)d, sizeof v);
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  return v;
}

__global__ void store_to(float* p) { *p = 1.0f; }

// ------------------------------------------------------------------ scenarios (one process each)

// cublasCreate with nothing current: which context does it bind, what is current afterwards, does the
// handle keep the primary context alive?
static void scenario_create_nothing_current(CUdevice dev) {
  CUcontext primary;
  cuDevicePrimaryCtxRetain(&primary, dev);  // only to know its pointer; not made current
  unsigned flags;
  int active;
  check("create_nothing_current.before", current_ctx() == nullptr, fmt("current before cublasCreate %p", (void*)current_ctx()),
        "nothing current");
  cublasHandle_t h;
  cublasStatus_t st = cublasCreate(&h);
  check("create_nothing_current.primary_left_current", st == CUBLAS_STATUS_SUCCESS && current_ctx() == primary,
        fmt("status %d, current afterwards is primary: %d", (int)st, current_ctx() == primary),
        "success, the primary context is current afterwards (cuBLAS changes the caller's current context)");
  float* d = ones_on_device();
  float a = 2.0f;
  st = cublasSscal(h, N, &a, d, 1);
  float v = first_element(primary, d);
  check("create_nothing_current.works", st == CUBLAS_STATUS_SUCCESS && v == 2.0f, fmt("status %d, x[0] %.1f", (int)st, v),
        "success, 1 -> 2");
  cuMemFree((CUdeviceptr)d);
  cublasDestroy(h);
  // Drop our own retain: is the primary context still active, i.e. does someone else (cudart, which
  // cuBLAS uses) hold it?
  cuDevicePrimaryCtxRelease(dev);
  cuDevicePrimaryCtxGetState(dev, &flags, &active);
  check("create_nothing_current.primary_active_after_destroy_and_our_release", active == 1, fmt("active %d", active),
        "1: the runtime inside cuBLAS still holds the primary context after cublasDestroy");
  check("create_nothing_current.current_after_destroy", current_ctx() == primary,
        fmt("primary still current: %d", current_ctx() == primary), "cublasDestroy leaves the primary context current");
}

// A cuBLAS handle created with the primary context current, N ones in that context, nothing current afterwards.
struct PrimaryHandle {
  CUcontext primary;
  cublasHandle_t handle;
  float* ones;
};

static PrimaryHandle primary_handle(CUdevice dev) {
  PrimaryHandle p{};
  cuDevicePrimaryCtxRetain(&p.primary, dev);
  cuCtxSetCurrent(p.primary);
  cublasCreate(&p.handle);
  p.ones = ones_on_device();
  cuCtxSetCurrent(nullptr);
  return p;
}

// A handle created on one thread, used from another thread with nothing current.
static void scenario_other_thread(CUdevice dev) {
  PrimaryHandle p = primary_handle(dev);
  CUcontext primary = p.primary;
  cublasHandle_t h = p.handle;
  float* d = p.ones;
  float a = 2.0f;
  std::thread t([&] {
    CUcontext before = current_ctx();
    cublasStatus_t st = cublasSscal(h, N, &a, d, 1);
    float v = first_element(primary, d);
    check("other_thread.works", before == nullptr && st == CUBLAS_STATUS_SUCCESS && v == 2.0f,
          fmt("nothing current before: %d, status %d, x[0] %.1f", before == nullptr, (int)st, v),
          "success on a thread that never made the context current, 1 -> 2");
    check("other_thread.primary_left_current", current_ctx() == primary,
          fmt("primary current afterwards: %d", current_ctx() == primary),
          "the call leaves the primary context current on that thread");
  });
  t.join();
  cuCtxSetCurrent(primary);
  cuMemFree((CUdeviceptr)d);
  cublasDestroy(h);
}

// A handle of the primary context called while a user context of the same device is current.
static void scenario_foreign_context(CUdevice dev) {
  PrimaryHandle p = primary_handle(dev);
  CUcontext primary = p.primary;
  cublasHandle_t h = p.handle;
  float* d = p.ones;
  CUcontext user;
  CUresult r = create_user_context(&user, dev);  // current now
  float a = 2.0f;
  cublasStatus_t st = cublasSscal(h, N, &a, d, 1);
  CUresult sync_user = cuCtxSynchronize();
  check("foreign_context.result", r == CUDA_SUCCESS && st == CUBLAS_STATUS_SUCCESS && first_element(primary, d) == 2.0f,
        fmt("status %d, sync in the user context %s, x[0] %.1f", (int)st, cu_name(sync_user), first_element(primary, d)),
        "success: the work reaches the handle's (primary) memory, 1 -> 2");
  check("foreign_context.user_left_current", current_ctx() == user, fmt("user context current afterwards: %d", current_ctx() == user),
        "the user context stays current");
  // Same device, other context: can a plain kernel launched in the user context store into the primary
  // context's allocation? A store to an address the context cannot reach faults (see sticky). Done
  // last: a fault here is sticky.
  store_to<<<1, 1>>>(d);
  cudaError_t e = cudaDeviceSynchronize();
  check("foreign_context.user_context_kernel_writes_primary_memory", e == cudaSuccess, cudaGetErrorName(e),
        "cudaSuccess: a kernel of the user context stores into the primary context's memory without a fault");
}

// A user context destroyed under a handle bound to it.
static void scenario_user_context_destroyed(CUdevice dev) {
  CUcontext user;
  create_user_context(&user, dev);
  cublasHandle_t h;
  cublasStatus_t st = cublasCreate(&h);
  check("user_context_destroyed.create_binds_current", st == CUBLAS_STATUS_SUCCESS, fmt("status %d", (int)st),
        "cublasCreate succeeds with a user context current");
  cuCtxDestroy(user);
  printf("OBSERVE user_context_destroyed.calling: cublasSscal on the stale handle\n");
  fflush(stdout);
  float a = 2.0f;
  float* dummy = (float*)(uintptr_t)0x10000;  // any address: the context it belonged to is gone
  st = cublasSscal(h, N, &a, dummy, 1);
  check("user_context_destroyed.stale_handle_reports_success", st == CUBLAS_STATUS_SUCCESS, fmt("sscal status %d", (int)st),
        "status 0: cuBLAS does not notice that its context was destroyed");
  crash_point("user_context_destroyed.destroying", "cublasDestroy on the stale handle");
  st = cublasDestroy(h);
  observe("user_context_destroyed.destroy_status", fmt("%d", (int)st));
}

// Why cuhandle validates a context by its id before activating it: what the driver itself says about
// a destroyed context (no cuBLAS involved).
static void scenario_destroyed_context_driver(CUdevice dev) {
#if CUDA_VERSION < 12000
  (void)dev;
  printf("SKIP destroyed_context_driver: cuCtxGetId needs CUDA 12.0 headers\n");
#else
  CUcontext user;
  create_user_context(&user, dev);
  unsigned long long id = 0;
  cuCtxGetId(user, &id);
  CUcontext popped;
  cuCtxPopCurrent(&popped);
  cuCtxDestroy(user);
  unsigned long long after = 0;
  CUresult get_id = cuCtxGetId(user, &after);
  check("destroyed_context_driver.get_id", get_id == CUDA_ERROR_CONTEXT_IS_DESTROYED, cu_name(get_id),
        "CUDA_ERROR_CONTEXT_IS_DESTROYED: the id check detects a destroyed context");
  CUresult push = cuCtxPushCurrent(user);
  check("destroyed_context_driver.push_destroyed", push == CUDA_SUCCESS, cu_name(push),
        "CUDA_SUCCESS: the driver accepts a destroyed context on the stack");
  printf("OBSERVE destroyed_context_driver.allocating: cuMemAlloc with the destroyed context pushed\n");
  fflush(stdout);
  CUdeviceptr p = 0;
  CUresult alloc = cuMemAlloc(&p, 4096);
  check("destroyed_context_driver.alloc_after_push", alloc == CUDA_ERROR_CONTEXT_IS_DESTROYED, cu_name(alloc),
        "CUDA_ERROR_CONTEXT_IS_DESTROYED: only the next call that uses the context notices");
  crash_point("destroyed_context_driver.exiting", "process exit with the destroyed context still pushed");
#endif
}

// cudaDeviceReset and the driver's cuDevicePrimaryCtxReset under a handle of the primary context (H200,
// both: sscal reports success, then cublasDestroy segfaults).
static void scenario_reset(CUdevice dev, bool runtime_reset) {
  const char* tag = runtime_reset ? "device_reset" : "primary_ctx_reset";
  cudaSetDevice(0);
  cublasHandle_t h;
  cublasCreate(&h);
  float* d0 = nullptr;
  cudaMalloc(&d0, N * sizeof(float));
  if (runtime_reset) {
    cudaError_t e = cudaDeviceReset();
    observe(fmt("%s.reset", tag).c_str(), cudaGetErrorName(e));
  } else {
    cuCtxSetCurrent(nullptr);
    CUresult r = cuDevicePrimaryCtxReset(dev);
    observe(fmt("%s.reset", tag).c_str(), cu_name(r));
  }
  float* d = nullptr;
  cudaMalloc(&d, N * sizeof(float));  // re-initialises the primary context
  float a = 2.0f;
  cublasStatus_t st = cublasSscal(h, N, &a, d, 1);
  cudaError_t sync = cudaDeviceSynchronize();
  std::string seen = fmt("sscal status %d, sync %s", (int)st, cudaGetErrorName(sync));
  check(fmt("%s.stale_handle_reports_success", tag).c_str(), st == CUBLAS_STATUS_SUCCESS && sync == cudaSuccess, seen,
        "status 0 and a clean synchronisation: cuBLAS does not notice that its context was reset");
  crash_point(fmt("%s.destroying", tag).c_str(), "cublasDestroy on the stale handle");
  st = cublasDestroy(h);
  observe(fmt("%s.destroy_status", tag).c_str(), fmt("%d", (int)st));
}

// A sticky fault (a kernel storing to address 16) and what the handle reports afterwards.
static void scenario_sticky(CUdevice) {
  cudaSetDevice(0);
  cublasHandle_t h;
  cublasCreate(&h);
  float* d = nullptr;
  cudaMalloc(&d, N * sizeof(float));
  store_to<<<1, 1>>>((float*)(uintptr_t)16);
  cudaError_t fault = cudaDeviceSynchronize();
  check("sticky.fault", fault == cudaErrorIllegalAddress, cudaGetErrorName(fault), "cudaErrorIllegalAddress");
  float a = 2.0f;
  cublasStatus_t st = cublasSscal(h, N, &a, d, 1);
  cudaError_t after = cudaDeviceSynchronize();
  check("sticky.later_calls_fail", after == cudaErrorIllegalAddress, fmt("sscal status %d, sync %s", (int)st, cudaGetErrorName(after)),
        "the context stays broken: every later synchronisation reports cudaErrorIllegalAddress");
  check("sticky.sscal_status_after_fault", st == CUBLAS_STATUS_EXECUTION_FAILED, fmt("%d", (int)st),
        "13 (CUBLAS_STATUS_EXECUTION_FAILED): cuBLAS reports the sticky error itself");
  cublasHandle_t h2;
  st = cublasCreate(&h2);
  check("sticky.create_after_fault", st != CUBLAS_STATUS_SUCCESS, fmt("%d", (int)st),
        "a failure (H200: 1, CUBLAS_STATUS_NOT_INITIALIZED): no new handle in a broken process");
  st = cublasDestroy(h);
  check("sticky.destroy_after_fault", st == CUBLAS_STATUS_SUCCESS, fmt("%d", (int)st), "0: the old handle can still be destroyed");
}

// Cost of a cublasCreate+cublasDestroy pair with the primary context current (median of 50).
static void scenario_cost(CUdevice dev) {
  CUcontext primary;
  cuDevicePrimaryCtxRetain(&primary, dev);
  cuCtxSetCurrent(primary);
  cublasHandle_t h;
  cublasCreate(&h);  // the first one loads cuBLAS's kernels
  cublasDestroy(h);
  std::vector<double> us;
  for (int i = 0; i < 50; i++) {
    auto t0 = std::chrono::steady_clock::now();
    cublasCreate(&h);
    cublasDestroy(h);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  double median = us[us.size() / 2];
  check("cost.create_destroy_median_us", median > 20.0 && median < 20000.0, fmt("%.1f us", median),
        "tens to hundreds of microseconds, far above a cuhandle handle's create+close");
}

// One handle per device, each created after cudaSetDevice(i); used while the other device is selected.
static void scenario_two_devices(CUdevice) {
  int count = 0;
  cudaGetDeviceCount(&count);
  if (count < 2) {
    printf("SKIP two_devices: needs two GPUs; this host has %d\n", count);
    return;
  }
  cublasHandle_t h[2];
  float* d[2];
  CUcontext primary[2];
  for (int i = 0; i < 2; i++) {
    cudaSetDevice(i);
    cublasCreate(&h[i]);
    primary[i] = current_ctx();
    cudaMalloc(&d[i], N * sizeof(float));
    std::vector<float> one(N, 1.0f);
    cudaMemcpy(d[i], one.data(), N * sizeof(float), cudaMemcpyHostToDevice);
  }
  float a = 2.0f;
  for (int i = 0; i < 2; i++) {
    cudaSetDevice(1 - i);  // the *other* device is selected and its primary context current
    cublasStatus_t st = cublasSscal(h[i], N, &a, d[i], 1);
    cudaError_t e = cudaDeviceSynchronize();
    float v = first_element(primary[i], d[i]);
    observe(fmt("two_devices.handle%d_used_while_device%d_current", i, 1 - i).c_str(),
            fmt("status %d, sync %s, x[0] %.1f (2.0 = the work reached device %d)", (int)st, cudaGetErrorName(e), v, i));
  }
  for (int i = 0; i < 2; i++) {
    cudaSetDevice(i);
    cudaFree(d[i]);
    cublasDestroy(h[i]);
  }
}

struct Scenario {
  const char* name;
  void (*run)(CUdevice);
};

static void reset_runtime(CUdevice dev) { scenario_reset(dev, true); }
static void reset_primary(CUdevice dev) { scenario_reset(dev, false); }

static const Scenario SCENARIOS[] = {
    {"create_nothing_current", scenario_create_nothing_current},
    {"other_thread", scenario_other_thread},
    {"foreign_context", scenario_foreign_context},
    {"destroyed_context_driver", scenario_destroyed_context_driver},
    {"user_context_destroyed", scenario_user_context_destroyed},
    {"device_reset", reset_runtime},
    {"primary_ctx_reset", reset_primary},
    {"sticky", scenario_sticky},
    {"cost", scenario_cost},
    {"two_devices", scenario_two_devices},
};

// Runs one scenario in a child process; returns 1 if it failed. A death by a signal after the
// scenario's crash_point is what cuBLAS does there (an OBSERVE line); before it, or in a scenario
// without one, the scenario failed. Failed CHECKs arrive through the pipe, so they count even when the
// child crashed after printing them.
static int run_child(const char* self, const Scenario& s) {
  fflush(stdout);
  int fds[2];
  if (pipe(fds) != 0) {
    printf("SCENARIO %s: pipe failed: %s\n", s.name, strerror(errno));
    return 1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    std::string fd = std::to_string(fds[1]);
    execl(self, self, s.name, fd.c_str(), (char*)nullptr);
    _exit(127);
  }
  close(fds[1]);
  int failed_checks = 0;
  bool crash_point_reached = false;
  char c;
  while (read(fds[0], &c, 1) == 1) {
    if (c == 'F') failed_checks++;
    if (c == 'C') crash_point_reached = true;
  }
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) {
    int sig = WTERMSIG(status);
    observe(fmt("%s.process", s.name).c_str(), fmt("killed by signal %d (%s)", sig, strsignal(sig)));
    if (!crash_point_reached) {
      printf("SCENARIO %s: died before reaching a step that is allowed to crash\n", s.name);
      return 1;
    }
  } else {
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == SKIPPED) return 0;
    observe(fmt("%s.process", s.name).c_str(), fmt("exited with %d", code));
    if (code != 0 && failed_checks == 0) {
      printf("SCENARIO %s: exited with %d\n", s.name, code);
      return 1;
    }
  }
  if (failed_checks > 0) printf("SCENARIO %s: %d check(s) failed\n", s.name, failed_checks);
  return failed_checks > 0 ? 1 : 0;
}

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IONBF, 0);
  if (argc > 1) {
    if (argc > 2) g_report_fd = atoi(argv[2]);
    CUresult init = cuInit(0);
    if (init != CUDA_SUCCESS) {
      printf("SKIP %s: cuInit returned %s (no GPU?)\n", argv[1], cu_name(init));
      return SKIPPED;
    }
    CUdevice dev;
    cuDeviceGet(&dev, 0);
    for (const Scenario& s : SCENARIOS) {
      if (strcmp(s.name, argv[1]) == 0) {
        s.run(dev);
        return g_failures;
      }
    }
    printf("unknown scenario %s\n", argv[1]);
    return 2;
  }
  int runtime = 0, driver = 0, cublas = 0;
  cudaRuntimeGetVersion(&runtime);
  cudaDriverGetVersion(&driver);
  cublasGetProperty(MAJOR_VERSION, &cublas);
  int minor = 0;
  cublasGetProperty(MINOR_VERSION, &minor);
  printf("cublas_behaviour: driver %d, runtime %d, cuBLAS %d.%d\n", driver, runtime, cublas, minor);
  int failed = 0;
  for (const Scenario& s : SCENARIOS) {
    printf("--- %s\n", s.name);
    failed += run_child("/proc/self/exe", s);
  }
  printf("DONE: %d scenario(s) with failed checks\n", failed);
  return failed == 0 ? 0 : 1;
}
