#!/usr/bin/env bash
# Builds a self-contained folder that runs cuhandle's GPU test suite, self-test and benchmarks on a
# Linux x86-64 host with a GPU but no JDK or Maven: a jlink'ed JRE, the JAR, the test JAR, JUnit's
# console launcher and `run-*` scripts. Usage: scripts/gpu-bundle.sh [folder] (default .gpu-bundle)
set -euo pipefail
case "${1:-}" in
  -h|--help)
    cat <<'USAGE'
Usage: scripts/gpu-bundle.sh [folder]   (default .gpu-bundle)

Builds a self-contained folder that runs cuhandle's GPU test suite, self-test, benchmarks and soak on
a Linux x86-64 host with an NVIDIA driver but no JDK or Maven: a jlink'ed JRE (about 40 MB), the JAR,
the test classes, JUnit's console launcher and the C benchmark sources. Copy it there and run
folder/run-tests, folder/run-main, folder/run-all [tests|bench|proof|all], folder/run-class CLASS,
folder/run-soak (see CONTRIBUTING.md).
USAGE
    exit 0 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/.gpu-bundle}")
cd "$root"
scripts/setup.sh
mvn -B -ntp -q package -DskipTests
rm -rf "$out"
mkdir -p "$out/app" "$out/lib" "$out/bench"
cp "java/target/cuhandle-$(python3 scripts/version.py).jar" "$out/app/cuhandle.jar"
# Test classes as a folder: the console launcher's class-path scan finds tests in folders.
cp -r java/target/test-classes "$out/app/test-classes"
# Test-scope libraries other than JUnit (the console launcher brings JUnit itself).
mvn -B -ntp -q -f java/pom.xml dependency:copy-dependencies -DincludeScope=test -DexcludeGroupIds=org.junit.jupiter,org.junit.platform,org.opentest4j,org.apiguardian -DoutputDirectory="$out/lib"
mvn -B -ntp -q dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.14.1 -DoutputDirectory="$out/lib"
mv "$out"/lib/junit-platform-console-standalone-*.jar "$out/junit-console.jar"
# JCuda's natives JAR also holds its NVRTC and PTX-compiler bindings (about 9 of its 9.5 MB), which no
# test or benchmark loads (they use JCuda's driver API alone); without them the bundle and the tree fit
# one 64 MiB carry to the GPU host.
python3 - "$out"/lib/jcuda-natives-*.jar <<'PY'
import os, sys, zipfile
for path in sys.argv[1:]:
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(path + ".tmp", "w", zipfile.ZIP_DEFLATED) as dst:
        for item in src.infolist():
            if not os.path.basename(item.filename).startswith(("libJNvrtc", "libJNvPTXCompiler")):
                dst.writestr(item, src.read(item.filename))
    os.replace(path + ".tmp", path)
PY
# Sources the GPU host compiles itself (it has nvcc and cuBLAS): the C baselines for benchmarks.
cp tests/bench/*.cu tests/bench/*.c tests/bench/report.py "$out/bench/"
cp tests/bench/run-all.sh "$out/run-all"
cp tests/bench/cold_start_ab.sh "$out/bench/"
# Same-run A/B against another build's app folder (run-ab OTHER_APP [TURNS] [CLASS ARGS...]).
cp tests/bench/ab.sh "$out/run-ab"
# The cuBLAS behaviour proofs behind docs/handles.md (run-all's `proof` step compiles them there).
mkdir -p "$out/handles-proof"
cp tests/handles-proof/*.cu "$out/handles-proof/"
jlink="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}/bin/jlink"
"$jlink" --add-modules java.base,java.logging,java.management,jdk.management,jdk.unsupported,java.xml \
  --strip-debug --no-man-pages --no-header-files --compress=2 --output "$out/jre"
# The class-data sharing archives every JDK ships (the JVM maps the JDK classes a start needs from them
# instead of reading them out of the module image): made on the GPU host by the first run, since carrying
# them would add 22 MB to the bundle. classes.jsa serves heaps small enough for compressed object pointers,
# classes_nocoops.jsa larger ones (the default heap of a host with 128 GiB). Without them the bundle's JVM
# starts every JDK class from the compressed image, unlike the JDKs users run: the cold start's extract
# step took 12.9 ms that way against 8.8 ms with them on the 2-core machine (docs/performance.md). A dump
# that fails (a read-only folder) is reported once and not tried again.
cat > "$out/prepare-jre" <<'RUN'
#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
server="$here/jre/lib/server"
[ -e "$server/cds-failed" ] && exit 0
dump() { # dump ARCHIVE JVM_OPTIONS...
  archive=$1; shift
  [ -f "$server/$archive" ] && return 0
  "$here/jre/bin/java" "$@" -Xshare:dump >/dev/null 2>&1 && [ -f "$server/$archive" ] && return 0
  echo "prepare-jre: no class-data sharing archive $archive (java $* -Xshare:dump failed); the JVM starts without it" >&2
  touch "$server/cds-failed" 2>/dev/null || true # a read-only folder: reported on every run then
  return 0
}
dump classes.jsa -Xmx1g -XX:+UseCompressedOops
dump classes_nocoops.jsa -XX:-UseCompressedOops
exit 0
RUN
cat > "$out/run-tests" <<'RUN'
#!/bin/sh
# The GPU test suite; GPU tests fail (not skip) without a GPU. Extra arguments go to the JVM.
here=$(cd "$(dirname "$0")" && pwd)
"$here/prepare-jre"
cp="$here/app/test-classes:$here/app/cuhandle.jar" # test classes first: their native library has the test-only entry points
for j in "$here"/lib/*.jar; do [ -f "$j" ] && cp="$cp:$j"; done
exec "$here/jre/bin/java" -Dcuhandle.requireGpu=true "$@" -jar "$here/junit-console.jar" execute \
  --class-path "$cp" --scan-class-path "$here/app/test-classes" --disable-banner --disable-ansi-colors --details=tree --details-theme=ascii
RUN
cat > "$out/run-main" <<'RUN'
#!/bin/sh
# The environment report and self-test (java -jar cuhandle.jar).
here=$(cd "$(dirname "$0")" && pwd)
"$here/prepare-jre"
exec "$here/jre/bin/java" "$@" -jar "$here/app/cuhandle.jar"
RUN
cat > "$out/run-class" <<'RUN'
#!/bin/sh
# Runs a main class from the test JAR (benchmarks): run-class dev.cuhandle.SomeBenchmark args...
# JVM options go in RUN_CLASS_JAVA_OPTS (for example -XX:+UseZGC).
here=$(cd "$(dirname "$0")" && pwd)
"$here/prepare-jre"
cls=$1; shift
cp="$here/app/test-classes:$here/app/cuhandle.jar" # test classes first: their native library has the test-only entry points
for j in "$here"/lib/*.jar; do [ -f "$j" ] && cp="$cp:$j"; done
exec "$here/jre/bin/java" ${RUN_CLASS_JAVA_OPTS:-} -cp "$cp" "$cls" "$@"
RUN
cat > "$out/run-soak" <<'RUN'
#!/bin/sh
# The soak: run-soak [--threads N] [--minutes M | --seconds S] [--seed X] [--csv file]
# (dev.cuhandle.SoakMain; exit code 0 = pass). JVM options go in SOAK_JAVA_OPTS (default -Xms64m -Xmx4g:
# a small minimum heap so that the heap shrinks back after the final GCs and RSS compares fairly).
here=$(cd "$(dirname "$0")" && pwd)
"$here/prepare-jre"
cp="$here/app/test-classes:$here/app/cuhandle.jar" # test classes first: their native library has the test-only entry points
for j in "$here"/lib/*.jar; do [ -f "$j" ] && cp="$cp:$j"; done
exec "$here/jre/bin/java" ${SOAK_JAVA_OPTS:--Xms64m -Xmx4g} -cp "$cp" dev.cuhandle.SoakMain "$@"
RUN
chmod +x "$out"/run-* "$out/prepare-jre"
echo "GPU bundle ready: $out ($(du -sh "$out" | cut -f1)); on the GPU host run $out/run-tests,"
echo "or the soak: $out/run-soak --threads 16 --minutes 10 --csv soak.csv"
