#!/usr/bin/env bash
# Installs what the build needs and is missing, idempotently; prints one line naming anything it
# cannot install. Rust (1.88+), a JDK (17+), Maven and a C compiler are expected on the machine;
# nvcc comes from Debian's nvidia-cuda-toolkit, which lives in the non-free component; zig goes
# into a virtual environment of the project's own. `--gradle` also installs Debian's gradle
# (scripts/test.sh needs it for tests/gradle-consumer).
set -euo pipefail
# Everything below runs in the repository: run from another user's folder, Python's `-m` and `-c`
# would otherwise import from that folder first (a planted ziglang.py or ensurepip.py would run, as
# root when this is run as root). Python is also run isolated (-I: no working directory, user site
# or PYTHON* variables on its path).
cd "$(dirname "$0")/.."
case "${1:-}" in
  -h|--help)
    echo "Usage: scripts/setup.sh [--gradle]"
    echo "Installs what cuhandle's build needs and is missing (nvcc from Debian's nvidia-cuda-toolkit, zig into"
    echo ".tools/zig-venv, cargo-zigbuild; with --gradle Debian's gradle), idempotently; names what it cannot install"
    echo "(Rust, a JDK, Maven, a C compiler, python3). Every other script runs it first."
    exit 0 ;;
esac

missing() { echo "cuhandle setup: missing $1" >&2; exit 1; }

# Debian and Ubuntu: packages come from apt-get, as root or through sudo. env passes
# DEBIAN_FRONTEND through sudo, which would otherwise reset it.
is_debian() { [ -r /etc/debian_version ] && command -v apt-get >/dev/null; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }
apt_updated=""
apt_install() {  # PACKAGE WHY
  echo "cuhandle setup: installing $1 ($2)"
  # Package lists once per run, however many packages follow. Other third-party lists on the
  # machine may be unreachable; their failure must not stop us.
  if [ -z "$apt_updated" ]; then as_root apt-get update -qq || true; apt_updated=1; fi
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$1" >/dev/null \
    || missing "$1 ('apt-get install $1' failed)"
}

command -v cargo >/dev/null || missing "cargo (install Rust 1.88 or newer with rustup: https://rustup.rs)"
rust=$(rustc --version 2>/dev/null | awk '{print $2}')
[ "$(printf '%s\n1.88.0\n' "$rust" | sort -V | head -n 1)" = "1.88.0" ] \
  || missing "Rust 1.88 or newer (found rustc ${rust:-none}; the locked jni and libloading need 1.88): rustup update"
# scripts/test.sh checks formatting and lints: rustfmt and clippy, rustup components of the toolchain.
for tool in fmt clippy; do
  if ! cargo "$tool" --version >/dev/null 2>&1; then
    component=$([ "$tool" = fmt ] && echo rustfmt || echo clippy)
    command -v rustup >/dev/null || missing "cargo $tool ($component; with rustup: rustup component add $component)"
    echo "cuhandle setup: installing $component (rustup component add $component)"
    rustup component add "$component" >/dev/null 2>&1 || missing "$component ('rustup component add $component' failed)"
  fi
done
command -v java  >/dev/null || missing "java (a JDK 17 or newer to build; the library itself runs on Java 11+)"
command -v javac >/dev/null || missing "javac (a JDK 17 or newer, not only a JRE)"
jdk=$(javac -version 2>&1 | awk '{print $2}' | cut -d. -f1)
[ "${jdk:-0}" -ge 17 ] 2>/dev/null \
  || missing "a JDK 17 or newer to build (javac ${jdk:-?} found; the tests use Java 17, the library runs on 11+)"
command -v mvn   >/dev/null || missing "mvn (Apache Maven 3.6 or newer)"
command -v cc    >/dev/null || missing "cc (a C compiler, for the test build's CPU stand-in driver; Debian: apt-get install gcc)"

if ! command -v nvcc >/dev/null; then
  is_debian || missing "nvcc (install the CUDA toolkit, 11.8 or newer, and put nvcc on PATH)"
  list=/etc/apt/sources.list.d/cuhandle-non-free.sources
  if [ ! -f "$list" ]; then
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
    echo "cuhandle setup: enabling Debian's non-free component ($list) for nvidia-cuda-toolkit"
    printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: %s %s-updates\nComponents: contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
      "$codename" "$codename" | as_root tee "$list" >/dev/null
  fi
  apt_install nvidia-cuda-toolkit "nvcc, from Debian non-free; a few minutes the first time"
fi
command -v nvcc >/dev/null || missing "nvcc after installing nvidia-cuda-toolkit"

# Gradle, only with --gradle (scripts/test.sh: tests/gradle-consumer proves that a Gradle build
# consumes the published JARs). Debian 12's is 4.4.1, which runs on Debian's JDK 17.
if [ "${1:-}" = "--gradle" ] && ! command -v gradle >/dev/null; then
  is_debian || missing "gradle (4.4 or newer, for tests/gradle-consumer)"
  apt_install gradle "Debian's 4.4.1, for tests/gradle-consumer; a minute the first time"
  command -v gradle >/dev/null || missing "gradle after installing Debian's gradle package"
fi

# The shipped library must load on glibc 2.17 systems (RHEL 7/8, Ubuntu 20.04): it is linked by
# cargo-zigbuild against a 2.17 sysroot, with zig taken from PyPI's ziglang package. It goes into a
# virtual environment the project owns (.tools/zig-venv, git-ignored), never the system Python's
# site-packages: Debian's and Ubuntu's system Python refuse pip installs there (PEP 668). The build
# (java/pom.xml) hands that environment's python to cargo-zigbuild.
root=$(pwd)
venv="$root/.tools/zig-venv"
if ! "$venv/bin/python3" -I -m ziglang version >/dev/null 2>&1; then
  command -v python3 >/dev/null || missing "python3 (with its venv module; Debian/Ubuntu: apt-get install python3-venv)"
  if ! python3 -I -c 'import ensurepip' >/dev/null 2>&1; then
    is_debian || missing "Python's venv module with ensurepip (install your distribution's python3-venv package)"
    apt_install python3-venv "Python's venv module, for the build's own zig"
  fi
  echo "cuhandle setup: installing ziglang 0.13.0 from PyPI into $venv"
  rm -rf "$venv"
  python3 -I -m venv "$venv" || missing "a Python virtual environment ('python3 -m venv $venv' failed)"
  "$venv/bin/python3" -I -m pip install -q --disable-pip-version-check ziglang==0.13.0 \
    || missing "ziglang ('$venv/bin/python3 -m pip install ziglang==0.13.0' failed)"
fi
if ! command -v cargo-zigbuild >/dev/null; then
  echo "cuhandle setup: installing cargo-zigbuild 0.24.1 from crates.io (about 2 minutes)"
  cargo install -q --locked cargo-zigbuild --version 0.24.1 || missing "cargo-zigbuild ('cargo install cargo-zigbuild' failed)"
fi
