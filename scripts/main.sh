#!/usr/bin/env bash
# The main job: builds the JAR if needed, then `java -jar` it: an environment report and, with a
# GPU, a self-test. Exits non-zero with a one-line reason when the machine is not healthy.
# Arguments are JVM options (the report takes none), e.g.
#   scripts/main.sh -Dcuhandle.driver.path=/opt/nvidia/libcuda.so.1 -Dcuhandle.tmpdir=$HOME/tmp
set -euo pipefail
cd "$(dirname "$0")/.."
jar=java/target/cuhandle-0.1.0-SNAPSHOT.jar
if [ ! -f "$jar" ] || [ -n "$(find rust kernels java/src/main java/pom.xml Cargo.toml -newer "$jar" -type f -print -quit)" ]; then
  scripts/setup.sh
  mvn -B -ntp -q -Dstyle.color=never package -DskipTests
fi
exec java "$@" -jar "$jar"
