#!/usr/bin/env python3
"""Writes THIRD-PARTY-NOTICES: what cuhandle's published artifacts contain or need that others wrote.

    python3 scripts/third-party-notices.py           rewrites THIRD-PARTY-NOTICES
    python3 scripts/third-party-notices.py --check   fails if THIRD-PARTY-NOTICES is not what it would write

Rust: the crates statically linked into libcuhandle.so, which the JAR carries. They are found from
Cargo.lock through `cargo metadata` (offline when the crates are already downloaded): every crate the
cuhandle crate reaches through normal dependencies on x86_64 Linux, not through build dependencies and
not through procedural macros (those run in the compiler and are not linked). For each: its version, the
licence its Cargo.toml declares, its repository, and the licence files the published crate ships.
Identical licence texts are printed once. The Rust standard library is linked too and listed.

Java: the runtime dependencies of dev.cuhandle:cuhandle, cuhandle-junit and cuhandle-spark, read from
java/pom.xml, junit/pom.xml and spark/pom.xml (compile and runtime scope; provided dependencies are named as such, since
the user's class path supplies them). A runtime dependency whose licence this script does not know fails
the run: add it to JAVA_LICENSES.

scripts/test.sh runs --check, so a change of Cargo.lock or of the POMs' dependencies that is not
reflected here fails CI. Needs cargo and python3 (standard library only).
"""

import hashlib
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
OUTPUT = "THIRD-PARTY-NOTICES"
CRATE = "cuhandle"
TARGET = "x86_64-unknown-linux-gnu"
LICENSE_FILE_PREFIXES = ("license", "licence", "copying", "unlicense", "notice")
JAVA_POMS = [("java/pom.xml", "dev.cuhandle:cuhandle"), ("junit/pom.xml", "dev.cuhandle:cuhandle-junit"),
             ("spark/pom.xml", "dev.cuhandle:cuhandle-spark")]
# Licences of the Java dependencies the POMs may name (groupId:artifactId -> SPDX expression, URL).
JAVA_LICENSES = {
    "org.junit.jupiter:junit-jupiter-api": ("EPL-2.0", "https://github.com/junit-team/junit5"),
    "org.apache.spark:spark-core_2.13": ("Apache-2.0", "https://spark.apache.org"),
}
POM_NS = {"m": "http://maven.apache.org/POM/4.0.0"}


def cargo_metadata():
    command = ["cargo", "metadata", "--format-version", "1", "--locked", "--filter-platform", TARGET]
    for extra in (["--offline"], []):  # offline first: no network when the crates are already here
        result = subprocess.run(command + extra, cwd=ROOT, capture_output=True, text=True)
        if result.returncode == 0:
            return json.loads(result.stdout)
    sys.exit(f"third-party-notices: `{' '.join(command)}` failed:\n{result.stderr}")


def linked_crates(metadata):
    """The packages linked into the cuhandle cdylib, sorted by name and version."""
    packages = {p["id"]: p for p in metadata["packages"]}
    nodes = {n["id"]: n for n in metadata["resolve"]["nodes"]}
    root = next(i for i, p in packages.items() if p["name"] == CRATE and p["source"] is None)

    def is_proc_macro(package):
        return any("proc-macro" in t["kind"] for t in package["targets"])

    seen, stack = set(), [root]
    while stack:
        current = stack.pop()
        for dep in nodes[current]["deps"]:
            normal = any(k["kind"] is None for k in dep["dep_kinds"])
            if not normal or dep["pkg"] in seen or is_proc_macro(packages[dep["pkg"]]):
                continue
            seen.add(dep["pkg"])
            stack.append(dep["pkg"])
    return sorted((packages[i] for i in seen), key=lambda p: (p["name"], p["version"]))


def licence_files(package):
    folder = os.path.dirname(package["manifest_path"])
    names = sorted(n for n in os.listdir(folder) if n.lower().startswith(LICENSE_FILE_PREFIXES) and os.path.isfile(os.path.join(folder, n)))
    texts = []
    for name in names:
        with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
            texts.append((name, f.read().strip() + "\n"))
    return texts


def java_dependencies():
    """[(artifact, dependency coordinates, scope)] of the published modules' non-test dependencies."""
    found = []
    for pom, artifact in JAVA_POMS:
        tree = ET.parse(os.path.join(ROOT, pom))
        properties = {p.tag.split("}")[1]: (p.text or "").strip() for p in tree.getroot().findall("m:properties/*", POM_NS)}

        def resolved(text):  # ${name} of the POM's own properties (spark-core_${scala.binary.version})
            return re.sub(r"\$\{([\w.]+)\}", lambda m: properties.get(m.group(1), m.group(0)), text or "")
        for dep in tree.getroot().findall("m:dependencies/m:dependency", POM_NS):
            group = resolved(dep.findtext("m:groupId", namespaces=POM_NS))
            name = resolved(dep.findtext("m:artifactId", namespaces=POM_NS))
            scope = dep.findtext("m:scope", default="compile", namespaces=POM_NS)
            if scope == "test" or group == "dev.cuhandle":
                continue
            found.append((artifact, f"{group}:{name}", scope))
    return found


def render(crates, java):
    out = [
        "THIRD-PARTY NOTICES",
        "",
        "cuhandle is licensed under the Apache License, Version 2.0 (LICENSE). Its artifacts contain or",
        "need the following software by others, under the licences named. This file is generated by",
        "scripts/third-party-notices.py from Cargo.lock and the Maven POMs; do not edit it by hand.",
        "",
        "1. Rust code in libcuhandle.so",
        "",
        "The JAR dev.cuhandle:cuhandle carries libcuhandle.so (META-INF/native/linux-x86_64/), built from",
        "cuhandle's Rust crate. It statically links these crates (name, version, licence, source):",
        "",
    ]
    texts = {}  # digest -> (text, [crate names])
    for p in crates:
        files = licence_files(p)
        out.append(f"  {p['name']} {p['version']}  {p.get('license') or 'licence not declared'}  {p.get('repository') or ''}".rstrip())
        if not files:
            authors = ", ".join(p.get("authors") or []) or "its authors"
            out.append(f"      (the published crate ships no licence file: its terms are {p.get('license')}, by {authors};")
            out.append("       the standard texts of those licences apply, see section 3)")
        for name, text in files:
            # Texts that differ only in spacing or line breaks are the same text.
            digest = hashlib.sha256(" ".join(text.split()).encode()).hexdigest()
            texts.setdefault(digest, (text, []))[1].append(f"{p['name']} {p['version']} ({name})")
    out += [
        "  the Rust standard library (std, core, alloc and what they link), as shipped with the Rust",
        "      toolchain  MIT OR Apache-2.0  https://github.com/rust-lang/rust",
        "",
        "Where a crate offers a choice of licences (\"A OR B\"), cuhandle uses it under either.",
        "",
        "2. Java dependencies",
        "",
    ]
    for pom, artifact in JAVA_POMS:
        mine = [(coords, scope) for a, coords, scope in java if a == artifact]
        runtime = [c for c, s in mine if s in ("compile", "runtime")]
        provided = [c for c, s in mine if s == "provided"]
        line = f"  {artifact}: " + ("no third-party runtime dependencies" if not runtime else "runtime dependencies " + ", ".join(
            f"{c} ({JAVA_LICENSES[c][0]}, {JAVA_LICENSES[c][1]})" for c in runtime))
        out.append(line + ("." if not provided else ";"))
        for c in provided:
            out.append(f"      compiled against {c} ({JAVA_LICENSES[c][0]}, {JAVA_LICENSES[c][1]}),")
            out.append("      which the user's class path provides (Maven scope provided: not redistributed).")
    out += [
        "",
        "The CUDA driver and NVRTC are not part of cuhandle: they are loaded from the user's system at run time.",
        "",
        "3. Licence texts",
        "",
        "The texts the crates above ship, each printed once, with the crates that ship it. For a crate",
        "without a licence file: the Apache License 2.0 is in LICENSE, and the MIT licence is an MIT text",
        "below with that crate's authors as the copyright holders.",
    ]
    for digest, (text, users) in sorted(texts.items(), key=lambda item: item[1][1][0]):
        out += ["", "-" * 100, "Shipped by: " + "; ".join(users), "-" * 100, "", text.rstrip()]
    return "\n".join(out) + "\n"


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    java = java_dependencies()
    unknown = sorted({c for _, c, _ in java if c not in JAVA_LICENSES})
    if unknown:
        print(f"third-party-notices: no licence known for {', '.join(unknown)}: add it to JAVA_LICENSES in {__file__}", file=sys.stderr)
        return 1
    text = render(linked_crates(cargo_metadata()), java)
    path = os.path.join(ROOT, OUTPUT)
    if len(argv) > 1 and argv[1] == "--check":
        try:
            with open(path, encoding="utf-8") as f:
                current = f.read()
        except OSError:
            current = None
        if current != text:
            print(f"third-party-notices: {OUTPUT} is stale (Cargo.lock or the POMs' dependencies changed);"
                  f" regenerate it with: python3 scripts/third-party-notices.py", file=sys.stderr)
            return 1
        print(f"third-party-notices: {OUTPUT} is current")
        return 0
    if len(argv) > 1:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    print(f"third-party-notices: wrote {OUTPUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
