#!/usr/bin/env bash
# Every test: installs what is missing (scripts/setup.sh), then one Maven build that compiles the
# Rust crate and kernels, runs the Rust unit tests (cargo test) and the Java tests. Without a GPU
# the GPU tests are skipped with the reason printed; -Dcuhandle.requireGpu=true makes them fail.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec mvn -B -ntp verify "$@"
