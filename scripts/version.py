#!/usr/bin/env python3
"""The project's version: its one source is the root pom.xml's <revision> property.

    python3 scripts/version.py            prints the version (scripts use it for JAR names)
    python3 scripts/version.py --check    fails, naming each place, if any other mention differs
    python3 scripts/version.py --set X    writes X to the source and every other place

Maven's modules inherit it (java/, junit/, spark/; their published POMs are flattened with it
resolved), and scripts derive JAR names from it. The other places cannot inherit: the consumer
projects under tests/ (written as users write them), README.md's and docs/spark.md's snippets,
rust/Cargo.toml and Cargo.lock (the crate's version is the Maven version without -SNAPSHOT). Standard library only.
"""

import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
SOURCE = "pom.xml"
SOURCE_PATTERN = re.compile(r"(<revision>)([^<]+)(</revision>)")
COORDINATE = r"(?:cuhandle|cuhandle-junit|cuhandle-spark)"
# (file, pattern whose group 2 is the version, "maven" or "cargo" form)
PLACES = [
    ("README.md", re.compile(r"(<artifactId>" + COORDINATE + r"</artifactId>\s*<version>)([^<]+)(</version>)"), "maven"),
    ("README.md", re.compile(r"(dev\.cuhandle:" + COORDINATE + r":)([0-9][^'\"\s)]*)(['\"])"), "maven"),
    ("docs/spark.md", re.compile(r"(<artifactId>" + COORDINATE + r"</artifactId>\s*<version>)([^<]+)(</version>)"), "maven"),
    ("docs/spark.md", re.compile(r"(`cuhandle-)(\d[^`]*?)(\.jar`)"), "maven"),
    ("tests/java-consumer/pom.xml", re.compile(r"(<artifactId>" + COORDINATE + r"</artifactId>\s*<version>)([^<]+)(</version>)"), "maven"),
    ("tests/kotlin-consumer/pom.xml", re.compile(r"(<artifactId>" + COORDINATE + r"</artifactId>\s*<version>)([^<]+)(</version>)"), "maven"),
    ("tests/gradle-consumer/build.gradle", re.compile(r"(cuhandleVersion\s*=\s*')([^']+)(')"), "maven"),
    ("rust/Cargo.toml", re.compile(r"(\[package\]\s*name\s*=\s*\"cuhandle\"\s*version\s*=\s*\")([^\"]+)(\")"), "cargo"),
    ("Cargo.lock", re.compile(r"(\[\[package\]\]\s*name\s*=\s*\"cuhandle\"\s*version\s*=\s*\")([^\"]+)(\")"), "cargo"),
]


def read(path):
    with open(os.path.join(ROOT, path), encoding="utf-8") as f:
        return f.read()


def version():
    m = SOURCE_PATTERN.search(read(SOURCE))
    if not m:
        sys.exit(f"version.py: no <revision> property in {SOURCE}")
    return m.group(2).strip()


def form(maven_version, kind):
    return maven_version[: -len("-SNAPSHOT")] if kind == "cargo" and maven_version.endswith("-SNAPSHOT") else maven_version


def check(expected):
    """Failure messages for every mention that differs from the source, or a place with none."""
    failures = []
    for path, pattern, kind in PLACES:
        found = list(pattern.finditer(read(path)))
        if not found:
            failures.append(f"{path}: no mention of the version found ({pattern.pattern})")
        for m in found:
            if m.group(2) != form(expected, kind):
                line = read(path)[: m.start(2)].count("\n") + 1
                failures.append(f"{path}:{line}: version {m.group(2)}, but {SOURCE} says {form(expected, kind)}")
    return failures


def set_version(new):
    if not re.fullmatch(r"\d+\.\d+\.\d+(?:-[0-9A-Za-z.]+)?", new):
        sys.exit(f"version.py: '{new}' is not a version like 1.2.3 or 1.2.3-SNAPSHOT")
    paths = [SOURCE] + sorted({p for p, _, _ in PLACES})
    texts = {p: read(p) for p in paths}
    texts[SOURCE] = SOURCE_PATTERN.sub(lambda m: m.group(1) + new + m.group(3), texts[SOURCE], count=1)
    for path, pattern, kind in PLACES:
        texts[path] = pattern.sub(lambda m: m.group(1) + form(new, kind) + m.group(3), texts[path])
    for path, text in texts.items():
        with open(os.path.join(ROOT, path), "w", encoding="utf-8") as f:
            f.write(text)


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    if len(argv) == 1:
        print(version())
        return 0
    if argv[1] == "--check" and len(argv) == 2:
        expected = version()
        failures = check(expected)
        for failure in failures:
            print(failure, file=sys.stderr)
        if failures:
            print(f"version.py: {len(failures)} mention(s) differ from {SOURCE}'s {expected}; fix with: python3 scripts/version.py --set {expected}", file=sys.stderr)
            return 1
        print(f"version.py: {expected} everywhere ({len(PLACES)} places checked against {SOURCE})")
        return 0
    if argv[1] == "--set" and len(argv) == 3:
        set_version(argv[2])
        print(f"version.py: set {argv[2]} in {SOURCE} and {len({p for p, _, _ in PLACES})} other files")
        return check(argv[2]) and 1 or 0
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
