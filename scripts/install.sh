#!/usr/bin/env bash
# Builds cuhandle and installs dev.cuhandle:cuhandle and dev.cuhandle:cuhandle-junit (with their
# sources and Javadoc JARs and flattened POMs) into the local Maven repository, so that Maven and
# Gradle projects on this machine can depend on them. No tests: scripts/test.sh runs those.
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/install.sh [--spark] [Maven option...]

Builds cuhandle (Rust, the built-in kernels, the Java classes, Javadoc; about 3-5 minutes the
first time) and installs into your local Maven repository (~/.m2/repository by default):
  dev.cuhandle:cuhandle        the library: one JAR with the native library and kernels inside
  dev.cuhandle:cuhandle-junit  @RequiresGpu for JUnit 5 tests
Then depend on them from Maven (mavenLocal is implicit) or Gradle (repositories { mavenLocal() }),
as README.md shows. Tests are not run; scripts/test.sh runs them all.
  --spark  also dev.cuhandle:cuhandle-spark (docs/spark.md; downloads Spark 4.1's JARs to compile)

Options go to Maven, e.g. another local repository:
  scripts/install.sh -Dmaven.repo.local=/path/to/repository
Exit status: 0 installed; 2 an option Maven does not take (named in one line); otherwise the build
failed (its log: target/install-build.log).
USAGE
}
modules=java,junit
artifacts="dev.cuhandle:cuhandle:VERSION and dev.cuhandle:cuhandle-junit:VERSION"
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  --spark) modules=java,junit,spark; TESTS_SKIP=-DskipTests; artifacts="dev.cuhandle:cuhandle, cuhandle-junit and cuhandle-spark VERSION"; shift ;;
esac
# An option Maven does not take ends here with one line, not Maven's page of usage after a
# minute of setup: Maven's own parser decides (`--version` parses every option, then stops).
if [ "$#" -gt 0 ] && command -v mvn >/dev/null && ! parsed=$(mvn -B "$@" --version 2>&1); then
  why=$(printf '%s\n' "$parsed" | sed -n 's/^Unable to parse command line options: //p' | head -n 1)
  echo "scripts/install.sh: ${why:-Maven refused the options: $*}; it takes --spark first, then Maven options (see scripts/install.sh --help)" >&2
  exit 2
fi
. "$(dirname "$0")/lib/build.sh"
artifacts=${artifacts//VERSION/$version}
stage "installing cuhandle $version into the local Maven repository (first build: a few minutes; log: target/install-build.log)"
build_shipped "Maven: $modules, with sources and Javadoc" target/install-build.log -pl "$modules" -am install "$@"
repo=$(sed -n 's/.*Installing .* to \(.*\)\/dev\/cuhandle\/cuhandle\/.*/\1/p' target/install-build.log | head -n 1)
stage "installed $artifacts${repo:+ in $repo}"
cat <<DONE

Use it from Maven (cuhandle-junit: @RequiresGpu for your GPU tests):
  <dependency>
    <groupId>dev.cuhandle</groupId>
    <artifactId>cuhandle</artifactId>
    <version>$version</version>
  </dependency>
  <dependency>
    <groupId>dev.cuhandle</groupId>
    <artifactId>cuhandle-junit</artifactId>
    <version>$version</version>
    <scope>test</scope>
  </dependency>
or Gradle: repositories { mavenLocal(); mavenCentral() }
           dependencies { implementation 'dev.cuhandle:cuhandle:$version'
                          testImplementation 'dev.cuhandle:cuhandle-junit:$version' }
Quick start: README.md. Check this machine's GPU: scripts/main.sh
DONE
