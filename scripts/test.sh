#!/usr/bin/env bash
# Every test: installs what is missing (scripts/setup.sh --gradle), checks the documentation, the
# version, the third-party notices, the Java library's layering and the Rust crate's layering, formatting and lints, then one Maven build that compiles the Rust crate and kernels,
# runs the Rust unit tests (cargo test), the Java tests (on the machine's driver, on the CPU stand-in
# driver, and on Java 25 where installed) and the Kotlin and Java consumer examples, and installs
# dev.cuhandle:cuhandle and cuhandle-junit into the local Maven repository; then the Gradle consumer
# (tests/gradle-consumer) and the projects built from README.md's snippets build against them and run,
# and docs/guide/starter's tests skip, run and fail as the testing guide says (check_new_user_path.py).
set -euo pipefail
case "${1:-}" in
  -h|--help)
    cat <<'USAGE'
Usage: scripts/test.sh [Maven option...]

Runs every test of cuhandle (what CI runs, through .ci/run): the checks of the docs, the version and
THIRD-PARTY-NOTICES; the Rust crate's and the Java library's layering (scripts/check_layers.py,
scripts/check_java_layers.py), cargo fmt --check and
cargo clippy -D warnings; cargo test; the Java suite on the machine's driver and on the CPU stand-in
driver (and on Java 25 where installed); cuhandle-junit; the Java, Kotlin and Gradle consumers; and
README.md's Quick start built with Maven and Gradle; docs/guide/starter's tests with Maven and
Gradle, without a GPU, on the CPU stand-in and with -Dcuhandle.requireGpu=true. Takes 10-20 minutes on two cores.
Without a GPU the GPU tests are skipped with the reason printed. Options go to Maven (and the
cuhandle.* ones and -Dmaven.repo.local to Gradle and the README projects too), e.g.
  scripts/test.sh -Dcuhandle.requireGpu=true       GPU tests fail instead of skipping
  scripts/test.sh -Dmaven.repo.local=/path/to/repo another local Maven repository
USAGE
    exit 0 ;;
esac
cd "$(dirname "$0")/.."
scripts/setup.sh --gradle
# Issue 38: setup.sh run from another user's folder imports nothing from it (Python's -m and -c put
# the working directory first on sys.path): a planted ziglang.py and ensurepip.py must not run.
plant=$(mktemp -d)
for module in ziglang ensurepip venv; do
  printf 'open(%s, "a").write("%s ran\\n")\n' "'$plant/ran'" "$module" > "$plant/$module.py"
done
(cd "$plant" && "$OLDPWD/scripts/setup.sh" --gradle >/dev/null)
if [ -e "$plant/ran" ]; then
  echo "cuhandle test: FAILED: setup.sh run from $plant imported from that folder: $(cat "$plant/ran")" >&2
  exit 1
fi
rm -rf "$plant"
echo "cuhandle test: setup.sh run from a folder with planted ziglang.py, ensurepip.py and venv.py imported none of them"
# Plain output for logs: no ANSI colour codes from Maven or cargo. (Debian's Maven 3.8.7 prints
# two colour resets at start-up whatever it is told, so they are also filtered out.)
export CARGO_TERM_COLOR=never
# The benchmark report generator, on synthetic harness output (no GPU, no matplotlib needed).
python3 tests/bench/test_report.py
# The documentation check: every figure of docs/handles.md in a committed log under docs/runs/ that
# its paragraph links, no citation of files outside the repository, every cited rule defined in
# docs/design.md, every relative link resolving, every setting documented (its own tests first).
python3 scripts/test_check_docs.py
python3 scripts/check_docs.py
# One version: pom.xml's, everywhere it is written down.
python3 scripts/version.py --check
# THIRD-PARTY-NOTICES matches Cargo.lock and the POMs' dependencies.
python3 scripts/third-party-notices.py --check
# install.sh refuses an option Maven does not take in one line, and its summary names both artifacts.
python3 scripts/test_install_args.py
# The rules of the house as checks: the Rust crate's layering (imports only point down its floors, the
# core uses no JNI; the checker's own tests first), its formatting (rustfmt.toml) and clippy with every
# warning an error, on the test build too.
python3 scripts/test_check_layers.py
python3 scripts/check_layers.py
cargo fmt --check
cargo clippy -q --features test-api --all-targets -- -D warnings
echo "cuhandle test: cargo fmt --check and cargo clippy -D warnings passed"
# The Java library's layering likewise (its tests ran above with the Rust check's): the lifecycle bases and
# the native seam name no class of a floor above them.
python3 scripts/check_java_layers.py
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
# README.md's Quick start as a new project, built by Maven (Java, Kotlin) and Gradle against what was
# just installed, and run on the machine's driver and on the CPU stand-in.
python3 scripts/check_readme_snippets.py ${gradle_args[@]+"${gradle_args[@]}"}
# The new user's first GPU tests: docs/guide/starter (README.md's snippets in complete build files)
# with Maven and Gradle, skipped without a GPU, on the stand-in that docs/guide/testing.md builds, and
# failing with -Dcuhandle.requireGpu=true or denied native access.
python3 scripts/check_new_user_path.py ${gradle_args[@]+"${gradle_args[@]}"}
