#!/usr/bin/env bash
# Every test: installs what is missing (scripts/setup.sh), then one Maven build that compiles the
# Rust crate and kernels, runs the Rust unit tests (cargo test) and the Java tests. Without a GPU
# the GPU tests are skipped with the reason printed; -Dcuhandle.requireGpu=true makes them fail.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# Plain output for logs: no ANSI colour codes from Maven or cargo. (Debian's Maven 3.8.7 prints
# two colour resets at start-up whatever it is told, so they are also filtered out.)
export CARGO_TERM_COLOR=never
mvn -B -ntp -Dstyle.color=never verify "$@" 2>&1 | sed -u 's/\x1b\[[0-9;]*m//g'
exit "${PIPESTATUS[0]}"
