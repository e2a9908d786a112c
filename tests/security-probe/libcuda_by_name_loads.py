#!/usr/bin/env python3
"""Which libraries libcuda opens by bare name when it compiles PTX (docs/security.md, "What libnvrtc and
libcuda load themselves"). Run it under the dynamic linker's trace:

    LD_DEBUG=libs python3 tests/security-probe/libcuda_by_name_loads.py 2>&1 | grep -E 'find library=|calling init'

It loads libcuda by absolute path (first argument, default /usr/lib/x86_64-linux-gnu/libcuda.so.1 or the one
ldconfig knows), makes device 0's primary context current and loads a PTX module written for sm_70, which the
driver must compile for the GPU at hand. Every "find library=NAME" line the trace prints after "PTX loaded" is
a name the dynamic linker searched for: through LD_LIBRARY_PATH first, where an empty entry is the working
directory. Standard library only (ctypes).
"""
import ctypes
import ctypes.util
import sys

PTX = b""".version 7.0
.target sm_70
.address_size 64
.visible .entry probe(.param .u64 p)
{
    .reg .u64 %rd<2>;
    ld.param.u64 %rd1, [p];
    ret;
}
"""


def main():
    path = sys.argv[1] if len(sys.argv) > 1 else (ctypes.util.find_library("cuda") or "libcuda.so.1")
    if not path.startswith("/"):
        import subprocess
        out = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
        found = [line.split("=>")[-1].strip() for line in out.splitlines() if "libcuda.so.1 " in line]
        path = found[0] if found else path
    cuda = ctypes.CDLL(path)
    print(f"libcuda: {path}", flush=True)

    def check(rc, what):
        if rc != 0:
            raise SystemExit(f"{what} failed with CUresult {rc}")

    check(cuda.cuInit(0), "cuInit")
    dev = ctypes.c_int()
    check(cuda.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    ctx = ctypes.c_void_p()
    check(cuda.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cuda.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    print("context current; loading PTX", flush=True)
    module = ctypes.c_void_p()
    check(cuda.cuModuleLoadData(ctypes.byref(module), ctypes.c_char_p(PTX)), "cuModuleLoadData")
    print("PTX loaded", flush=True)
    check(cuda.cuModuleUnload(module), "cuModuleUnload")
    check(cuda.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease")


if __name__ == "__main__":
    main()
