#!/usr/bin/env bash
# Fails unless the shipped library exports exactly what the JVM looks up in it: JNI_OnLoad (and
# JNI_OnUnload, should it ever have one). Every native method is registered from JNI_OnLoad
# (rust/src/jni/natives.rs), so a Java_* export would be a second way in that the load's checks
# do not cover, and the test-only entry points (dev.cuhandle.*TestApi, cargo feature test-api)
# must not be reachable at all.
set -euo pipefail
case "${1:-}" in -h|--help|"") echo "Usage: scripts/check-exports.sh LIBRARY.so   (fails if it exports test-only JNI entry points; java/pom.xml runs it)"; [ -n "${1:-}" ]; exit ;; esac
lib=$1
exports=$(objdump -T "$lib" | awk '$4 != "*UND*" && $2 ~ /g/ { print $NF }' | sort -u)
unexpected=$(echo "$exports" | grep -v -x -e JNI_OnLoad -e JNI_OnUnload || true)
if [ -n "$unexpected" ]; then
  echo "check-exports: $lib exports more than JNI_OnLoad: $(echo $unexpected | tr '\n' ' ')" >&2
  exit 1
fi
if ! echo "$exports" | grep -q -x JNI_OnLoad; then
  echo "check-exports: $lib does not export JNI_OnLoad, which registers its native methods" >&2
  exit 1
fi
echo "check-exports: $lib exports only JNI_OnLoad"
