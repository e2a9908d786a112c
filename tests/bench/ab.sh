#!/bin/sh
# Same-run A/B of two builds on the GPU host, from inside a bundle made by scripts/gpu-bundle.sh:
# run-ab OTHER_APP [TURNS] [CLASS ARGS...]. OTHER_APP is another build's app folder (its
# cuhandle.jar and test-classes, e.g. from `scripts/gpu-bundle.sh` at an older commit); the
# harnesses run in turns, TURNS times (default 3), so that drift hits both alike: the other build
# first in odd turns, this bundle's first in even ones, since the second JVM of a turn read slower in
# rows neither build changed (the native create + destroy at 78edd51, docs/performance.md).
# Without CLASS: the launch, launch-gap and memory-churn harnesses.
# Each output line is prefixed "ab,<other|this>,<turn>,". Writes nothing else.
here=$(cd "$(dirname "$0")" && pwd)
other=$(cd "${1:?usage: run-ab OTHER_APP [TURNS] [CLASS ARGS...]}" && pwd)
turns=${2:-3}
[ -x "$here/prepare-jre" ] && "$here/prepare-jre"
[ $# -ge 2 ] && shift 2 || shift 1
libs=""
for j in "$here"/lib/*.jar; do [ -f "$j" ] && libs="$libs:$j"; done
run() { # run APP_FOLDER LABEL TURN CLASS ARGS...
  app=$1; label=$2; turn=$3; shift 3
  timeout 180 "$here/jre/bin/java" -cp "$app/test-classes:$app/cuhandle.jar$libs" "$@" 2>&1 | sed "s/^/ab,$label,$turn,/"
}
turn=1
while [ "$turn" -le "$turns" ]; do
  order="other this"
  [ $((turn % 2)) -eq 0 ] && order="this other"
  for side in $order; do
    app=$other; [ "$side" = this ] && app=$here/app
    if [ $# -gt 0 ]; then
      run "$app" "$side" "$turn" "$@"
    else
      run "$app" "$side" "$turn" dev.cuhandle.LaunchBenchmark
      run "$app" "$side" "$turn" dev.cuhandle.LaunchGapBenchmark
      run "$app" "$side" "$turn" dev.cuhandle.bench.MemoryBenchmark churn
    fi
  done
  turn=$((turn + 1))
done
