#!/usr/bin/env python3
"""The layering of the Rust crate (rust/src), as data, and a check that imports only point down.

    python3 scripts/check_layers.py            checks rust/src; exit 1 with one line per violation
    python3 scripts/check_layers.py --floors   prints the floors (CONTRIBUTING.md's architecture map)

Each module of rust/src/core (a file or a folder: `core/driver/`, `core/handle/` ...) lives on one floor;
the JNI layer (rust/src/jni) is the top floor. A module may use modules of its own floor and of the floors
below, never one above. The pure core never uses the `jni` crate or `crate::jni` (it must stay testable by
`cargo test` without a JVM). A module of rust/src/core that no floor names fails the check too: a new module
is placed on purpose. References are read as text: `crate::core::NAME`, `crate::jni`, `use jni::` and
`jni::` paths, with comments, strings and `#[cfg(test)]` modules left out; a driver entry point read from the symbol
table (`api.cuX`) outside core/driver/ fails too (the rest of the crate calls the driver floor's checked methods) (tests may use any module as input). Standard library only; scripts/test.sh runs it (and its own
tests, scripts/test_check_layers.py).
"""

import pathlib
import re
import sys

# Bottom first. Why each floor sits where it does:
FLOORS = [
    # 0: no CUDA object: errors, paths, files, images, text.
    ("base", ["error", "log_text", "configured_path", "shared_library", "ld_so_cache", "own_file", "raw_value",
              "sticky", "library_search", "image", "param_layout", "thread_number"]),
    # 1: the driver and NVRTC as loaded libraries, devices and contexts.
    ("driver", ["driver", "device", "green_context", "context", "nvrtc"]),
    # 2: what lives in a context: streams, the uses of objects by streams, memory, loaded libraries,
    # host registrations.
    ("resources", ["streams", "uses", "memory", "library", "host_registration"]),
    # 3: handles and what moves data or names kernels through them.
    ("handles", ["handle", "transfer", "kernels", "variables", "partition"]),
    # 4: operations on handles: launches, events, BLAS, completions, graphs.
    ("operations", ["launch", "event", "blas", "completion", "graph", "graph_node", "graph_conditional"]),
    # 5: the JNI seam: converts and throws, nothing else.
    ("jni", ["jni"]),
]

FLOOR_OF = {module: i for i, (_, modules) in enumerate(FLOORS) for module in modules}
CORE_REF = re.compile(r"\bcrate::core::(\w+)")
# `use crate::core::{a, b::C, d::{E, F}}`: the modules are the first names of the group's items.
CORE_GROUP = re.compile(r"\bcrate::core::\{")
# A driver entry point read from the symbol table: only the driver floor (core/driver/) may, every other
# module calls the floor's checked methods (`driver.cuX(...)`), so each call's error handling lives once.
DRIVER_ENTRY = re.compile(r"\bapi\s*\.\s*cu[A-Z]\w*")
JNI_REF = re.compile(r"\bcrate::jni\b|^\s*use\s+jni\b|\bjni::(?:objects|sys|errors|strings|JNIEnv|EnvUnowned|JavaVM)\b", re.M)


def core_modules_used(text):
    """The modules of core that `text` names: `crate::core::NAME` and the first names inside `crate::core::{...}`."""
    used = set(CORE_REF.findall(text))
    for m in CORE_GROUP.finditer(text):
        depth, j, item_start, items = 1, m.end(), m.end(), []
        while j < len(text) and depth:
            c = text[j]
            if c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
            if (c == "," and depth == 1) or depth == 0:
                items.append(text[item_start:j])
                item_start = j + 1
            j += 1
        for item in items:
            name = re.match(r"\s*(\w+)", item)
            if name:
                used.add(name.group(1))
    return used


def strip_comments_and_strings(text):
    """The source without // and /* */ comments and without string literals (so prose cannot trip the check)."""
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r'r#*"(?:.|\n)*?"#*', '""', text)
    text = re.sub(r'"(?:\\.|[^"\\])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def without_test_modules(text):
    """The source without its `#[cfg(test)] mod NAME { ... }` blocks: tests may use any module as input."""
    out = []
    i = 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth = 1
        j = m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def module_of(path, src):
    """('core', NAME) for rust/src/core/NAME(.rs|/...), ('jni', 'jni') for rust/src/jni/..., else None."""
    parts = path.relative_to(src).parts
    if len(parts) >= 2 and parts[0] == "core":
        name = parts[1][:-3] if parts[1].endswith(".rs") else parts[1]
        return None if name == "mod" else ("core", name)
    if parts and parts[0] == "jni":
        return ("jni", "jni")
    return None


def violations(src):
    """Every import that points up a floor, every use of JNI in the core, every core module on no floor."""
    found = []
    for path in sorted(src.rglob("*.rs")):
        owner = module_of(path, src)
        if owner is None:
            continue
        kind, name = owner
        if name not in FLOOR_OF:
            found.append(f"{path}: module core::{name} is on no floor of scripts/check_layers.py: place it in FLOORS")
            continue
        floor = FLOOR_OF[name]
        text = without_test_modules(strip_comments_and_strings(path.read_text(encoding="utf-8")))
        for used in sorted(core_modules_used(text)):
            if used in FLOOR_OF and FLOOR_OF[used] > floor:
                found.append(f"{path}: {kind}::{name} (floor {floor}, {FLOORS[floor][0]}) uses core::{used} "
                             f"(floor {FLOOR_OF[used]}, {FLOORS[FLOOR_OF[used]][0]}): imports must point down")
        entry = DRIVER_ENTRY.search(text)
        if entry and name != "driver":
            found.append(f"{path}: {kind}::{name} calls the driver entry point {entry.group(0).split('.')[-1].strip()} from the symbol table: "
                         f"only core/driver/ may; call the driver floor's checked method instead (driver.cuX(...))")
        if kind == "core" and JNI_REF.search(text):
            found.append(f"{path}: core::{name} uses JNI (crate::jni or the jni crate): the core must not depend on JNI types")
    return found


def main(argv):
    root = pathlib.Path(__file__).resolve().parent.parent
    if "--floors" in argv:
        for i, (label, modules) in reversed(list(enumerate(FLOORS))):
            print(f"floor {i} {label}: {', '.join(modules)}")
        return 0
    src = pathlib.Path(argv[argv.index("--src") + 1]) if "--src" in argv else root / "rust" / "src"
    found = violations(src)
    for line in found:
        print(line)
    files = sum(1 for p in src.rglob("*.rs") if module_of(p, src))
    print(f"check_layers: {len(found)} problem(s) in {files} files of {len(FLOORS)} floors" if found
          else f"check_layers: {files} files of {len(FLOORS)} floors; every import points down; the core uses no JNI; "
          "only core/driver/ calls driver entry points")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
