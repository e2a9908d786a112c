#!/bin/sh
# Spark GPU discovery script for cuhandle: set spark.executor.resource.gpu.discoveryScript (or the
# worker's, in standalone mode) to this file. Prints {"name":"gpu","addresses":["0",...]} for the
# CUDA devices cuhandle sees, numbered as GpuTask.handle() expects them.
# Class path: $CUHANDLE_CLASSPATH, else every cuhandle*.jar beside this script (the cuhandle and
# cuhandle-spark JARs). Java: $JAVA_HOME/bin/java, else java on the PATH. The driver library can
# be chosen with $CUHANDLE_DRIVER_PATH, as for any cuhandle program.
case "${1:-}" in -h|--help) sed -n '2,/^here=/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;; esac
here=$(cd "$(dirname "$0")" && pwd)
cp=${CUHANDLE_CLASSPATH:-}
if [ -z "$cp" ]; then
  for jar in "$here"/cuhandle*.jar; do
    [ -f "$jar" ] && cp="${cp:+$cp:}$jar"
  done
fi
if [ -z "$cp" ]; then
  echo "cuhandle GPU discovery: no cuhandle*.jar beside $0 and CUHANDLE_CLASSPATH is not set" >&2
  exit 1
fi
java=java
[ -n "${JAVA_HOME:-}" ] && java="$JAVA_HOME/bin/java"
exec "$java" -XX:TieredStopAtLevel=1 -cp "$cp" dev.cuhandle.spark.GpuDiscovery "$@"
