#!/usr/bin/env bash
# Stages a release: `mvn deploy` of dev.cuhandle:cuhandle, cuhandle-junit and cuhandle-spark (JARs, sources, Javadoc,
# flattened POMs) into a file-based Maven repository with checksums, which a maintainer checks and then
# uploads to Maven Central (or any repository manager) as it is.
set -euo pipefail
usage() {
  cat <<'USAGE'
Usage: scripts/stage-release.sh [--version X.Y.Z] [--out FOLDER] [Maven option...]

Builds cuhandle and deploys dev.cuhandle:cuhandle, cuhandle-junit and cuhandle-spark into a Maven
repository in FOLDER (default target/staging), in the standard layout: for each artifact the JAR,
-sources.jar, -javadoc.jar and the flattened POM, each with .md5, .sha1 (Maven's) and .sha256,
.sha512 files. Then it checks what it staged and lists it.

  --version X.Y.Z  the version to stage (default: pom.xml's, see scripts/version.py); a version
                   other than pom.xml's is passed as -Drevision, without editing any file
  --out FOLDER     where the staging repository goes (emptied first)

Before staging: run scripts/test.sh and the GPU suite on the commit, and record the release in
CHANGELOG.md. Signing (.asc) is left to the upload step (e.g. gpg --detach-sign each file, or the
repository manager's signing), since the key belongs to the maintainer, not to this script.
Other options go to Maven (e.g. -Dmaven.repo.local=...).
USAGE
}
out=""
release=""
maven_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --version) release=${2:?--version needs a value}; shift 2 ;;
    --out) out=${2:?--out needs a folder}; shift 2 ;;
    *) maven_args+=("$1"); shift ;;
  esac
done
TESTS_SKIP=-DskipTests  # spark/'s tests need the library's test JAR to resolve (lib/build.sh)
. "$(dirname "$0")/lib/build.sh"
release=${release:-$version}
out=$(realpath -m "${out:-target/staging}")
if [ -n "$(git status --porcelain 2>/dev/null)" ]; then
  stage "warning: the working tree has uncommitted changes; a release is staged from a clean commit"
fi
rm -rf "$out"
mkdir -p "$out"
stage "staging cuhandle $release from $(git rev-parse --short HEAD 2>/dev/null || echo 'an unknown commit') into $out"
build_shipped "Maven: deploy cuhandle, cuhandle-junit and cuhandle-spark" target/stage-release.log -pl java,junit,spark -am deploy \
  "-Drevision=$release" "-DaltDeploymentRepository=staging::file://$out" -Dmaven.install.skip=true ${maven_args[@]+"${maven_args[@]}"}

# The library's test JAR is the build's (the GPU bundle, spark/'s tests), not a published artifact.
find "$out" -name '*-tests.jar*' -delete
# Maven writes .md5 and .sha1; Maven Central also accepts .sha256 and .sha512, which are worth having.
stage "adding SHA-256 and SHA-512 checksums"
find "$out" -type f \( -name '*.jar' -o -name '*.pom' \) | while read -r f; do
  sha256sum "$f" | cut -d' ' -f1 > "$f.sha256"
  sha512sum "$f" | cut -d' ' -f1 > "$f.sha512"
done

stage "checking the staging repository"
problems=0
for artifact in cuhandle cuhandle-junit cuhandle-spark; do
  dir="$out/dev/cuhandle/$artifact/$release"
  base=$(ls "$dir"/"$artifact"-*.pom 2>/dev/null | head -n 1 || true)
  if [ -z "$base" ]; then echo "  missing: $dir/$artifact-$release.pom" >&2; problems=1; continue; fi
  base=${base%.pom}  # snapshots carry a timestamp instead of -SNAPSHOT
  for suffix in .pom .jar -sources.jar -javadoc.jar; do
    for sum in "" .md5 .sha1 .sha256 .sha512; do
      [ -f "$base$suffix$sum" ] || { echo "  missing: $base$suffix$sum" >&2; problems=1; }
    done
  done
  # The published POM is the flattened one: no parent, build or profiles, and the version resolved.
  if grep -q -e '<parent>' -e '<build>' -e '<profiles>' -e '${revision}' "$base.pom"; then
    echo "  $base.pom is not flattened" >&2; problems=1
  fi
  # Checksums must match the files.
  for f in "$base".pom "$base".jar; do
    [ "$(sha1sum "$f" | cut -d' ' -f1)" = "$(cut -d' ' -f1 < "$f.sha1")" ] || { echo "  $f.sha1 does not match" >&2; problems=1; }
  done
done
[ "$problems" = 0 ] || { stage "FAILED: the staging repository is incomplete (above)"; exit 1; }
( cd "$out" && find . -type f ! -name '*.md5' ! -name '*.sha*' ! -name 'maven-metadata*' | sort | sed 's/^\./  /' )
stage "staged cuhandle $release in $out: upload this repository (with signatures) to publish"
