#!/bin/sh
# Runs on the GPU host from inside a bundle made by scripts/gpu-bundle.sh: the self-test, the GPU
# test suite, the C baselines (FIGURES.md's anchors.cu and the cuBLAS BLAS harness, compiled here
# with the host's nvcc) and cuhandle's benchmarks, all in one run so that ratios are comparable.
# Writes its logs to ${OUT:-./out}. Usage: run-all.sh [tests|bench|all]
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
what=${1:-all}
mkdir -p "$out"
nvidia-smi -L 2>&1 | tee "$out/main.log"
"$here/run-main" >>"$out/main.log" 2>&1; echo "run-main exit $?" >>"$out/main.log"
if [ "$what" != bench ]; then
  timeout "${TESTS_TIMEOUT:-300}" "$here/run-tests" >"$out/tests.log" 2>&1; echo "run-tests exit $?" >>"$out/tests.log"
  grep -E "tests (successful|failed|skipped|aborted)|containers failed|\[X\]|run-tests exit" "$out/tests.log"
fi
if [ "$what" != tests ]; then
  cd "$here/bench" || exit 1
  nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 anchors.cu -o anchors -lcuda -lcublas 2>&1 | tail -3
  nvcc -O2 -std=c++17 -arch=sm_90 cublas_l1.cu -o cublas_l1 -lcublas 2>&1 | tail -3
  nvcc -O2 -std=c++17 pinned_copy.cu -o pinned_copy -lcuda 2>&1 | tail -3
  timeout 120 ./anchors >"$out/anchors.txt" 2>&1
  timeout 120 ./cublas_l1 >"$out/cublas.csv" 2>&1
  # Pinned copies (issue 12): the C baseline and AsyncBenchmark side by side in async.csv.
  {
    timeout 120 ./pinned_copy
    timeout 180 "$here/run-class" dev.cuhandle.bench.AsyncBenchmark
  } >"$out/async.csv" 2>&1
  {
    timeout 90 "$here/run-class" dev.cuhandle.bench.HandleBenchmark
    timeout 60 "$here/run-class" dev.cuhandle.LaunchBenchmark
    timeout 120 "$here/run-class" dev.cuhandle.bench.BlasBenchmark
  } >"$out/cuhandle.csv" 2>&1
  python3 "$here/bench/report.py" "$out/cuhandle.csv" "$out/cublas.csv" "$out/blas-report.csv" "$out/blas.png" >"$out/report.txt" 2>&1
  cat "$out/report.txt"
  grep -E "launch|create|call_ns|activation|latency" "$out/cuhandle.csv" "$out/anchors.txt" | head -40
  cat "$out/async.csv"
fi
