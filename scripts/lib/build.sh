# What scripts/main.sh and scripts/install.sh share: the build of what ships (no test build), and
# progress output for it: stages with the time elapsed since the script started, a line at least
# every PROGRESS_EVERY seconds while a step is quiet, and no colour codes. Sourced, not run; it
# moves to the repository's root and sets $version.
#
#   build_shipped LABEL LOG MAVEN_ARG...  scripts/setup.sh, then Maven (goals, options) without the test build

#   stage "building the JAR"                 prints "[  12s] building the JAR"
#   run_step "label" LOG -- command args...  runs the command with its output in LOG, prints the
#                                            lines progress_line selects, a "still ..." line when it
#                                            has been quiet; on failure the log's last lines; returns
#                                            the command's status

cd "$(dirname "${BASH_SOURCE[0]}")/../.."
version=$(python3 scripts/version.py)
PROGRESS_START=${PROGRESS_START:-$(date +%s)}
PROGRESS_EVERY=${PROGRESS_EVERY:-10}

elapsed() {
  local s=$(( $(date +%s) - PROGRESS_START ))
  if [ "$s" -ge 60 ]; then printf '%dm%02ds' $((s / 60)) $((s % 60)); else printf '%ds' "$s"; fi
}

stage() {
  printf '[%6s] %s\n' "$(elapsed)" "$*"
}

# Which lines of a build's output are progress worth showing, rewritten for a reader; prints nothing
# for the rest. Maven's plugin headers become stage names; cargo's own progress passes through.
progress_line() {
  local line=$1
  case "$line" in
    *"--- maven-antrun-plugin"*"(native-library)"*) echo "native library: Rust with cargo, the built-in kernels with nvcc (the longest step on a first build)" ;;
    *"--- maven-compiler-plugin"*":compile "*) echo "compiling the Java classes" ;;
    *"--- maven-javadoc-plugin"*) echo "Javadoc (doclint: all checks)" ;;
    *"--- maven-source-plugin"*) echo "sources JAR" ;;
    *"--- maven-jar-plugin"*":jar "*) echo "packaging the JAR" ;;
    *"--- flatten-maven-plugin"*) echo "flattened POM" ;;
    *"--- maven-install-plugin"*) echo "installing into the local Maven repository" ;;
    *"--- maven-deploy-plugin"*) echo "deploying" ;;
    *"Building cuhandle"*|*"Building cuhandle-junit"*) echo "module ${line#*Building }" ;;
    *"[exec]"*" Compiling "*|*"[exec]"*" Finished "*)
      # cargo's progress ("[INFO]      [exec]    Compiling jni v0.22.0"), without Maven's prefixes
      local cargo=${line##*\[exec\]}
      echo "  cargo: ${cargo#"${cargo%%[! ]*}"}" ;;
    *"check-glibc:"*|*"check-exports:"*) echo "  ${line##*\[exec\] }" ;;
    *"Skipping javadoc"*|*"Skipping source"*|*"Skipping artifact installation"*) echo "  (skipped)" ;;
    "cuhandle setup: "*) echo "  ${line#cuhandle setup: }" ;;
  esac
}

run_step() {
  local label=$1 log=$2
  shift 3  # label, log, --
  stage "$label"
  : > "$log"
  local last_print status line shown
  last_print=$(date +%s)
  # The command's output goes to the log and, line by line, through progress_line; `read -t`
  # times out when the command has been quiet, which prints a "still" line instead.
  exec 9< <("$@" 2>&1; echo "__status $?")
  while true; do
    if IFS= read -r -t "$PROGRESS_EVERY" line <&9; then
      line=$(printf '%s' "$line" | sed 's/\x1b\[[0-9;]*[A-Za-z]//g')
      case "$line" in "__status "*) status=${line#__status }; break ;; esac
      printf '%s\n' "$line" >> "$log"
      shown=$(progress_line "$line")
      if [ -n "$shown" ]; then stage "$shown"; last_print=$(date +%s); fi
    elif [ $? -gt 128 ] || [ $(( $(date +%s) - last_print )) -ge "$PROGRESS_EVERY" ]; then
      stage "  still working: $label"
      last_print=$(date +%s)
    else
      status=1; break  # the output ended without a status line
    fi
  done
  exec 9<&-
  if [ "${status:-1}" -ne 0 ]; then
    stage "FAILED: $label (exit status $status); the last lines of $log:"
    tail -n 40 "$log" | sed 's/^/    /'
  fi
  return "${status:-1}"
}

build_shipped() {
  local label=$1 log=$2
  shift 2
  mkdir -p target
  run_step "checking the build tools (scripts/setup.sh)" "${log%.log}-setup.log" -- scripts/setup.sh
  export CARGO_TERM_COLOR=never
  # Only what ships: java/pom.xml's cuhandle.skipTestBuild leaves out the native library with the
  # test entry points, the test kernels, the stand-in driver and cargo test.
  # Tests are never run; with spark/ in the build they are compiled (-DskipTests), because its tests
  # depend on the library's test JAR, which Maven resolves even when tests are skipped entirely.
  run_step "$label" "$log" -- \
    mvn -B -ntp -Dstyle.color=never "${TESTS_SKIP:--Dmaven.test.skip=true}" -Dcuhandle.skipTestBuild=true "$@"
}
