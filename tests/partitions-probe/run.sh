#!/bin/sh
# On the GPU host: builds and runs the partition design probe (prints PROBE lines).
cd "$(dirname "$0")" && nvcc -fatbin -arch=sm_90 probe_kernels.cu -o probe_kernels.fatbin && \
  nvcc -O2 partition_probe.c -o partition_probe -lcuda -lpthread && ./partition_probe probe_kernels.fatbin
