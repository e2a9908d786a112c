#!/usr/bin/env python3
"""The layering of the Java library (package dev.cuhandle), as data, and a check that references only point down.

    python3 scripts/check_java_layers.py            checks java/src/main; exit 1 with one line per violation
    python3 scripts/check_java_layers.py --floors   prints the floors (CONTRIBUTING.md's architecture map)

The Rust crate's check (scripts/check_layers.py) reads imports; here every class is in one package, so a class
uses another by naming it, and the check reads class names as text: each source of the package
(java/src/main/java/dev/cuhandle/*.java and the templates the build expands, *.java.template) with its comments,
strings and character literals left out, so that Javadoc may still describe the classes above. A class of a floor
may name classes of its own floor and of the floors below; naming one above fails. Every class that no floor lists
is on the top floor, the API, which may name anything: a new class is high until it is placed lower on purpose,
and a low class that names it fails. A floor that lists a class with no source fails too (the data stays true).
Tests may name any class. Standard library only; scripts/test.sh runs it and its tests
(scripts/test_check_layers.py).
"""

import pathlib
import re
import sys

# Bottom first. Why each floor sits where it does:
FLOORS = [
    # 0: the waits of the lifetime code and the sink of log records; they name no other class.
    ("base", ["Parking", "NativeLog"]),
    # 1: the lifecycle of a native object: its pointer and the calls in flight on it, the enter/exit/close that
    #    every public object shares. Rules of the floors above (a graph capture refusing a close) are theirs to apply.
    ("lifecycle", ["Lifetime", "NativeObject", "NativeResource"]),
    # 2: the native seam: the raw entry points that take pointers, loading the library, the driver's errors.
    ("native", ["NativeApi", "Native", "DriverStart", "NativeLoader", "NativeExtraction", "NativeLibraryCache", "TrustedFolder", "MemoryConfiguration", "CudaError", "CudaException"]),
]
TOP = "api"
FLOOR_OF = {name: i for i, (_, names) in enumerate(FLOORS) for name in names}
SUFFIXES = (".java.template", ".java")

# One pass, so that whichever starts first wins: a // inside a string is no comment, a quote inside a comment no string.
NOT_CODE = re.compile(r'//[^\n]*|/\*.*?\*/|"""(?:.|\n)*?"""|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])+\'', re.S)
NAME = re.compile(r"\b[A-Z]\w*\b")


def code_only(text):
    """The source without comments, string literals (text blocks too) and character literals."""
    return NOT_CODE.sub(lambda m: " " if m.group().startswith("/") else '""', text)


def class_of(path):
    """The class a source defines: its file name without .java or .java.template; None for other files."""
    for suffix in SUFFIXES:
        if path.name.endswith(suffix):
            return path.name[:-len(suffix)]
    return None


def sources(folders):
    """{class name: path} of every source in `folders` (package-info.java is no class)."""
    found = {}
    for folder in folders:
        for path in sorted(pathlib.Path(folder).iterdir()):
            name = class_of(path)
            if name and name != "package-info":
                found[name] = path
    return found


def floor_label(floor):
    return FLOORS[floor][0] if floor < len(FLOORS) else TOP


def violations(folders):
    """Every name of a higher floor's class in a lower floor's code, and every class a floor lists without a source."""
    classes = sources(folders)
    top = len(FLOORS)
    found = [f"{folders[0]}: class {name} is on floor {FLOOR_OF[name]} ({floor_label(FLOOR_OF[name])}) of "
             f"scripts/check_java_layers.py but has no source: remove it from FLOORS"
             for name in FLOOR_OF if name not in classes]
    for name, path in sorted(classes.items()):
        floor = FLOOR_OF.get(name, top)
        named = set(NAME.findall(code_only(path.read_text(encoding="utf-8")))) & classes.keys()
        for other in sorted(named - {name}):
            other_floor = FLOOR_OF.get(other, top)
            if other_floor > floor:
                found.append(f"{path}: {name} (floor {floor}, {floor_label(floor)}) names {other} "
                             f"(floor {other_floor}, {floor_label(other_floor)}): references must point down")
    return found


def main(argv):
    root = pathlib.Path(__file__).resolve().parent.parent
    if "--floors" in argv:
        print(f"floor {len(FLOORS)} {TOP}: every other class of dev.cuhandle")
        for i, (label, names) in reversed(list(enumerate(FLOORS))):
            print(f"floor {i} {label}: {', '.join(names)}")
        return 0
    if "--src" in argv:
        folders = [pathlib.Path(argv[argv.index("--src") + 1])]
    else:
        main_sources = root / "java" / "src" / "main"
        folders = [main_sources / "java" / "dev" / "cuhandle", main_sources / "templates" / "dev" / "cuhandle"]
    found = violations(folders)
    for line in found:
        print(line)
    classes = len(sources(folders))
    print(f"check_java_layers: {len(found)} problem(s) in {classes} classes of {len(FLOORS) + 1} floors" if found
          else f"check_java_layers: {classes} classes of {len(FLOORS) + 1} floors; every reference points down")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
