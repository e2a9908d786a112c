#!/bin/sh
# Spark GPU discovery script for cuhandle: set spark.executor.resource.gpu.discoveryScript (or the
# worker's, in standalone mode) to this file. Prints {"name":"gpu","addresses":["0",...]} for the
# CUDA devices cuhandle sees, numbered as GpuTask.handle() expects them.
# Class path: $CUHANDLE_CLASSPATH, else every cuhandle*.jar beside this script (the cuhandle and
# cuhandle-spark JARs); each element must be an absolute path (an empty or relative one would load
# classes from the working directory). Java: $JAVA_HOME/bin/java, else the first java on the PATH
# found in an absolute folder (empty and relative PATH entries, the working directory, are
# skipped). The driver library can be chosen with $CUHANDLE_DRIVER_PATH, as for any cuhandle program.
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
old_ifs=$IFS
IFS=:
for element in $cp""; do
  case "$element" in
    /*) ;;
    *) echo "cuhandle GPU discovery: the class path element '$element' is not an absolute path (an empty or relative one would load classes from the working directory): $cp" >&2
       exit 1 ;;
  esac
done
java=
if [ -n "${JAVA_HOME:-}" ]; then
  case "$JAVA_HOME" in
    /*) java="$JAVA_HOME/bin/java" ;;
    *) echo "cuhandle GPU discovery: JAVA_HOME ($JAVA_HOME) is not an absolute path" >&2; exit 1 ;;
  esac
else
  for folder in $PATH; do
    case "$folder" in /*) [ -x "$folder/java" ] && [ ! -d "$folder/java" ] && { java="$folder/java"; break; } ;; esac
  done
fi
IFS=$old_ifs
if [ -z "$java" ]; then
  echo "cuhandle GPU discovery: no java in the absolute folders of PATH and JAVA_HOME is not set" >&2
  exit 1
fi
exec "$java" -XX:TieredStopAtLevel=1 -cp "$cp" dev.cuhandle.spark.GpuDiscovery "$@"
