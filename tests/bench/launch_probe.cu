// Probe: does the driver's own cost of an empty-kernel launch depend on where the function came
// from or on the stream's flags? cuhandle launches a CUfunction of a context-independent library
// (cuLibraryLoadData + cuKernelGetFunction, rule H10) on its own non-blocking stream (H9); JCuda's
// loop in LaunchBenchmark launches a module function (cuModuleLoadData + cuModuleGetFunction) on a
// stream created with flags 0. Timed here in C, all variants taking turns in 9 rounds of 20,000
// launches and one synchronize (the median is printed), with the primary context current.
// Prints one line per variant: PROBE launch_<function source>_<stream>_us <median us per launch>.
// Built and run on the GPU host by tests/bench/run-all.sh.
#include <cuda.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

// LaunchBenchmark's 0-argument kernel.
static const char* PTX = ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry bench_args0()\n{\n\tret;\n}\n";

static void check(CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) {
    const char* s = "?";
    cuGetErrorName(r, &s);
    std::printf("PROBE failed %s: %s\n", what, s);
    std::exit(1);
  }
}

static double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

struct Variant {
  const char* name;
  CUfunction function;
  CUstream stream;
  std::vector<double> us;
};

int main() {
  setvbuf(stdout, nullptr, _IONBF, 0);
  check(cuInit(0), "cuInit");
  CUdevice dev;
  check(cuDeviceGet(&dev, 0), "cuDeviceGet");
  CUcontext primary;
  check(cuDevicePrimaryCtxRetain(&primary, dev), "cuDevicePrimaryCtxRetain");
  check(cuCtxSetCurrent(primary), "cuCtxSetCurrent");

  CUmodule module;
  check(cuModuleLoadData(&module, PTX), "cuModuleLoadData");
  CUfunction fromModule;
  check(cuModuleGetFunction(&fromModule, module, "bench_args0"), "cuModuleGetFunction");
  CUlibrary library;
  check(cuLibraryLoadData(&library, PTX, nullptr, nullptr, 0, nullptr, nullptr, 0), "cuLibraryLoadData");
  CUkernel kernel;
  check(cuLibraryGetKernel(&kernel, library, "bench_args0"), "cuLibraryGetKernel");
  CUfunction fromKernel;
  check(cuKernelGetFunction(&fromKernel, kernel), "cuKernelGetFunction");
  CUmodule libraryModule;
  check(cuLibraryGetModule(&libraryModule, library), "cuLibraryGetModule");
  CUfunction fromLibraryModule;
  check(cuModuleGetFunction(&fromLibraryModule, libraryModule, "bench_args0"), "cuModuleGetFunction (library's module)");

  CUstream blocking, nonBlocking;
  check(cuStreamCreate(&blocking, 0), "cuStreamCreate(0)");
  check(cuStreamCreate(&nonBlocking, CU_STREAM_NON_BLOCKING), "cuStreamCreate(NON_BLOCKING)");

  std::vector<Variant> variants = {
      {"module_function_blocking_stream", fromModule, blocking, {}},
      {"module_function_nonblocking_stream", fromModule, nonBlocking, {}},
      {"kernel_function_blocking_stream", fromKernel, blocking, {}},
      {"kernel_function_nonblocking_stream", fromKernel, nonBlocking, {}},
      {"cukernel_nonblocking_stream", reinterpret_cast<CUfunction>(kernel), nonBlocking, {}},
      {"library_module_function_nonblocking_stream", fromLibraryModule, nonBlocking, {}},
  };
  const int launches = 20000, rounds = 9;
  for (int round = -1; round < rounds; round++) {  // round -1 warms up
    for (size_t turn = 0; turn < variants.size(); turn++) {
      Variant& v = variants[(turn + (round < 0 ? 0 : round)) % variants.size()];
      double t0 = now();
      for (int i = 0; i < launches; i++) check(cuLaunchKernel(v.function, 1, 1, 1, 32, 1, 1, 0, v.stream, nullptr, nullptr), v.name);
      check(cuStreamSynchronize(v.stream), "cuStreamSynchronize");
      if (round >= 0) v.us.push_back((now() - t0) * 1e6 / launches);
    }
  }
  for (Variant& v : variants) {
    std::sort(v.us.begin(), v.us.end());
    std::printf("PROBE launch_%s_us %.3f\n", v.name, v.us[v.us.size() / 2]);
  }
  return 0;
}
