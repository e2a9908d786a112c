#!/bin/sh
# Runs on the GPU host from inside a bundle made by scripts/gpu-bundle.sh: the self-test, the GPU
# test suite, and the benchmarks: the C baselines (tests/bench/cublas_l1.cu, cold_start.c and
# tests/bench/anchors.cu, compiled here with the host's nvcc) and cuhandle's, all in one run so
# that ratios are comparable. Usage: run-all [tests|bench|proof|all] (default all).
# `proof` (also part of `all`) compiles and runs tests/handles-proof/cublas_behaviour.cu, the evidence for
# docs/handles.md's cuBLAS column: CHECK/OBSERVE lines in $OUT/proof.log, exit status on the last line.
#
# Writes into ${OUT:-./out}: main.log, tests.log (tests, all), proof.log (proof, all), bench.log
# (every harness's raw output, in order), async.csv, transfer.csv and batch.csv (the copy figures) and, from
# tests/bench/report.py, perf.csv, perf.md (docs/performance.md's benchmark section), blas-gbps.png,
# blas-us.png, launch.png. Publish a run with tests/bench/publish.sh OUT (copies the CSV and charts
# to docs/perf, rewrites docs/performance.md).
# The benchmarks take about 6 minutes on an H200; TRANSFER_TURNS (default 2) sets the turns of the
# array-copy benchmarks, COLD_RUNS (default 3) and HANDLE_RUNS (default 5)
# set the fresh processes for the cold start and the handle costs, BLAS_LOG2_MAX (default 28) the
# largest BLAS size (a quick check: BLAS_LOG2_MAX=16).
set -u
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$here/out}
what=${1:-all}
case "$what" in -h|--help) sed -n '2,/^set -u/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; esac
case "$what" in tests|bench|proof|all) ;; *) echo "usage: run-all [tests|bench|proof|all]" >&2; exit 2 ;; esac
mkdir -p "$out"
[ -x "$here/prepare-jre" ] && "$here/prepare-jre" # the JRE's class-data sharing archives, before any timed JVM
nvidia-smi -L 2>&1 | tee "$out/main.log"
"$here/run-main" >>"$out/main.log" 2>&1; echo "run-main exit $?" >>"$out/main.log"
if [ "$what" = tests ] || [ "$what" = all ]; then
  timeout "${TESTS_TIMEOUT:-300}" "$here/run-tests" >"$out/tests.log" 2>&1; echo "run-tests exit $?" >>"$out/tests.log"
  grep -E "tests (successful|failed|skipped|aborted)|containers failed|\[X\]|run-tests exit" "$out/tests.log"
fi
if [ "$what" = proof ] || [ "$what" = all ]; then
  (
    cd "$here/handles-proof" || exit 1
    nvcc -O2 -std=c++17 -arch=sm_90 cublas_behaviour.cu -o cublas_behaviour -lcublas -lcuda 2>&1 | grep -v deprecated | tail -3
    timeout 300 ./cublas_behaviour; echo "cublas_behaviour exit $?"
  ) >"$out/proof.log" 2>&1
  grep -E "^(CHECK|OBSERVE|SKIP|DONE)|exit" "$out/proof.log"
fi
[ "$what" = tests ] && exit 0
[ "$what" = proof ] && exit 0

raw=$(mktemp -d)
log=$out/bench.log
: >"$log"
# step NAME FILE COMMAND...: runs a harness, its stdout into $raw/FILE and both streams into bench.log.
step() {
  name=$1; file=$2; shift 2
  echo "== $name: $*" >>"$log"
  start=$(date +%s)
  "$@" 2>>"$log" | tee -a "$raw/$file" >>"$log"
  echo "== $name took $(( $(date +%s) - start )) s" >>"$log"
}
bench_start=$(date +%s)
gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1)
echo "# bench run $(date -u +%Y-%m-%dT%H:%MZ)${gpu:+ on $gpu}" >"$raw/notes.csv"
cd "$here/bench" || exit 1
{
  nvcc -O2 -std=c++17 -arch=sm_90 cublas_l1.cu -o cublas_l1 -lcublas 2>&1 | tail -3
  nvcc -O2 cold_start.c -o cold_start -lcuda 2>&1 | tail -3
  nvcc -O2 activation_floor.c -o activation_floor -lcuda 2>&1 | tail -3
  nvcc -O2 -std=c++17 pinned_copy.cu -o pinned_copy -lcuda 2>&1 | tail -3
  nvcc -O2 -std=c++17 transfer_copy.cu -o transfer_copy -lcuda 2>&1 | tail -3
  nvcc -O2 -std=c++17 contextless_probe.cu -o contextless_probe -lcuda 2>&1 | tail -3
  nvcc -O2 -std=c++17 launch_probe.cu -o launch_probe -lcuda 2>&1 | tail -3
  nvcc -O2 alloc_churn.c -o alloc_churn -lcuda -lpthread 2>&1 | tail -3
  [ -f anchors.cu ] && nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 anchors.cu -o anchors -lcuda -lcublas 2>&1 | tail -3
} >>"$log"

# Cold start first, in fresh processes, C and Java alternating so that drift hits both alike.
i=1
while [ "$i" -le "${COLD_RUNS:-3}" ]; do
  step "cold start C $i" cold.csv timeout 30 ./cold_start "$i"
  step "cold start cuhandle $i" cold.csv timeout 30 "$here/run-class" dev.cuhandle.ColdStartBenchmark whole "$i"
  step "cold start cuhandle steps $i" cold.csv timeout 30 "$here/run-class" dev.cuhandle.ColdStartBenchmark steps "$i"
  i=$((i + 1))
done
# Up to 2^22 a call takes at most a few launch floors (~3.5 us; 2^22 doubles copy in ~20 us), where
# the host's speed drifts by 10-15% over seconds and differs by up to 40% from one process to the
# next (H200 runs of 2026-12-01: the same library read 3.2 and 4.9 us per sscal in two JVMs a few
# seconds apart): the two harnesses take turns five times there and report.py takes each point's
# median, so drift and unlucky processes hit both alike. Larger sizes are GPU-bound: once.
small_max=$(( ${BLAS_LOG2_MAX:-28} < 22 ? ${BLAS_LOG2_MAX:-28} : 22 ))
# Both BLAS harnesses run on the same four CPUs: unpinned, the same cuBLAS point read 3.8-4.7 us
# from one process to the next, pinned 4.5-4.9 (H200 host, 16 vCPUs, one NUMA node, 2026-12-01).
pin=""
command -v taskset >/dev/null 2>&1 && [ "$(nproc)" -ge 4 ] && pin="taskset -c 0-3"
for rep in 1 2 3 4 5; do
  step "cuBLAS sweep 2^10..2^$small_max, turn $rep" cublas.csv timeout 60 $pin ./cublas_l1 10 "$small_max"
  step "cuhandle BLAS sweep 2^10..2^$small_max, turn $rep" cuhandle-blas.csv timeout 60 $pin "$here/run-class" dev.cuhandle.bench.BlasBenchmark 10 "$small_max"
done
if [ "${BLAS_LOG2_MAX:-28}" -gt 22 ]; then
  step "cuBLAS sweep 2^23..2^${BLAS_LOG2_MAX:-28}" cublas.csv timeout 150 $pin ./cublas_l1 23 "${BLAS_LOG2_MAX:-28}"
  step "cuhandle BLAS sweep 2^23..2^${BLAS_LOG2_MAX:-28}" cuhandle-blas.csv timeout 150 $pin "$here/run-class" dev.cuhandle.bench.BlasBenchmark 23 "${BLAS_LOG2_MAX:-28}"
fi
step "run-time compilation" compile.csv timeout 120 "$here/run-class" dev.cuhandle.bench.CompileBenchmark
step "launches, cuhandle and JCuda" launch.csv timeout 120 "$here/run-class" dev.cuhandle.LaunchBenchmark
step "the 0-argument launch gap to JCuda" launch.csv timeout 60 "$here/run-class" dev.cuhandle.LaunchGapBenchmark
step "graphs of 100 saxpy n=1 against stream launches; graph updates against plain replays and recaptures" graph.csv timeout 90 "$here/run-class" dev.cuhandle.bench.GraphBenchmark
step "an iterative Jacobi solve to a tolerance: a WHILE graph against launches and host reads" graph-loop.csv timeout 120 "$here/run-class" dev.cuhandle.bench.GraphLoopBenchmark
# Issue 34: a short job next to a saturating kernel, ordinary handles against SM partitions; launch and allocation costs.
step "SM partitions against ordinary handles" partitions.txt timeout 180 "$here/run-class" dev.cuhandle.bench.SmPartitionBenchmark
# The handle's costs in fresh JVMs, each after a fresh C process that times the driver calls
# beneath a call's activation (the floor of activation_overhead), so both see the same drift.
i=1
while [ "$i" -le "${HANDLE_RUNS:-5}" ]; do
  [ -x ./activation_floor ] && step "activation driver floor $i" handle.csv timeout 60 ./activation_floor "$i"
  step "handle costs $i" handle.csv timeout 60 "$here/run-class" dev.cuhandle.bench.HandleBenchmark "$i"
  i=$((i + 1))
done
[ -x ./anchors ] && step "driver anchors" anchors.txt timeout 120 ./anchors
# Which stream-ordered calls work without the stream's context current (PROBE lines).
step "context-less stream calls" probe.txt timeout 60 ./contextless_probe
# Whether the driver's launch cost depends on the function's origin or the stream's flags (PROBE lines).
step "launch cost by function origin and stream flags" probe.txt timeout 60 ./launch_probe
# Issue 12: pinned 1 GiB copies, C baseline and cuhandle side by side, plus future latency.
step "pinned copies C" async.csv timeout 120 ./pinned_copy
step "async cuhandle" async.csv timeout 180 "$here/run-class" dev.cuhandle.bench.AsyncBenchmark
[ -f "$raw/async.csv" ] && cp "$raw/async.csv" "$out/async.csv" && cat "$out/async.csv"
# Issue 19: allocation churn alone and next to busy handles, C anchors (ANCHOR lines) then cuhandle
# (memory,... lines), and the 16-thread, false-sharing and capture-next-to-frees figures.
step "allocation churn C" memory.txt timeout 60 ./alloc_churn
step "memory cuhandle" memory.txt timeout 180 "$here/run-class" dev.cuhandle.bench.MemoryBenchmark
# The two churns again under ZGC, whose pauses stay under a millisecond: a round over 1 ms under G1
# that overlapped a G1 pause (MemoryBenchmark's over_1ms_in_gc_pause) is the collector's, not cuhandle's.
step "memory cuhandle, churns under ZGC" memory.txt env RUN_CLASS_JAVA_OPTS=-XX:+UseZGC timeout 60 "$here/run-class" dev.cuhandle.bench.MemoryBenchmark churn
[ -f "$raw/memory.txt" ] && cp "$raw/memory.txt" "$out/memory.txt"
# Issue 24: Java arrays to and from the device, cuhandle and JCuda taking turns in one JVM, beside C's
# pageable and pinned copies of the same sizes (turns of C and Java processes, so drift hits both).
rep=1
while [ "$rep" -le "${TRANSFER_TURNS:-2}" ]; do
  step "array copies C, turn $rep" transfer.csv timeout 300 ./transfer_copy
  step "array copies cuhandle and JCuda, turn $rep" transfer.csv timeout 600 "$here/run-class" dev.cuhandle.bench.TransferBenchmark
  rep=$((rep + 1))
done
[ -f "$raw/transfer.csv" ] && cp "$raw/transfer.csv" "$out/transfer.csv"
# Issue 35: many small arrays at once (uploadAll/downloadAll, with and without cuMemcpyBatchAsync) against
# loops of single-array copies, cuhandle's and JCuda's, taking turns in one JVM.
step "batch array copies cuhandle and JCuda" batch.csv timeout 600 "$here/run-class" dev.cuhandle.bench.BatchCopyBenchmark
[ -f "$raw/batch.csv" ] && cp "$raw/batch.csv" "$out/batch.csv"
echo "== benchmarks took $(( $(date +%s) - bench_start )) s" >>"$log"

for f in cold.csv cublas.csv cuhandle-blas.csv launch.csv handle.csv anchors.txt transfer.csv batch.csv; do
  [ -f "$raw/$f" ] || : >"$raw/$f"
done
python3 "$here/bench/report.py" "$out" "$raw/notes.csv" "$raw/cold.csv" "$raw/cublas.csv" "$raw/cuhandle-blas.csv" "$raw/launch.csv" \
  "$raw/handle.csv" "$raw/anchors.txt" "$raw/transfer.csv" "$raw/batch.csv" 2>>"$log"
echo "report.py exit $?" >>"$log"
rm -rf "$raw"
tail -1 "$log"
