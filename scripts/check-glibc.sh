#!/usr/bin/env bash
# Fails if the shared library needs a glibc symbol version newer than 2.17 (the shipped
# .so must load on any Linux x86-64 with glibc >= 2.17).
set -euo pipefail
case "${1:-}" in -h|--help|"") echo "Usage: scripts/check-glibc.sh LIBRARY.so   (fails if it needs a glibc newer than 2.17; java/pom.xml runs it)"; [ -n "${1:-}" ]; exit ;; esac
lib=$1
newest=$(objdump -T "$lib" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV | tail -n 1)
if [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -n 1)" != "2.17" ]; then
  echo "check-glibc: $lib needs GLIBC_$newest, newer than the 2.17 baseline" >&2
  exit 1
fi
echo "check-glibc: $lib needs at most GLIBC_$newest (baseline 2.17)"
