#!/usr/bin/env python3
"""One line per algorithm from the device session's cpu step: the cpu rung's time at 1 and at N threads (forward
and backward), its parallel efficiency (t1 / (N * tN)), its bytes/s as a % of the host copy at N threads, and for
flash the ratio to PyTorch's CPU attention at the same thread counts (tools/gpu/peers_cpu.py); first, the host's own
parallel efficiency on a loop of multiply-adds (the bench's cpu_gflops at N threads over N times its rate at 1), the
ceiling of every algorithm's.

    python3 tools/gpu/cpu_summary.py BENCH_DIR_1 BENCH_DIR_N PEERS_CSV

BENCH_DIR_*: the --out folders of `ladder bench all --rung cpu` at 1 and at N threads.
"""
import csv
import glob
import sys


def rows_of(folder):
    """{(algo, pass): row} of the cpu rows of the one CSV `ladder bench` wrote into @p folder."""
    found = glob.glob(f"{folder}/*.csv")
    if len(found) != 1:
        sys.exit(f"cpu_summary: expected one CSV in {folder}, found {len(found)}")
    with open(found[0], newline="", encoding="utf-8") as f:
        return {(r["algo"], r["pass"]): r for r in csv.DictReader(f) if r["rung"] == "cpu"}


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    one, many = rows_of(sys.argv[1]), rows_of(sys.argv[2])
    with open(sys.argv[3], newline="", encoding="utf-8") as f:
        torch = {int(r["threads"]): r for r in csv.DictReader(f)}
    host_one = {r.get("cpu_gflops") for r in one.values()} - {None, ""}
    host_many = {r.get("cpu_gflops") for r in many.values()} - {None, ""}
    if len(host_one) == 1 and len(host_many) == 1:
        g1, gn = float(host_one.pop()), float(host_many.pop())
        n = int(next(iter(many.values()))["cpu_threads"])
        print(f"cpu host: multiply-add loop {g1:.1f} GFLOP/s at 1, {gn:.1f} at {n} ({100 * gn / (n * g1):.0f}% "
              f"efficiency)")
    for algo in dict.fromkeys(a for a, _ in one):
        parts = []
        for pas in ("fwd", "bwd"):
            if (algo, pas) not in one or (algo, pas) not in many:
                continue
            r1, rn = one[(algo, pas)], many[(algo, pas)]
            t1, tn, n = float(r1["median_ms"]), float(rn["median_ms"]), int(rn["cpu_threads"])
            part = f"{pas} {t1:.1f} ms at 1, {tn:.1f} ms at {n} ({100 * t1 / (n * tn):.0f}% efficiency"
            if rn["pct_of_copy"]:
                part += f", {rn['pct_of_copy']}% of the host copy {float(rn['cpu_copy_gbps']):.0f} GB/s"
            part += ")"
            if algo == "flash" and 1 in torch and n in torch:
                col = f"{pas}_ms"
                part += (f", x{t1 / float(torch[1][col]):.1f} / x{tn / float(torch[n][col]):.1f} PyTorch's "
                         f"{float(torch[1][col]):.1f} / {float(torch[n][col]):.1f} ms")
            parts.append(part)
        print(f"cpu {algo}: " + "; ".join(parts))


if __name__ == "__main__":
    main()
