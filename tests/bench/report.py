#!/usr/bin/env python3
"""Turns one benchmark run (tests/bench/run-all.sh bench) into perf.csv, perf.md and charts, and puts
perf.md's text into docs/performance.md between the markers.

Input rows, from every harness of the run: impl,group,name,n,value,unit. Groups:
  blas            name = routine, n = vector length, value = us per call (median)
  blas_host       name = reduction, n = 1000, value = us per call with the result on the host
  launch          name = args<k>, value = us per launch
  launch_threads  name = threads<t>, n = t, value = launches per second
  launch_gap      name = args0, n = 1, value = us per launch of one loop variant (impl = the variant)
  handle          name = what, n = run (fresh JVM), value in ns or us
  cold            name = step, n = run (fresh process), value = ms
  transfer        name = <type>_<h2d|d2h> (impl cuhandle, jcuda) or <h2d|d2h> (impl c_pageable, c_pinned: the
                  same for every type), n = bytes, value = GB/s (median of the harness's rounds)
  batch           name = float_<h2d|d2h|roundtrip>_<count>, n = bytes per array, value = us for the whole batch
                  (impl cuhandle_all, cuhandle_all_per_piece, cuhandle_loop, jcuda_loop; BatchCopyBenchmark)
Lines of anchors.cu's output ("driver_launch_us 4.3", "mt_launch_threads_4_Mlaunch_per_s 0.61") become
rows of impl "c". Lines starting with '#' are kept as notes.

usage:
  report.py OUTDIR RAW_FILE...          writes OUTDIR/perf.csv, perf.md, blas-gbps.png, blas-us.png, launch.png
  report.py --readme PAGE.md PERF_CSV [IMAGE_DIR]
                                        regenerates the text from a published perf.csv and replaces what is
                                        between <!-- perf:begin --> and <!-- perf:end --> in PAGE.md
                                        (docs/performance.md); image links point to IMAGE_DIR, relative to
                                        the page (default: the folder of PERF_CSV)
"""
import csv
import os
import re
import statistics
import sys
from collections import defaultdict

ROUTINES = ["sscal", "saxpy", "sdot", "snrm2", "sasum", "isamax", "scopy", "sswap",
            "dscal", "daxpy", "ddot", "dnrm2", "dasum", "idamax", "dcopy", "dswap"]
# Elements read + written per vector element (bytes = this * n * element size).
MOVED = {"scal": 2, "axpy": 3, "dot": 2, "nrm2": 1, "asum": 1, "amax": 1, "copy": 2, "swap": 4}
HOST_REDUCTIONS = ["sdot", "ddot", "snrm2", "sasum", "isamax"]
ARG_COUNTS = [0, 1, 3, 6]
THREADS = [1, 4, 8, 16]
PER_RUN_GROUPS = {"handle", "cold"}  # n is a run number there: aggregate over it
BLAS_GOAL = 0.98
HOST_GOAL_US = 10.0
# Issue 35's goals: the first Handle.create() at most C's cuInit + retain + 20 ms; cuhandle's own share of an
# activation (over the driver calls beneath it, at the medians) at most 20 ns; create + close at most 1.0 us.
# Issue 13's older activation goal (at most 60 ns over a bare JNI call in every JVM) is still reported.
COLD_GOAL_MS = 20.0
ACTIVATION_GOAL_NS = 60.0
ACTIVATION_SHARE_GOAL_NS = 20.0
CREATE_CLOSE_GOAL_US = 1.0
TRANSFER_TYPES = ["float", "double"]
TRANSFER_RATIO_GOAL = 1.0
TRANSFER_GBPS_GOAL = 20.0
TRANSFER_GBPS_GOAL_FROM = 64 << 20  # bytes: the GB/s goal holds from this size up
BATCH_IMPLS = [("cuhandle_all", "uploadAll / downloadAll"), ("cuhandle_all_per_piece", "the same, no cuMemcpyBatchAsync"),
               ("cuhandle_loop", "cuhandle loop"), ("jcuda_loop", "JCuda loop")]
BATCH_LOOP_GOAL = 2.0   # cuhandle's loop / uploadAll+downloadAll, 1,000 x 4 KiB round trip
BATCH_JCUDA_GOAL = 1.5  # JCuda's loop / uploadAll+downloadAll, likewise
BEGIN, END = "<!-- perf:begin -->", "<!-- perf:end -->"
# One colour per implementation in every chart and panel, so that a series reads the same wherever it
# appears (matplotlib's default cycle colours by position, which differed between the two launch panels).
COLOURS = {"cuhandle": "#1f77b4", "cuhandle_ctx_current": "#9ecae1", "jcuda": "#ff7f0e", "c": "#2ca02c", "cublas": "#d62728"}


def family(routine):
    return routine[2:] if routine.startswith("i") else routine[1:]


def element_bytes(routine):
    return 8 if routine[1 if routine.startswith("i") else 0] == "d" else 4


def gbps(routine, n, us):
    if routine == "d2d_copy":
        return 2 * n * 4 / (us * 1e3)
    return MOVED[family(routine)] * n * element_bytes(routine) / (us * 1e3)


ANCHOR_LINES = [
    (re.compile(r"^driver_launch_us ([0-9.]+)"), lambda m: ("launch", "args0", 1, float(m.group(1)), "us")),
    (re.compile(r"^mt_launch_threads_(\d+)_Mlaunch_per_s ([0-9.]+)"),
     lambda m: ("launch_threads", "threads" + m.group(1), int(m.group(1)), float(m.group(2)) * 1e6, "launches/s")),
]


def read_rows(paths):
    """Rows (impl, group, name, n, value, unit) and '#' notes from the harnesses' outputs."""
    rows, notes = [], []
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip()
                if line.startswith("#"):
                    notes.append(line.lstrip("# "))
                    continue
                parts = line.split(",")
                if len(parts) == 6 and parts[0] != "impl":
                    try:
                        rows.append((parts[0], parts[1], parts[2], int(parts[3]), float(parts[4]), parts[5]))
                    except ValueError:
                        pass
                    continue
                for pattern, make in ANCHOR_LINES:
                    m = pattern.match(line)
                    if m:
                        rows.append(("c",) + make(m))
    return rows, notes


class Data:
    """The run's rows, with medians where a key has several values."""

    def __init__(self, rows):
        self.rows = rows
        values = defaultdict(list)
        for impl, group, name, n, value, _unit in rows:
            values[(impl, group, name, None if group in PER_RUN_GROUPS else n)].append(value)
        self.values = values

    def get(self, impl, group, name, n=None):
        v = self.values.get((impl, group, name, n))
        return statistics.median(v) if v else None

    def spread(self, impl, group, name):
        v = self.values.get((impl, group, name, None))
        return (statistics.median(v), min(v), max(v), len(v)) if v else None

    def sizes(self, impl, routine):
        return sorted(k[3] for k in self.values if k[0] == impl and k[1] == "blas" and k[2] == routine)


def fmt(v, digits=2):
    return "-" if v is None else f"{v:.{digits}f}"


def header(out, *columns):
    out.append("| " + " | ".join(columns) + " |")
    out.append("|" + " --- |" * len(columns))


def compared(ours, theirs, ok):
    """cuhandle / baseline and whether ok(ratio) holds, as table cells."""
    r = ratio(ours, theirs)
    return fmt(r), verdict(None if r is None else ok(r))


def ratio(a, b):
    return None if a is None or b is None or b == 0 else a / b


def verdict(ok):
    return "-" if ok is None else ("met" if ok else "**missed**")


def blas_section(d, out):
    measured = sorted({n for r in ROUTINES for n in d.sizes("cuhandle", r)})
    span = f"from 2^{measured[0].bit_length() - 1} to 2^{measured[-1].bit_length() - 1}" if measured else ""
    out.append(f"### BLAS level 1 against cuBLAS, every power of two {span}")
    out.append("")
    out.append("Speed ratio = cuBLAS time per call / cuhandle time per call (above 1: cuhandle is faster), "
               "both measured in the same run with the same batching (batches of about 2 ms of back-to-back "
               "calls, median of 5-15 batches; where the harnesses took turns, as run-all does five times up to 2^22, "
               f"the median of the turns). Goal: at least {BLAS_GOAL} at every n.")
    out.append("")
    header(out, "routine", "worst ratio (n)", "sizes below goal", "ratio at largest n", "GB/s cuhandle / cuBLAS at largest n")
    all_ratios = {}
    for r in ROUTINES:
        sizes = [n for n in d.sizes("cuhandle", r) if d.get("cublas", "blas", r, n) is not None]
        if not sizes:
            continue
        ratios = {n: ratio(d.get("cublas", "blas", r, n), d.get("cuhandle", "blas", r, n)) for n in sizes}
        all_ratios[r] = ratios
        worst = min(sizes, key=lambda n: ratios[n])
        below = [n for n in sizes if ratios[n] < BLAS_GOAL]
        top = sizes[-1]
        out.append(f"| {r} | {ratios[worst]:.2f} (2^{worst.bit_length() - 1}) | {len(below)} of {len(sizes)}"
                   + (" (" + ", ".join(f"2^{n.bit_length() - 1}" for n in below) + ")" if below else "")
                   + f" | {ratios[top]:.2f} | {gbps(r, top, d.get('cuhandle', 'blas', r, top)):.0f} / "
                   f"{gbps(r, top, d.get('cublas', 'blas', r, top)):.0f} |")
    if not all_ratios:
        out.append("")
        out.append("(no BLAS rows in this run)")
        return
    sizes = sorted({n for ratios in all_ratios.values() for n in ratios})
    out.append("")
    out.append("Speed ratio per size (columns: log2 n):")
    out.append("")
    header(out, "routine", *(str(n.bit_length() - 1) for n in sizes))
    for r, ratios in all_ratios.items():
        out.append(f"| {r} | " + " | ".join(fmt(ratios.get(n)) for n in sizes) + " |")
    copy = d.get("cublas", "blas", "d2d_copy", sizes[-1])
    if copy:
        out.append("")
        out.append(f"Device-to-device copy (`cudaMemcpyAsync`, n = 2^{sizes[-1].bit_length() - 1} floats) in this run: "
                   f"{gbps('d2d_copy', sizes[-1], copy):.0f} GB/s, the ceiling for routines that write.")


def host_section(d, out):
    out.append("")
    out.append(f"### Reductions with the result on the host, n = 1000 (goal: at most {HOST_GOAL_US:.0f} us)")
    out.append("")
    header(out, "reduction", "cuhandle us", "cuBLAS us (host pointer mode)", "cuhandle / cuBLAS", "goal")
    for r in HOST_REDUCTIONS:
        ours, theirs = d.get("cuhandle", "blas_host", r, 1000), d.get("cublas", "blas_host", r, 1000)
        if ours is None and theirs is None:
            continue
        out.append(f"| {r} | {fmt(ours)} | {fmt(theirs)} | {fmt(ratio(ours, theirs))} | "
                   f"{verdict(None if ours is None else ours <= HOST_GOAL_US)} |")


def launch_section(d, out):
    out.append("")
    out.append("### Kernel launches against JCuda 12.6 (same JVM, same PTX kernels, grid 1, block 32)")
    out.append("")
    out.append("us per launch, median of 7 runs of 50,000 asynchronous launches and one synchronize, after a "
               "warm-up of every implementation and argument count; the implementations take turns run by run. "
               "cuhandle: a thread with no context current; ctx current: the handle's context made current first; "
               "JCuda: the primary context current (as JCuda needs); C: anchors.cu's raw `cuLaunchKernel`. "
               "Goal: cuhandle / JCuda at most 1.00.")
    out.append("")
    header(out, "arguments", "cuhandle", "cuhandle, ctx current", "JCuda", "C driver", "cuhandle / JCuda", "goal")
    for k in ARG_COUNTS:
        name = f"args{k}"
        ours, jc = d.get("cuhandle", "launch", name, 1), d.get("jcuda", "launch", name, 1)
        cells = [fmt(v, 3) for v in (ours, d.get("cuhandle_ctx_current", "launch", name, 1), jc, d.get("c", "launch", name, 1))]
        out.append(f"| {k} | " + " | ".join(cells + list(compared(ours, jc, lambda r: r <= 1.0))) + " |")
    gap = {v: d.get(v, "launch_gap", "args0", 1) for v in ("jcuda", "jcuda_plus_validate", "jcuda_plus_jcuda_call", "cuhandle")}
    if None not in gap.values():
        out.append("")
        out.append(f"Where the 0-argument gap goes (LaunchGapBenchmark, one thread, loops taking turns): JCuda's launch "
                   f"{gap['jcuda']:.3f} us; followed by one `Handle.validate()`, the context check (H8) and lifetime fences "
                   f"(L2/L5) that every cuhandle call makes, {gap['jcuda_plus_validate']:.3f} us "
                   f"(+{(gap['jcuda_plus_validate'] - gap['jcuda']) * 1e3:.0f} ns); followed by one more trivial JCuda call, "
                   f"{gap['jcuda_plus_jcuda_call']:.3f} us (+{(gap['jcuda_plus_jcuda_call'] - gap['jcuda']) * 1e3:.0f} ns); "
                   f"cuhandle's launch {gap['cuhandle']:.3f} us (+{(gap['cuhandle'] - gap['jcuda']) * 1e3:.0f} ns).")
    out.append("")
    out.append("Launches per second, empty kernel, each thread its own handle (cuhandle) or its own stream with the "
               "primary context current (JCuda); median of 5 runs of about 300 ms, cuhandle and JCuda taking turns. "
               "Goal: cuhandle at least JCuda.")
    out.append("")
    header(out, "threads", "cuhandle", "JCuda", "C driver (anchors.cu)", "cuhandle / JCuda", "goal")
    for t in THREADS:
        name = f"threads{t}"
        ours, jc = d.get("cuhandle", "launch_threads", name, t), d.get("jcuda", "launch_threads", name, t)
        cells = [mega(v) for v in (ours, jc, d.get("c", "launch_threads", name, t))]
        out.append(f"| {t} | " + " | ".join(cells + list(compared(ours, jc, lambda r: r >= 1.0))) + " |")


def mega(v):
    return "-" if v is None else f"{v / 1e6:.3f} M"


def handle_section(d, out):
    out.append("")
    jvms = d.spread("cuhandle", "handle", "create_close")
    count = f"{jvms[3]} fresh JVMs" if jvms else "fresh JVMs"
    out.append(f"### Handle costs, {count} (median / min / max of the per-JVM medians)")
    out.append("")
    header(out, "what", "median", "min", "max", "runs")
    units = {}
    for impl, group, name, _n, _v, unit in d.rows:
        if group == "handle":
            units[(impl, name)] = unit
    for (impl, name), unit in units.items():
        s = d.spread(impl, "handle", name)
        label = name.replace('_', ' ') + (" (C)" if impl == "c" else "")
        out.append(f"| {label} ({unit}) | {s[0]:.1f} | {s[1]:.1f} | {s[2]:.1f} | {s[3]} |")
    activation_summary(d, out)


def activation_summary(d, out):
    """Issue 13's activation goal, next to the driver's own floor for the same calls (activation_floor.c)."""
    ours = d.spread("cuhandle", "handle", "activation_overhead")
    floor = d.spread("c", "handle", "activation_driver_floor")
    if ours is None:
        return
    out.append("")
    line = (f"Context activation with another context current, over a bare JNI call: median {ours[0]:.1f} ns, "
            f"spread {ours[1]:.1f}-{ours[2]:.1f} ns over {ours[3]} JVMs; goal at most {ACTIVATION_GOAL_NS:.0f} ns in "
            f"every JVM: {verdict(ours[2] <= ACTIVATION_GOAL_NS)}.")
    if floor is not None:
        share = ours[0] - floor[0]
        line += (f" The driver calls beneath it (cuCtxGetId, cuCtxGetCurrent, two cuCtxSetCurrent), timed in C in "
                 f"the same run: median {floor[0]:.1f} ns, spread {floor[1]:.1f}-{floor[2]:.1f} ns; cuhandle's own "
                 f"share is the difference, {share:.1f} ns at the medians; goal at most "
                 f"{ACTIVATION_SHARE_GOAL_NS:.0f} ns: {verdict(share <= ACTIVATION_SHARE_GOAL_NS)}.")
    out.append(line)
    enter_exit = d.spread("cuhandle", "handle", "handle_enter_exit")
    without = d.spread("cuhandle", "handle", "activation_overhead_without_enter_exit")
    if floor is not None and enter_exit is not None and without is not None:
        out.append("")
        out.append(f"Where the share goes (same JVMs, per-round differences): the Java handle's enter and exit around "
                   f"the native call (rules H6 and L2: a call in flight keeps `close()` from freeing; since 78edd51 one "
                   f"fence on the thread that made the handle, an atomic add each way on others) take median {enter_exit[0]:.1f} ns, spread {enter_exit[1]:.1f}-{enter_exit[2]:.1f} ns; "
                   f"the same native call without them is {without[0]:.1f} ns over the bare call, "
                   f"{without[0] - floor[0]:.1f} ns over the driver's calls at the medians.")
    same = d.spread("cuhandle", "handle", "activation_over_driver_calls_same_rounds")
    same_without = d.spread("cuhandle", "handle", "activation_over_driver_calls_without_enter_exit")
    if same is not None and same_without is not None:
        # The C process above runs at its own speed, which need not be the next JVM's; these set the call against
        # the same driver calls made from Rust in the same JVM and rounds (a median of per-round differences).
        out.append("")
        out.append(f"The same driver calls made from Rust in the same JVMs and rounds (entered as the call is): the call "
                   f"is median {same[0]:.1f} ns over them, spread {same[1]:.1f}-{same[2]:.1f} ns over {same[3]} JVMs; "
                   f"goal at most {ACTIVATION_SHARE_GOAL_NS:.0f} ns: {verdict(same[0] <= ACTIVATION_SHARE_GOAL_NS)}. "
                   f"Without the enter and exit, median {same_without[0]:.1f} ns, spread "
                   f"{same_without[1]:.1f}-{same_without[2]:.1f} ns: the activation's own share (validation, switch, "
                   f"restore), goal at most {ACTIVATION_SHARE_GOAL_NS:.0f} ns: "
                   f"{verdict(same_without[0] <= ACTIVATION_SHARE_GOAL_NS)}; the enter and exit are rules H6 and L2's "
                   f"price, timed in the same rounds above.")
    create = d.spread("cuhandle", "handle", "create_close")
    if create is not None:
        out.append("")
        out.append(f"`Handle.create` + `close` with the primary context kept active: median {create[0]:.3f} us, spread "
                   f"{create[1]:.3f}-{create[2]:.3f} us over {create[3]} JVMs; goal at most {CREATE_CLOSE_GOAL_US:.1f} us "
                   f"at the median: {verdict(create[0] <= CREATE_CLOSE_GOAL_US)}.")
        native = d.spread("cuhandle", "handle", "create_close_native_only")
        warm = d.spread("cuhandle", "handle", "create_close_after_warmup")
        # The Java share per JVM, then the median: fresh JVMs run at different speeds, so a difference of two
        # medians could set one JVM's figure against another's.
        native_by_run = per_run(d, "cuhandle", "handle", "create_close_native_only")
        warm_by_run = per_run(d, "cuhandle", "handle", "create_close_after_warmup")
        shares = [warm_by_run[n] - native_by_run[n] for n in warm_by_run if n in native_by_run]
        if native is not None and warm is not None and shares:
            out[-1] += (f" Its split, timed after the rows above in the same JVMs: the native create and destroy alone "
                        f"(no Java handle: its objects, the cleaner's registration, the lifetime) median {native[0]:.3f} us; "
                        f"the whole again after warm-up (create + close above is timed from each JVM's first creates) "
                        f"median {warm[0]:.3f} us; the Java handle's share, the difference in each JVM, median "
                        f"{statistics.median(shares):.3f} us.")


def per_run(d, impl, group, name):
    """The values of a per-run row, by run (fresh process) number; the median where a run number repeats."""
    values = defaultdict(list)
    for i, g, nm, n, v, _unit in d.rows:
        if (i, g, nm) == (impl, group, name):
            values[n].append(v)
    return {n: statistics.median(v) for n, v in values.items()}


COLD_STEPS = ["extract", "system_load", "configure", "driver_load", "cuinit", "retain", "handle_class", "retain_driver",
              "handle_create", "blas_first_call", "blas_second_call", "jvm_start_to_main"]


def cold_section(d, out):
    out.append("")
    c = d.spread("c", "cold", "cuinit_plus_retain")
    whole = d.spread("cuhandle", "cold", "first_handle_create")
    if c is None and whole is None:
        return
    out.append(f"### Cold start, fresh processes (goal: first `Handle.create()` at most C's cuInit + retain + {COLD_GOAL_MS:.0f} ms)")
    out.append("")
    header(out, "what", "median ms", "min", "max", "runs")

    def line(label, s):
        if s:
            out.append(f"| {label} | {s[0]:.1f} | {s[1]:.1f} | {s[2]:.1f} | {s[3]} |")

    line("C: `cuInit`", d.spread("c", "cold", "cuinit"))
    line("C: first `cuDevicePrimaryCtxRetain`", d.spread("c", "cold", "retain"))
    line("C: both", c)
    line("cuhandle: first `Handle.create(0)` in `main`", whole)
    for step in COLD_STEPS:
        line(f"cuhandle step: {step.replace('_', ' ')}", d.spread("cuhandle", "cold", step))
    out.append("")
    out.append("Steps: `ColdStartBenchmark steps` does the work of the first `Handle.create(0)` one call at a time "
               "(load libcuhandle = extract + System.load + configure, load libcuda, cuInit, retain = handle class + "
               "the driver's retain alone + the create after it; then the first "
               "BLAS call, which loads the BLAS kernel image); the loader's steps and the JVM start are also recorded "
               "in the `whole` runs, hence more runs.")
    if c and whole:
        over = whole[0] - c[0]
        out.append("")
        out.append(f"First `Handle.create(0)` minus C's cuInit + retain (medians): {over:.1f} ms; "
                   f"goal {verdict(over <= COLD_GOAL_MS)}.")
        paired = cold_differences(d)
        if paired:
            out.append(f"The same, run by run (each Java process against the C process just before it): median "
                       f"{statistics.median(paired):.1f} ms, spread {min(paired):.1f} to {max(paired):.1f} ms over "
                       f"{len(paired)} runs.")


def cold_differences(d):
    """First Handle.create minus C's cuInit + retain of the same run number (the C process ran just before)."""
    c = per_run(d, "c", "cold", "cuinit_plus_retain")
    java = per_run(d, "cuhandle", "cold", "first_handle_create")
    return [java[n] - c[n] for n in sorted(java) if n in c]


def size_label(n):
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift} {unit}"
    return f"{n} B"


def transfer_section(d, out):
    sizes = sorted({k[3] for k in d.values if k[1] == "transfer" and k[0] in ("cuhandle", "jcuda")})
    if not sizes:
        return
    out.append("")
    out.append("### Java arrays to and from the device, against JCuda 12.6 and C (same run)")
    out.append("")
    out.append("GB/s (1e9 bytes/s), median of 7 rounds in which cuhandle and JCuda take turns in one JVM, each round the "
               "median of a batch of copies. cuhandle: `copyToDevice(array, ...)` + `synchronize()`, `copyToHost(...)` "
               "(pinned staging, each chunk copied with a `memcpy` in a critical region held for that copy alone, never "
               "across a wait for the GPU, overlapping the DMA of the chunk before; large arrays split over threads). "
               "JCuda: `cuMemcpyHtoD(Pointer.to(array))` + `cuCtxSynchronize()`, `cuMemcpyDtoH` (the array pinned with a "
               "critical region for the call). C: `cuMemcpy*Async` + `cuStreamSynchronize` from `malloc` (pageable) and "
               f"`cuMemHostAlloc` (pinned) memory, `tests/bench/transfer_copy.cu`. Goal: cuhandle / JCuda at least "
               f"{TRANSFER_RATIO_GOAL:.1f} at every size, and at least {TRANSFER_GBPS_GOAL:.0f} GB/s both ways from "
               f"{size_label(TRANSFER_GBPS_GOAL_FROM)}.")
    out.append("")
    header(out, "array", "size", "direction", "cuhandle", "JCuda", "cuhandle / JCuda", "C pageable", "C pinned", "goal")
    for t in TRANSFER_TYPES:
        for n in sizes:
            for direction in ("h2d", "d2h"):
                ours, jc = d.get("cuhandle", "transfer", f"{t}_{direction}", n), d.get("jcuda", "transfer", f"{t}_{direction}", n)
                if ours is None and jc is None:
                    continue
                r = ratio(ours, jc)
                ok = None if ours is None else ((r is None or r >= TRANSFER_RATIO_GOAL)
                                               and (n < TRANSFER_GBPS_GOAL_FROM or ours >= TRANSFER_GBPS_GOAL))
                cells = [f"{t}[]", size_label(n), "host to device" if direction == "h2d" else "device to host", fmt(ours), fmt(jc), fmt(r),
                         fmt(d.get("c_pageable", "transfer", direction, n)), fmt(d.get("c_pinned", "transfer", direction, n)), verdict(ok)]
                out.append("| " + " | ".join(cells) + " |")


def batch_section(d, out):
    shapes = sorted({(int(k[2].rsplit("_", 1)[1]), k[3]) for k in d.values if k[1] == "batch" and k[0] == "cuhandle_all"})
    if not shapes:
        return
    out.append("")
    out.append("### Many small arrays at once, against loops of single copies and JCuda 12.6 (same run)")
    out.append("")
    out.append("Microseconds for the whole batch of `float[]` until the data is in place, median of 7 rounds in which the "
               "ways take turns in one JVM (`BatchCopyBenchmark`). uploadAll / downloadAll: one staged pass, each chunk's "
               "copies in one `cuMemcpyBatchAsync` call; the same without it: one copy per array from the shared chunk; "
               "loops: `copyToDevice`/`copyToHost` per array (cuhandle), `cuMemcpyHtoD`/`cuMemcpyDtoH` per array "
               f"(JCuda). Goal (1,000 x 4 KiB, to the device and back): the cuhandle loop at least {BATCH_LOOP_GOAL:.1f} "
               f"times and JCuda's at least {BATCH_JCUDA_GOAL:.1f} times as long as uploadAll / downloadAll.")
    out.append("")
    header(out, "arrays", "direction", *[label for _, label in BATCH_IMPLS], "loop / all", "JCuda / all", "goal")
    for count, n in shapes:
        for direction, words in (("h2d", "host to device"), ("d2h", "device to host"), ("roundtrip", "round trip")):
            us = [d.get(impl, "batch", f"float_{direction}_{count}", n) for impl, _ in BATCH_IMPLS]
            loop, jc = ratio(us[2], us[0]), ratio(us[3], us[0])
            ok = None
            if count == 1000 and n == 4096 and direction == "roundtrip" and loop is not None:
                ok = loop >= BATCH_LOOP_GOAL and (jc is None or jc >= BATCH_JCUDA_GOAL)
            cells = [f"{count:,} x {size_label(n)}", words, *[fmt(u, 1) for u in us], fmt(loop), fmt(jc), verdict(ok)]
            out.append("| " + " | ".join(cells) + " |")


def markdown(d, notes):
    out = []
    about = [n for n in notes if n.startswith("bench run") or n.startswith("cublas_l1 on")]
    if about:
        out.append("Measured in one run of `.gpu-bundle/run-all bench` (" + "; ".join(dict.fromkeys(about)) + ").")
        out.append("")
    blas_section(d, out)
    host_section(d, out)
    launch_section(d, out)
    handle_section(d, out)
    cold_section(d, out)
    transfer_section(d, out)
    batch_section(d, out)
    return "\n".join(out) + "\n"


def with_images(md, image_dir):
    charts = [("blas-gbps.png", "BLAS level 1 GB/s against n"), ("blas-us.png", "BLAS level 1 us per call against n"),
              ("launch.png", "launch overhead and throughput")]
    links = "\n".join(f"![{alt}]({image_dir}/{name})" for name, alt in charts)
    return md + "\n" + links + "\n"


def write_csv(rows, notes, path):
    """All rows, after the run's notes as '#' lines (report.py --readme reads them back)."""
    with open(path, "w", newline="") as f:
        for note in notes:
            f.write("# " + note + "\n")
        w = csv.writer(f, lineterminator="\n")
        w.writerow(["impl", "group", "name", "n", "value", "unit"])
        for row in rows:
            w.writerow(row)


def charts(d, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no charts written")
        return
    for what, ylabel, fname in (("gbps", "GB/s (reads + writes)", "blas-gbps.png"), ("us", "us per call", "blas-us.png")):
        fig, axes = plt.subplots(4, 4, figsize=(16, 13), sharex=True)
        for ax, r in zip(axes.flat, ROUTINES):
            for impl, style in (("cuhandle", "-o"), ("cublas", "--s")):
                sizes = d.sizes(impl, r)
                us = [d.get(impl, "blas", r, n) for n in sizes]
                ys = [gbps(r, n, u) for n, u in zip(sizes, us)] if what == "gbps" else us
                if sizes:
                    ax.plot(sizes, ys, style, markersize=3, color=COLOURS[impl], label="cuBLAS" if impl == "cublas" else impl)
            ax.set_xscale("log", base=2)
            ax.set_yscale("log")
            ax.set_title(r)
            ax.grid(True, which="both", linewidth=0.3)
        for ax in axes[-1]:
            ax.set_xlabel("n")
        for ax in axes[:, 0]:
            ax.set_ylabel(ylabel)
        axes.flat[0].legend(fontsize=8)
        fig.suptitle(f"BLAS level 1, cuhandle and cuBLAS in the same run: {ylabel} against n")
        fig.tight_layout()
        fig.savefig(os.path.join(outdir, fname), dpi=80)
        plt.close(fig)
    fig, (a1, a2) = plt.subplots(1, 2, figsize=(12, 4.5))
    impls = [("cuhandle", "cuhandle"), ("cuhandle_ctx_current", "cuhandle, ctx current"), ("jcuda", "JCuda"), ("c", "C driver")]
    width = 0.2
    for i, (impl, label) in enumerate(impls):
        ys = [d.get(impl, "launch", f"args{k}", 1) for k in ARG_COUNTS]
        xs = [x + (i - 1.5) * width for x in range(len(ARG_COUNTS))]
        a1.bar([x for x, y in zip(xs, ys) if y is not None], [y for y in ys if y is not None], width=width,
               color=COLOURS[impl], label=label)
    a1.set_xticks(range(len(ARG_COUNTS)))
    a1.set_xticklabels([str(k) for k in ARG_COUNTS])
    a1.set_xlabel("kernel arguments")
    a1.set_ylabel("us per launch")
    a1.set_ylim(bottom=0)
    a1.legend(fontsize=8)
    for impl, label in (("cuhandle", "cuhandle"), ("jcuda", "JCuda"), ("c", "C driver")):
        pts = [(t, d.get(impl, "launch_threads", f"threads{t}", t)) for t in THREADS]
        pts = [(t, v / 1e6) for t, v in pts if v is not None]
        if pts:
            a2.plot([p[0] for p in pts], [p[1] for p in pts], "-o", color=COLOURS[impl], label=label)
    a2.set_xscale("log", base=2)
    a2.set_xticks(THREADS)
    a2.set_xticklabels([str(t) for t in THREADS])
    a2.set_xlabel("threads")
    a2.set_ylabel("million launches per second")
    a2.set_ylim(bottom=0)  # from zero: a truncated axis made 0.24 against 0.26 M look like a factor
    a2.legend(fontsize=8)
    fig.suptitle("Empty-kernel launches: overhead per launch and throughput")
    fig.tight_layout()
    fig.savefig(os.path.join(outdir, "launch.png"), dpi=80)
    plt.close(fig)


def replace_between_markers(readme, text):
    with open(readme) as f:
        old = f.read()
    if BEGIN not in old or END not in old or old.index(BEGIN) > old.index(END):
        sys.exit(f"{readme} has no {BEGIN} ... {END} section")
    new = old[:old.index(BEGIN) + len(BEGIN)] + "\n" + text + old[old.index(END):]
    with open(readme, "w") as f:
        f.write(new)


def main(argv):
    if len(argv) >= 3 and argv[1] == "--readme":
        perf_csv = argv[3] if len(argv) > 3 else sys.exit(__doc__)
        image_dir = argv[4] if len(argv) > 4 else os.path.dirname(perf_csv) or "."
        rows, notes = read_rows([perf_csv])
        md = markdown(Data(rows), notes)
        replace_between_markers(argv[2], with_images(md, image_dir))
        return
    if len(argv) < 3:
        sys.exit(__doc__)
    outdir, paths = argv[1], argv[2:]
    os.makedirs(outdir, exist_ok=True)
    rows, notes = read_rows(paths)
    d = Data(rows)
    write_csv(rows, notes, os.path.join(outdir, "perf.csv"))
    md = markdown(d, notes)
    with open(os.path.join(outdir, "perf.md"), "w") as f:
        f.write(md)
    charts(d, outdir)
    print(md)


if __name__ == "__main__":
    main(sys.argv)
