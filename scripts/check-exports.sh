#!/usr/bin/env bash
# Fails if the shipped library exports the test-only JNI entry points (dev.cuhandle.NativeTestApi:
# raw context destruction, primary-context resets, a deliberate panic; and every other
# dev.cuhandle.*TestApi class). They exist only in the test build (cargo feature test-api).
set -euo pipefail
case "${1:-}" in -h|--help|"") echo "Usage: scripts/check-exports.sh LIBRARY.so   (fails if it exports test-only JNI entry points; java/pom.xml runs it)"; [ -n "${1:-}" ]; exit ;; esac
lib=$1
leaked=$(objdump -T "$lib" | grep -o 'Java_dev_cuhandle_[A-Za-z0-9]*TestApi_[A-Za-z0-9_]*' | sort -u || true)
if [ -n "$leaked" ]; then
  echo "check-exports: $lib exports test-only entry points: $(echo $leaked | tr '\n' ' ')" >&2
  exit 1
fi
echo "check-exports: $lib exports no test-only entry points"
