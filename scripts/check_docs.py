#!/usr/bin/env python3
"""Checks that the documentation states only what the repository's own records show.

1. Figures: every number with a unit in docs/handles.md ("4.6 us", "81-147 ns", "16.4 ms") must be
   found, with a compatible unit and to the precision written, in a log under docs/runs/ that the
   same paragraph or list item links. A figure that no committed log holds, or a paragraph with
   figures that links no log, fails the check.
2. Citations: no tracked file (README, docs, sources, Javadoc, comments, scripts) may cite files
   outside the repository: the project's rules live in docs/design.md, its figures in docs/runs/.
   "rule X of <anything but docs/design.md>" counts as such a citation.
3. Rules: every rule a tracked file cites ("rule L3", "rules H1-H4", test methods "h9_...") is
   defined by a heading of docs/design.md ("### L3 ...").
4. Links: every relative link and image of a tracked markdown page (README.md, docs/, CONTRIBUTING.md
   ...) leads to a tracked file or folder, and its #anchor, if any, to a heading of the target page;
   so a moved test or guide breaks the check, not the reader.
5. Configuration: every cuhandle.* system property and CUHANDLE_* environment variable the library
   reads is listed in docs/guide/configuration.md.
6. Commands: in the shell code blocks of tracked markdown pages (```sh, ```bash, ```shell, ```console
   or no language), every word that names a path of the repository (its first part is a tracked
   top-level folder: `tests/standin-driver/x.c`, `$PWD/scripts/y.sh`, `-Dp=docs/z`) must be a
   tracked file or folder, a glob must match one, and a `cd` in the block moves where later
   relative words are looked up. Build outputs (target/, build/, .tools/) are not checked.

Usage: python3 scripts/check_docs.py [repository root]; exit status 1 on any failure. Standard
library only, so that CI needs nothing installed.
"""

import bisect
import fnmatch
import os
import re
import subprocess
import sys
from decimal import Decimal

PAGE = "docs/handles.md"
RUNS = "docs/runs/"
# Marks a statement whose evidence is a GPU run not committed yet (reported, not a failure).
PLACEHOLDER = "⟦GPU-LOG:"

# Units a figure may carry in the page, longest first, and the name each is compared by.
PAGE_UNITS = {
    "GB/s": "GB/s", "GiB": "GiB", "MiB": "MiB", "KiB": "KiB", "GB": "GB", "MB": "MB", "KB": "KB",
    "ns": "ns", "µs": "us", "us": "us", "ms": "ms", "s": "s", "%": "%",
}
# Unit words as logs write them after a number or at the end of a key ("..._median_us 178.5").
LOG_UNITS = {
    "gb/s": "GB/s", "gbps": "GB/s", "gib": "GiB", "mib": "MiB", "kib": "KiB", "gb": "GB", "mb": "MB",
    "kb": "KB", "ns": "ns", "µs": "us", "us": "us", "ms": "ms", "s": "s", "%": "%",
}

_NUMBER = r"\d{1,3}(?:,\d{3})+(?!\d)|\d+(?:\.\d+)?"
_UNIT_ALTERNATION = "|".join(re.escape(u) for u in sorted(PAGE_UNITS, key=len, reverse=True))
PAGE_FIGURE = re.compile(
    r"(?<![\w.^/])(?P<a>" + _NUMBER + r")(?:\s*(?:–|-|to)\s*(?P<b>" + _NUMBER + r"))?\s?(?P<unit>" + _UNIT_ALTERNATION + r")(?![\w/])"
)
LOG_NUMBER = re.compile(r"(?<![\w.])\d+(?:\.\d+)?(?![\w.])")
LOG_SUFFIX_UNIT = re.compile(r"^\s?(gb/s|gbps|gib|mib|kib|gb|mb|kb|ns|µs|us|ms|s|%)(?![a-z0-9_/])", re.IGNORECASE)
KEY_BEFORE = re.compile(r"([A-Za-z][\w.]*)\s*[=:]?\s*$")
KEY_UNIT = re.compile(r"_(gbps|gib|mib|kib|ns|us|ms)(?=_|$)|_(s)$", re.IGNORECASE)

# Files outside the repository that nothing in it may cite, and the wordings that cite them ("DESIGN:",
# "seed 003", "rule L3 of the contract").
OUTSIDE_CITATION = re.compile(
    r"FIGURES\.md|PATTERNS\.md|(?<![\w/.])DESIGN\.md|\bDESIGN\b|\.\./shared/|/work/shared|shared/anchors/|shared/seeds/"
    r"|\bseeds? \d{3}\b")
RULE_LIST = r"[A-Z]\d{1,2}(?:\s*(?:[-–,/]|and|or)\s*[A-Z]?\d{1,2}(?![\w.]))*"
# "rule L3 of X" where X is not the project's own design page.
FOREIGN_RULE = re.compile(
    r"\brules?\s+" + RULE_LIST + r"\s+of\s+(?!docs/design\.md|\[the design\]|\[docs/design\.md\]|the design\b|design\.md|\[design\.md\])(?P<what>\S+)")
CITED_RULES = re.compile(r"\brules?\s+(?P<list>" + RULE_LIST + r")")
TEST_METHOD_RULE = re.compile(r"\bvoid\s+([a-z])(\d{1,2})_\w*\s*\(")
DESIGN = "docs/design.md"
DEFINED_RULE = re.compile(r"^###\s+([A-Z]\d{1,2})\b", re.MULTILINE)
CONFIGURATION = "docs/guide/configuration.md"
# Where the library reads its settings (tests and the stand-in driver have their own, documented
# beside them).
CONFIGURED_SOURCES = ("java/src/main/", "junit/src/main/", "rust/src/")
PROPERTY_LITERAL = re.compile(r'"(cuhandle\.[A-Za-z][\w.]*)"')
ENV_NAME = re.compile(r"\b(CUHANDLE_[A-Z][A-Z0-9_]*)\b")
CITATION_EXEMPT = ("docs/runs/", "scripts/check_docs.py", "scripts/test_check_docs.py")


def decimals(number):
    return len(number.split(".")[1]) if "." in number else 0


def log_figures(text):
    """{unit: [number string, ...]} of every number in a log whose unit the line gives: a unit word
    right after it ("0.509 ms"), a key ending in a unit right before it ("..._median_us 178.5",
    "load_mib=512.0"; also inside a key, "..._ns_over_bare_call"), or, in CSV lines, a last column naming the unit of the value before it
    ("create_close,5,1.370,us") or a column that is such a key (all numbers of the line)."""
    found = {}
    for line in text.splitlines():
        fields = [f.strip() for f in line.split(",")]
        unit_column = LOG_UNITS.get(fields[-1].lower()) if len(fields) > 2 else None
        csv_key_unit = None
        if len(fields) > 2 and unit_column is None:
            for field in fields:
                m = KEY_UNIT.search(field)
                if m:
                    csv_key_unit = LOG_UNITS[(m.group(1) or m.group(2)).lower()]
                    break
        if unit_column is not None and LOG_NUMBER.fullmatch(fields[-2]):
            found.setdefault(unit_column, []).append(fields[-2])
        for m in LOG_NUMBER.finditer(line):
            unit = None
            after = LOG_SUFFIX_UNIT.match(line[m.end():])
            if after:
                unit = LOG_UNITS[after.group(1).lower()]
            else:
                key = KEY_BEFORE.search(line[:m.start()])
                if key:
                    ku = KEY_UNIT.search(key.group(1))
                    if ku:
                        unit = LOG_UNITS[(ku.group(1) or ku.group(2)).lower()]
            if unit is None:
                unit = csv_key_unit
            if unit is not None:
                found.setdefault(unit, []).append(m.group(0))
    return found


def matches(figure, logged):
    """True if the logged number, rounded to the figure's precision, is the figure."""
    if decimals(figure) > decimals(logged):
        return False
    tolerance = Decimal(5) * Decimal(10) ** -(decimals(figure) + 1)
    return abs(Decimal(figure) - Decimal(logged)) <= tolerance


def blocks(page_text):
    """Paragraphs and list items of a markdown page, outside fenced code: [(first line number, text)]."""
    result = []
    current, start = [], 0
    fenced = False
    for number, line in enumerate(page_text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            if current:
                result.append((start, "\n".join(current)))
                current = []
            continue
        if fenced:
            continue
        new_item = re.match(r"\s{0,3}(?:[-*]|\d+\.)\s", line) or line.startswith("#")
        if not line.strip() or new_item:
            if current:
                result.append((start, "\n".join(current)))
                current = []
        if line.strip():
            if not current:
                start = number
            current.append(line)
    if current:
        result.append((start, "\n".join(current)))
    return result


def link_targets(block_text, definitions):
    """Targets of the inline and reference links in a block."""
    targets = [m.group(1) for m in re.finditer(r"\]\(([^)\s]+)\)", block_text)]
    for m in re.finditer(r"\[([^\]]+)\](?!\(|:)", block_text):
        label = m.group(1).lower()
        if label in definitions:
            targets.append(definitions[label])
    return targets


def check_figures(page_text, read_log, page_name=PAGE):
    """Failure messages for the page's figures. read_log(target) gives a linked log's text or None."""
    failures = []
    definitions = {m.group(1).lower(): m.group(2) for m in re.finditer(r"^\[([^\]]+)\]:\s*(\S+)", page_text, re.MULTILINE)}
    cache = {}
    for line_number, text in blocks(page_text):
        if re.match(r"\[[^\]]+\]:\s", text):
            continue  # link definitions
        figures = list(PAGE_FIGURE.finditer(text))
        logs = [t for t in link_targets(text, definitions) if t.startswith("runs/")]
        for target in logs:
            if target not in cache:
                content = read_log(target)
                cache[target] = None if content is None else log_figures(content)
            if cache[target] is None:
                failures.append(f"{page_name}:{line_number}: links {target}, which is not a committed log under {RUNS}")
        if not figures:
            continue
        known = [cache[t] for t in logs if cache.get(t) is not None]
        for figure in figures:
            unit = PAGE_UNITS[figure.group("unit")]
            where = f"{page_name}:{line_number + text[:figure.start()].count(chr(10))}"
            if not known:
                failures.append(f"{where}: figure '{figure.group(0)}' is in a paragraph that links no log under {RUNS}")
                continue
            for number in (figure.group("a"), figure.group("b")):
                if number is None:
                    continue
                plain = number.replace(",", "")
                if not any(matches(plain, logged) for figs in known for logged in figs.get(unit, [])):
                    failures.append(f"{where}: figure '{figure.group(0)}': {plain} {unit} is in none of the logs linked there ({', '.join(logs)})")
    return failures


def check_citations(files):
    """Failure messages for citations of files outside the repository. files: [(path, text)]."""
    failures = []
    for path, text in files:
        if path.startswith(CITATION_EXEMPT):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            m = OUTSIDE_CITATION.search(line)
            if m:
                failures.append(f"{path}:{number}: cites '{m.group(0)}', a file outside the repository (cite docs/design.md or a log under {RUNS})")
    return failures


def expand_rules(rule_list):
    """["H1", "H2", "H3", "L3"] from "H1-H3, L3": ranges by number, a bare number takes the previous letter."""
    names = []
    letter = None
    previous_number = None
    pending_range = False
    for token in re.findall(r"[A-Z]?\d{1,2}|[-–]", rule_list):
        if token in "-–":
            pending_range = True
            continue
        if token[0].isalpha():
            letter, number = token[0], int(token[1:])
        else:
            number = int(token)
        if pending_range and previous_number is not None and number >= previous_number:
            names += [f"{letter}{n}" for n in range(previous_number + 1, number + 1)]
        else:
            names.append(f"{letter}{number}")
        previous_number, pending_range = number, False
    return names


def flatten(text):
    """The text as one line, each line's comment marker (*, //, //!, #, --) and indentation dropped,
    so that a citation that wraps is still found; and a function from an offset in it to a line number."""
    starts, parts, offset = [], [], 0
    for line in text.splitlines():
        piece = re.sub(r"^\s*(?:\*|//!?|///|#|--)?\s*", "", line) if parts else line
        starts.append(offset)
        parts.append(piece)
        offset += len(piece) + 1
    return " ".join(parts), lambda at: bisect.bisect_right(starts, at)


def check_rules(files, design_text):
    """Failure messages for rules cited in files (as "rule X", "rules X-Y" or a test method "x1_...")
    that docs/design.md does not define, and for rules cited as being in another document."""
    defined = set(DEFINED_RULE.findall(design_text or ""))
    failures = []
    for path, text in files:
        if path.startswith(CITATION_EXEMPT):
            continue
        flat, line_of = flatten(text)
        for m in FOREIGN_RULE.finditer(flat):
            failures.append(f"{path}:{line_of(m.start())}: cites '{m.group(0)}': the project's rules are in {DESIGN}")
        cited = [(m.start(), name) for m in CITED_RULES.finditer(flat) for name in expand_rules(m.group("list"))]
        cited += [(m.start(), m.group(1).upper() + m.group(2)) for m in TEST_METHOD_RULE.finditer(flat)]
        for offset, name in cited:
            if name not in defined:
                failures.append(f"{path}:{line_of(offset)}: cites rule {name}, which {DESIGN} does not define")
    return failures


def heading_slugs(markdown_text):
    """The anchors GitHub gives a page's headings (lower case, punctuation dropped, spaces to '-',
    repeats numbered), plus explicit <a id="..."> / <a name="..."> anchors."""
    slugs = set()
    seen = {}
    fenced = False
    for line in markdown_text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            title = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", m.group(1))
            slug = re.sub(r"[^\w\- ]", "", title.replace("`", "").lower()).replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            slugs.add(slug if count == 0 else f"{slug}-{count}")
    slugs.update(re.findall(r'<a\s+(?:id|name)="([^"]+)"', markdown_text))
    return slugs


def markdown_links(text):
    """(line number, target) of every inline link, image and link definition outside code."""
    links = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        line = re.sub(r"`[^`]*`", "", line)
        links += [(number, m.group(1)) for m in re.finditer(r"\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)", line)]
        m = re.match(r"^\s{0,3}\[[^\]]+\]:\s*(\S+)", line)
        if m:
            links.append((number, m.group(1)))
    return links


def check_links(pages, tracked, read_page):
    """Failure messages for relative links of markdown pages that lead nowhere. pages: [(path, text)];
    tracked: set of tracked paths; read_page(path) gives a tracked page's text."""
    folders = {os.path.dirname(p) for p in tracked}
    for f in list(folders):
        while f:
            f = os.path.dirname(f)
            folders.add(f)
    failures = []
    for path, text in pages:
        for number, target in markdown_links(text):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
                continue  # https:, mailto: ...
            file_part, _, anchor = target.partition("#")
            if file_part:
                resolved = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if resolved.startswith(".."):
                    failures.append(f"{path}:{number}: link '{target}' leaves the repository")
                    continue
                if resolved not in tracked and resolved not in folders:
                    failures.append(f"{path}:{number}: link '{target}' leads to {resolved}, which is not a tracked file or folder")
                    continue
            else:
                resolved = path
            if anchor and resolved.endswith(".md"):
                page = read_page(resolved)
                if page is not None and anchor not in heading_slugs(page):
                    failures.append(f"{path}:{number}: link '{target}': {resolved} has no heading with the anchor #{anchor}")
    return failures


SHELL_LANGUAGES = ("", "sh", "bash", "shell", "console")
BUILD_OUTPUTS = {"target", "build", ".gradle", ".tools"}


def shell_blocks(text):
    """(line number, line) of every line inside a fenced shell code block."""
    lines, language = [], None
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("```"):
            language = stripped[3:].strip().lower() if language is None else None
            if language is not None and language not in SHELL_LANGUAGES:
                language = "other"
            continue
        if language is not None and language != "other":
            lines.append((number, line))
    return lines


def path_words(line):
    """Words of a shell line that may name paths: quotes, options' "name=" parts and $PWD/ removed."""
    line = line.split(" #", 1)[0]
    words = []
    for word in re.split(r"[\s;|&()<>]+", line.lstrip("$ ")):
        word = word.strip("'\"`,:")
        word = word.rsplit("=", 1)[-1]
        word = re.sub(r"^(\$PWD|\$\(pwd\)|\./)/?", "", word)
        if word:
            words.append(word)
    return words


def missing_path(here, word, top, tracked, folders):
    """Why word, looked up from the folder here, is no path of the repository; None if it is one or not
    the repository's (its first part is no tracked top-level folder, or it is a build output)."""
    parts = os.path.normpath(os.path.join(here, word)).split("/")
    if parts[0] not in top or BUILD_OUTPUTS & set(parts):
        return None
    path = "/".join(parts)
    if any(c in path for c in "*?["):
        return None if any(fnmatch.fnmatchcase(t, path) for t in tracked) else "which matches no tracked file"
    return None if path in tracked or path in folders else "which is not a tracked file or folder"


def check_command_paths(pages, tracked):
    """Failure messages for repository paths named in shell code blocks that do not exist.
    pages: [(path, text)]; tracked: set of tracked paths."""
    folders = set()
    for p in tracked:
        f = os.path.dirname(p)
        while f:
            folders.add(f)
            f = os.path.dirname(f)
    top = {p.split("/", 1)[0] for p in tracked if "/" in p}
    failures = []
    for page, text in pages:
        here = ""
        for number, line in shell_blocks(text):
            # A cd inside "( ... )" ends with the subshell: here it ends with the line.
            line_start_here = here
            words = path_words(line)
            for i, word in enumerate(words):
                if i > 0 and words[i - 1] == "cd":
                    target = "" if word.startswith(("/", "~", "$", "-")) else os.path.normpath(os.path.join(here, word))
                    if target and target.split("/")[0] not in top:
                        target = ""  # not a folder of the repository: relative words are no longer checked
                if "/" in word and not word.startswith(("/", "~", "$", "-", "http")) and "://" not in word:
                    failure = missing_path(here, word, top, tracked, folders)
                    if failure:
                        where = f" (after cd {here})" if here else ""
                        failures.append(f"{page}:{number}: the command names {word}{where}, {failure}")
                if i > 0 and words[i - 1] == "cd":
                    here = "" if target == "." else target
            if line.lstrip("$ ").startswith("("):
                here = line_start_here
    return failures


def check_configuration(files, configuration_text):
    """Failure messages for settings the library reads that docs/guide/configuration.md does not list."""
    failures = []
    documented = configuration_text or ""
    for path, text in files:
        if not path.startswith(CONFIGURED_SOURCES):
            continue
        names = set(PROPERTY_LITERAL.findall(text)) | set(ENV_NAME.findall(text))
        for name in sorted(names):
            if "test" in name.lower() or name.startswith("CUHANDLE_STANDIN"):
                continue  # read only by tests or the stand-in driver
            if not re.search(r"(?<![\w.])" + re.escape(name) + r"(?![\w])", documented):
                failures.append(f"{path}: reads {name}, which {CONFIGURATION} does not list")
    return failures


def tracked_files(root):
    try:
        out = subprocess.run(["git", "-C", root, "ls-files", "-z"], check=True, capture_output=True).stdout
        return [p for p in out.decode("utf-8", "replace").split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        paths = []
        for directory, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d not in (".git", "target", ".tools", "node_modules")]
            paths += [os.path.relpath(os.path.join(directory, n), root) for n in names]
        return paths


def read_text(path):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError:
        return None
    if b"\0" in data[:8192]:
        return None  # binary
    return data.decode("utf-8", "replace")


def main(argv):
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    root = os.path.abspath(argv[1] if len(argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
    tracked = tracked_files(root)
    tracked_set = set(tracked)
    page = read_text(os.path.join(root, PAGE))
    if page is None:
        print(f"check_docs: {PAGE} is missing", file=sys.stderr)
        return 1

    def read_log(target):
        path = os.path.normpath(os.path.join(os.path.dirname(PAGE), target))
        if not path.startswith(RUNS) or path not in tracked_set:
            return None
        return read_text(os.path.join(root, path))

    failures = check_figures(page, read_log)
    files = []
    for path in tracked:
        text = read_text(os.path.join(root, path))
        if text is not None:
            files.append((path, text))
    failures += check_citations(files)
    design = read_text(os.path.join(root, DESIGN)) if DESIGN in tracked_set else None
    if design is None:
        failures.append(f"{DESIGN} is missing (or not tracked): the rules the code cites must be defined there")
    failures += check_rules(files, design)
    pages = [(p, t) for p, t in files if p.endswith(".md") and not p.startswith(RUNS)]
    failures += check_links(pages, tracked_set, lambda p: read_text(os.path.join(root, p)) if p in tracked_set else None)
    failures += check_command_paths(pages, tracked_set)
    configuration = read_text(os.path.join(root, CONFIGURATION)) if CONFIGURATION in tracked_set else None
    if configuration is None:
        failures.append(f"{CONFIGURATION} is missing (or not tracked)")
    failures += check_configuration(files, configuration)
    for failure in failures:
        print(failure, file=sys.stderr)
    figures = sum(len(PAGE_FIGURE.findall(t)) for _, t in blocks(page))
    if failures:
        print(f"check_docs: {len(failures)} problem(s)", file=sys.stderr)
        return 1
    print(f"check_docs: {figures} figure(s) in {PAGE} found in the logs they link; no citation of files outside the repository in {len(files)} tracked files;"
          f" every cited rule defined in {DESIGN}; the relative links of {len(pages)} markdown pages resolve, and the repository paths of their commands exist;"
          f" every setting listed in {CONFIGURATION}")
    pending = page.count(PLACEHOLDER)
    if pending:
        print(f"check_docs: {pending} placeholder(s) '{PLACEHOLDER}...' in {PAGE} wait for a GPU log to be committed")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
