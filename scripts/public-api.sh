#!/usr/bin/env bash
# Prints the public API of the compiled library: `javap -public` of every public class under a
# classes folder (default java/target/classes), classes in name order and each class's members
# sorted, so that two listings differ by what changed, not by member order (javac writes the
# bridges of public methods inherited from package-private classes last). Compare two builds:
#   scripts/public-api.sh old/classes > before.txt; scripts/public-api.sh > after.txt; diff before.txt after.txt
set -euo pipefail
classes=$(realpath "${1:-$(dirname "$0")/../java/target/classes}")
javap=${JAVA_HOME:+$JAVA_HOME/bin/}javap
names=$(cd "$classes" && find . -name '*.class' | sed 's|^\./||; s|\.class$||; s|/|.|g' | sort)
# One javap for all classes; each listing starts with "Compiled from". javap -public still prints
# the header of a class that is not public, so only headers that start with "public" are kept.
# shellcheck disable=SC2086
"$javap" -public -cp "$classes" $names | awk '
  function flush(   i, sort) {
    if (header ~ /^public /) {
      print header
      fflush()
      sort = "LC_ALL=C sort"
      for (i = 1; i <= count; i++) print members[i] | sort
      close(sort)
      print "}"
      print ""
    }
    header = ""; delete members; count = 0
  }
  /^Compiled from/ { flush(); next }
  header == "" { header = $0; next }
  /^}$/ { next }
  { members[++count] = $0 }
  END { flush() }
'
