#!/usr/bin/env bash
# The main job: builds the library JAR if it is missing or older than its sources (only what ships:
# no test build), then runs it, `java -jar`: an environment report and, with a GPU, a self-test.
# Exits non-zero when the machine is not healthy, after the reason and what to do next.
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/main.sh [JVM option...]

Builds cuhandle's JAR when it is missing or out of date (Rust, the built-in kernels and the Java
classes; no tests, about 3-5 minutes the first time, seconds afterwards), then runs it with
`java -jar`: an environment report (Java, OS, native library, driver, NVRTC, devices) and, with a
GPU, a self-test that launches a kernel and checks it against the CPU.

Arguments are JVM options for the report, for example
  scripts/main.sh -Dcuhandle.driver.path=/opt/nvidia/libcuda.so.1 -Dcuhandle.tmpdir=$HOME/tmp

Exit status: 0 healthy; 1 not healthy (the last lines say why and what to do next); other: the
build failed (its log: target/main-build.log).
Environment: MAVEN_ARGS_EXTRA, extra Maven arguments for the build (e.g. -Dmaven.repo.local=...).
USAGE
}
case "${1:-}" in -h|--help) usage; exit 0 ;; esac
. "$(dirname "$0")/lib/build.sh"
jar=java/target/cuhandle-$version.jar
if [ ! -f "$jar" ] || [ -n "$(find rust kernels java/src/main java/pom.xml pom.xml Cargo.toml Cargo.lock -newer "$jar" -type f -print -quit)" ]; then
  stage "building cuhandle $version (first build: a few minutes; the full log goes to target/main-build.log)"
  # No Javadoc or sources JARs either (scripts/install.sh makes them).
  # shellcheck disable=SC2086
  build_shipped "Maven: the library JAR" target/main-build.log -pl java -am package -Dmaven.javadoc.skip=true -Dmaven.source.skip=true ${MAVEN_ARGS_EXTRA:-}
  stage "built $jar"
else
  stage "$jar is up to date"
fi
stage "running java -jar $jar"
exec java "$@" -jar "$jar"
