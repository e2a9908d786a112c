#!/usr/bin/env python3
"""Merges BLAS benchmark CSV lines (impl,op,n,bytes,median_ms,gbps) of cuhandle and cuBLAS from one
device run into a table (stdout), a CSV and a PNG bar chart.

Ceilings, measured in the same run: the device-to-device copy bandwidth for ops that write, and
cuBLAS sdot's bandwidth for read-only ops (nrm2, asum, iamax, dot).

usage: report.py cuhandle.csv cublas.csv out.csv out.png
"""
import csv
import sys

READ_ONLY = {"dot", "nrm2", "asum", "amax"}
ORDER = ["scal", "axpy", "dot", "nrm2", "asum", "amax", "copy", "swap"]


def family(op):
    return op[2:] if op.startswith("i") else op[1:]


def load(path):
    rows = {}
    with open(path) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) == 6 and parts[2].isdigit():
                impl, op, n, nbytes, ms, gbps = parts
                rows[op] = {"impl": impl, "n": int(n), "bytes": int(nbytes), "ms": float(ms), "gbps": float(gbps)}
    return rows


def main():
    ours, theirs = load(sys.argv[1]), load(sys.argv[2])
    copy_ceiling = theirs["d2d_copy_f32"]["gbps"]
    read_ceiling = theirs["sdot"]["gbps"]
    table = []
    for prefix in ("s", "d"):
        for fam in ORDER:
            op = ("i" + prefix + fam) if fam == "amax" else prefix + fam
            if op not in ours or op not in theirs:
                continue
            ceiling = read_ceiling if fam in READ_ONLY else copy_ceiling
            o, t = ours[op]["gbps"], theirs[op]["gbps"]
            table.append((op, ours[op]["n"], o, t, o / t, o / ceiling, "read (cuBLAS sdot)" if fam in READ_ONLY else "copy (D2D)"))
    header = ("op", "n", "GB/s ours", "GB/s cuBLAS", "ours/cuBLAS", "share of ceiling", "ceiling")
    print(f"ceilings in this run: D2D copy {copy_ceiling:.0f} GB/s, cuBLAS sdot {read_ceiling:.0f} GB/s")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    for op, n, o, t, ratio, share, ceil in table:
        print(f"| {op} | {n} | {o:.0f} | {t:.0f} | {ratio:.2f} | {share:.0%} | {ceil} |")
    for name in ("saxpy1_latency", "sdot1000_host_latency"):
        ours_key, theirs_key = name, name.replace("saxpy1", "sscal")
        if ours_key in ours and theirs_key in theirs:
            print(f"{name}: ours {ours[ours_key]['ms']:.2f} us, cuBLAS ({theirs_key}) {theirs[theirs_key]['ms']:.2f} us per call")
    with open(sys.argv[3], "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        for row in table:
            w.writerow([row[0], row[1], f"{row[2]:.1f}", f"{row[3]:.1f}", f"{row[4]:.3f}", f"{row[5]:.3f}", row[6]])
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no PNG written")
        return
    ops = [r[0] for r in table]
    xs = range(len(ops))
    fig, ax = plt.subplots(figsize=(12, 4.5))
    ax.bar([x - 0.2 for x in xs], [r[2] for r in table], width=0.4, label="cuhandle")
    ax.bar([x + 0.2 for x in xs], [r[3] for r in table], width=0.4, label="cuBLAS")
    ax.axhline(copy_ceiling, color="gray", linestyle="--", linewidth=1, label=f"D2D copy {copy_ceiling:.0f} GB/s")
    ax.axhline(read_ceiling, color="black", linestyle=":", linewidth=1, label=f"cuBLAS sdot {read_ceiling:.0f} GB/s")
    ax.set_xticks(list(xs))
    ax.set_xticklabels(ops, rotation=45)
    ax.set_ylabel("GB/s (reads + writes)")
    ax.set_title("BLAS level 1 bandwidth, n = 2^28 floats / 2^27 doubles, same device run")
    ax.legend(loc="lower right", fontsize=8)
    fig.tight_layout()
    fig.savefig(sys.argv[4], dpi=110)


if __name__ == "__main__":
    main()
