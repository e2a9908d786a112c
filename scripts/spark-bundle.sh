#!/usr/bin/env bash
# A self-contained folder that runs the Spark example job (docs/spark.md) on a Linux x86-64 host
# with an NVIDIA driver and no Java: a jlink'ed JRE with the modules Spark needs, the cuhandle and
# cuhandle-spark JARs with the example, the Spark JARs the job needs, and the runner. It is split
# into folders of at most PART_MIB MiB (default 56) for a host that is reached by transfers of
# 64 MiB each: scripts/spark-bundle.sh [folder] (default .spark-bundle) makes folder/part-1,
# folder/part-2, ...; once all parts are on the host, run any part's run-spark-example there.
# Maven options (a local repository, say) go in MAVEN_OPTS.
#
# Why not the GPU test bundle's JRE (scripts/gpu-bundle.sh): that bundle is about 53 MiB, and the
# modules Spark needs add 12 MiB (java.desktop alone 10), which would take it past one transfer.
#
# spark-core 4.1 brings about 230 MiB of JARs; most serve features this job never loads. Each
# exclusion below says what it serves. The set is checked by running the example job with exactly
# these JARs on the CPU stand-in driver (docs/spark.md, "Running the example on a GPU host").
set -euo pipefail
case "${1:-}" in
  -h|--help)
    echo "Usage: scripts/spark-bundle.sh [folder]   (default .spark-bundle)"
    echo "A self-contained bundle of the Spark example job for a GPU host without Java, split into parts of at most"
    echo "PART_MIB MiB (default 56); run any part's run-spark-example there once all parts are copied (docs/spark.md)."
    echo "Maven options (a local repository, say) go in MAVEN_OPTS."
    exit 0 ;;
esac
root=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$root/.spark-bundle}")
part_mib=${PART_MIB:-56}
cd "$root"

excluded=(
  'rocksdbjni-*' 'leveldbjni-all-*'                # disk-backed status store: history server, spark.ui.store.path (70 MiB)
  'icu4j-*'                                        # collations of Spark SQL strings; RDD jobs never load them
  '*-osx-*' '*-windows-*' '*-linux-aarch_64*' '*-linux-riscv64*'  # native code for other platforms
  'netty-tcnative-*'                               # OpenSSL TLS for Spark's RPC (spark.ssl.*), off by default
  'netty-codec-native-quic-*' 'netty-codec-classes-quic-*' 'netty-codec-http3-*'  # QUIC and HTTP/3
  'netty-transport-native-io_uring-*' 'netty-transport-classes-io_uring-*'        # io_uring transport (NIO is used)
  'netty-transport-native-kqueue-*' 'netty-transport-classes-kqueue-*'            # macOS transport
  'py4j-*' 'pickle-*'                              # PySpark
  'oro-*'                                          # Ivy's regular expressions (Ivy stays: Spark's configuration class refers to it)
  'curator-*' 'zookeeper-*' 'audience-annotations-*'                              # standalone master recovery in ZooKeeper
  'guava-*' 'failureaccess-*' 'listenablefuture-*' 'checker-qual-*' 'error_prone_annotations-*' 'j2objc-annotations-*'  # Curator's Guava (Spark shades its own)
  'jjwt-*'                                         # JWT authentication filter for the UI
  'avro-*' 'xz-*'                                  # Avro records
  'zstd-jni-*' 'snappy-java-*'                     # compression codecs besides the default, lz4
  'commons-crypto-*' 'tink-*' 'protobuf-java-*' 'gson-*'  # I/O and RPC encryption, off by default
  'commons-math3-*'                                # sampling and statistics functions of RDDs
)
# What jdeps finds Spark's JARs could use, less what this job does not load (jdk.jfr, jdk.attach,
# jdk.jdi, java.rmi, java.scripting, java.compiler, java.instrument). java.desktop stays for
# java.beans, which log4j-core uses whenever it configures loggers. Found missing by running the job:
# jdk.security.auth (Hadoop's login of the current user: com.sun.security.auth.module.UnixLoginModule),
# jdk.incubator.vector (Spark starts executors with --add-modules=jdk.incubator.vector).
modules=java.base,java.logging,java.management,jdk.management,jdk.unsupported,java.xml,java.desktop,java.sql,java.naming,java.security.jgss,java.security.sasl,jdk.security.auth,jdk.incubator.vector

scripts/setup.sh
mvn -B -ntp -q -pl java,spark -am package -DskipTests

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/items/app" "$stage/items/jars"
version=$(python3 scripts/version.py)
cp "java/target/cuhandle-$version.jar" "$stage/items/app/cuhandle.jar"
cp "spark/target/cuhandle-spark-$version.jar" "$stage/items/app/cuhandle-spark.jar"
cp "spark/target/cuhandle-spark-$version-tests.jar" "$stage/items/app/cuhandle-spark-example.jar"
cp spark/bin/cuhandle-gpu-discovery.sh "$stage/items/app/"
# The JVM options Spark's launcher gives Java 17+, kept in one place: the spark module's pom.
sed -n 's#.*<spark.java.options>\(.*\)</spark.java.options>.*#\1#p' spark/pom.xml | head -n 1 > "$stage/items/app/spark-java-options"

jlink="${JAVA_HOME:-$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")}/bin/jlink"
"$jlink" --add-modules "$modules" --strip-debug --no-man-pages --no-header-files --compress=2 --output "$stage/items/jre" 2>&1 \
  | grep -v 'Using incubator modules' || true

# Spark and what it brings, as the spark module declares it (same version), through a pom of its own.
version=$(sed -n 's#.*<spark.version>\(.*\)</spark.version>.*#\1#p' spark/pom.xml)
scala=$(sed -n 's#.*<scala.binary.version>\(.*\)</scala.binary.version>.*#\1#p' spark/pom.xml)
mkdir -p "$stage/resolve"
cat > "$stage/resolve/pom.xml" <<POM
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.cuhandle</groupId>
  <artifactId>spark-bundle</artifactId>
  <version>0</version>
  <dependencies>
    <dependency>
      <groupId>org.apache.spark</groupId>
      <artifactId>spark-core_$scala</artifactId>
      <version>$version</version>
    </dependency>
  </dependencies>
</project>
POM
mvn -B -ntp -q -f "$stage/resolve/pom.xml" dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$stage/items/jars"
full=$(du -cb "$stage"/items/jars/*.jar | tail -n 1 | cut -f1)
for pattern in "${excluded[@]}"; do
  rm -f "$stage"/items/jars/$pattern
done
spark_kept=$(du -cb "$stage"/items/jars/*.jar | tail -n 1 | cut -f1)

# Items: the JRE, the app folder, each Spark JAR. First fit, largest first: few parts, none over the limit.
limit=$((part_mib * 1024 * 1024))
rm -rf "$out"
mkdir -p "$out"
declare -a used=()
while read -r size item; do
  if [ "$size" -gt "$limit" ]; then
    echo "spark-bundle: ${item#"$stage/items/"} alone is $((size / 1048576)) MiB, more than PART_MIB=$part_mib" >&2
    exit 1
  fi
  p=0
  while [ "$p" -lt "${#used[@]}" ] && [ $((used[p] + size)) -gt "$limit" ]; do
    p=$((p + 1))
  done
  [ "$p" -eq "${#used[@]}" ] && used+=(0)
  used[p]=$((used[p] + size))
  relative=${item#"$stage/items/"}
  mkdir -p "$out/part-$((p + 1))/$(dirname "$relative")"
  mv "$item" "$out/part-$((p + 1))/$relative"
done < <(for i in "$stage/items/jre" "$stage/items/app" "$stage"/items/jars/*.jar; do echo "$(du -sb "$i" | cut -f1) $i"; done | sort -rn)

# Every part has the runner and the list of every part's contents, so that the runner can name a
# part that did not arrive.
parts=${#used[@]}
for d in "$out"/part-*; do
  for item in "$d"/jre "$d"/app "$d"/jars/*.jar; do
    [ -e "$item" ] && echo "$(basename "$d") ${item#"$d/"}"
  done
done > "$stage/contents.txt"
for d in "$out"/part-*; do
  cp "$stage/contents.txt" "$d/contents.txt"
  cp spark/bin/run-spark-example "$d/run-spark-example"
done
echo "spark-bundle: Spark $version, $(ls "$out"/part-*/jars/*.jar | wc -l) JARs ($((spark_kept / 1048576)) MiB of the $((full / 1048576)) MiB spark-core brings), a JRE and the example, in $parts parts in $out:"
for d in "$out"/part-*; do
  echo "  $(basename "$d"): $(( $(du -sb "$d" | cut -f1) / 1048576 )) MiB ($(cd "$d" && ls -d jre app 2>/dev/null | tr '\n' ' ')$(ls "$d"/jars 2>/dev/null | wc -l) Spark JARs)"
done
echo "On the GPU host, with every part in place: $(basename "$out")/part-1/run-spark-example"
