#!/bin/sh
# Publishes one benchmark run (the OUT folder of `run-all bench` on the GPU host, copied back here):
# copies perf.csv and the charts to docs/perf/ and regenerates docs/performance.md's benchmark
# section (between <!-- perf:begin --> and <!-- perf:end -->) from docs/perf/perf.csv.
set -eu
usage="usage: tests/bench/publish.sh OUT_FOLDER (holding perf.csv from run-all bench); see docs/performance.md"
case "${1:-}" in -h|--help) echo "$usage"; exit 0 ;; esac
[ $# -eq 1 ] && [ -f "$1/perf.csv" ] || { echo "$usage" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$root/docs/perf"
cp "$1/perf.csv" "$root/docs/perf/perf.csv"
for png in blas-gbps.png blas-us.png launch.png; do
  if [ -f "$1/$png" ]; then cp "$1/$png" "$root/docs/perf/$png"; else echo "warning: $1/$png missing (no matplotlib on the GPU host?)" >&2; fi
done
cd "$root"
# Image links relative to the page: docs/performance.md -> docs/perf/*.png
python3 tests/bench/report.py --readme docs/performance.md docs/perf/perf.csv perf
echo "updated docs/perf/ and docs/performance.md; review with: git diff --stat docs/performance.md docs/perf"
