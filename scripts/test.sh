#!/usr/bin/env bash
# Every test: installs what is missing (scripts/setup.sh --gradle), then one Maven build that
# compiles the Rust crate and kernels, runs the Rust unit tests (cargo test), the Java tests and the
# Kotlin and Java consumer examples, and installs dev.cuhandle:cuhandle and cuhandle-junit into the
# local Maven repository; then the Gradle consumer (tests/gradle-consumer) builds against them from
# mavenLocal() and runs its tests. Without a GPU the GPU tests are skipped with the reason printed;
# -Dcuhandle.requireGpu=true makes them fail (in the Gradle build too).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --gradle
# Plain output for logs: no ANSI colour codes from Maven or cargo. (Debian's Maven 3.8.7 prints
# two colour resets at start-up whatever it is told, so they are also filtered out.)
export CARGO_TERM_COLOR=never
# The benchmark report generator, on synthetic harness output (no GPU, no matplotlib needed).
python3 tests/bench/test_report.py
# The documentation check: every figure of docs/handles.md in a committed log under docs/runs/ that
# its paragraph links, and no citation of files outside the repository (its own tests first).
python3 scripts/test_check_docs.py
python3 scripts/check_docs.py
# install, not only verify: mavenLocal() is where the Gradle consumer finds the artifacts.
mvn -B -ntp -Dstyle.color=never install "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'

# The Maven arguments that matter to the Gradle build: cuhandle's properties and the local repository.
gradle_args=()
for arg in "$@"; do
  case "$arg" in -Dcuhandle.*|-Dmaven.repo.local=*) gradle_args+=("$arg") ;; esac
done
echo "cuhandle test: tests/gradle-consumer with $(gradle --version 2>/dev/null | grep '^Gradle ') on $(java -version 2>&1 | head -n 1)"
(cd tests/gradle-consumer && gradle --no-daemon -q ${gradle_args[@]+"${gradle_args[@]}"} build run)
echo "cuhandle test: tests/gradle-consumer passed (gradle build run)"
