#!/bin/sh
# Cold start A/B in one run (issue 35): fresh processes in turns, so that drift hits all alike:
# C's cuInit + first primary-context retain (cold_start.c), then ColdStartBenchmark `whole` with each
# cuhandle JAR named, then `steps` with the last. Prints the CSV rows of each (the JAR's file name in
# the fourth column of cuhandle rows, e.g. `cuhandle-before.jar:cold,first_handle_create,...`).
# Usage, from a GPU bundle: bench/cold_start_ab.sh RUNS JAR... (JARs relative to the bundle's app/).
here=$(cd "$(dirname "$0")/.." && pwd)
runs=$1; shift
[ -x "$here/prepare-jre" ] && "$here/prepare-jre"
cd "$here/bench" && nvcc -O2 cold_start.c -o cold_start -lcuda >/dev/null 2>&1 || { echo "# cold_start.c did not build"; exit 1; }
libs=""
for j in "$here"/lib/*.jar; do [ -f "$j" ] && libs="$libs:$j"; done
i=1
while [ "$i" -le "$runs" ]; do
  timeout 30 ./cold_start "$i"
  for jar in "$@"; do
    timeout 30 "$here/jre/bin/java" -cp "$here/app/test-classes:$here/app/$jar$libs" dev.cuhandle.ColdStartBenchmark whole "$i" | sed "s|^cuhandle,|$jar,|"
  done
  last=""
  for jar in "$@"; do last=$jar; done
  timeout 30 "$here/jre/bin/java" -cp "$here/app/test-classes:$here/app/$last$libs" dev.cuhandle.ColdStartBenchmark steps "$i" | sed "s|^cuhandle,|$last-steps,|"
  i=$((i + 1))
done
