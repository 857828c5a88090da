#!/usr/bin/env python3
"""Prints fused-vs-interpreted ratios from sgraph_bench's JSON output (one run, side by side):

    build/release/bench/sgraph_bench --benchmark_filter='Fusion|Roofline' \\
        --benchmark_format=json | bench/ratios.py
"""
import json
import re
import sys


def main():
    data = json.load(sys.stdin)
    rows = {}  # case -> {(fused, threads): benchmark}
    order = []
    for b in data["benchmarks"]:
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") != "median":
            continue
        m = re.match(r"(.*)/fused:(\d)/threads:(\d+)", b["name"])
        if not m:
            if "Roofline" in b["name"]:
                print(f"{b['name']:<40} {b['GB/s']:8.1f} GB/s")
            continue
        case = m.group(1).replace("BM_Fusion_", "")
        if case not in rows:
            rows[case] = {}
            order.append(case)
        rows[case][(int(m.group(2)), int(m.group(3)))] = b
    print()
    print(f"{'case':<34} {'interp ms':>10} {'fused ms':>9} {'2 thr ms':>9} "
          f"{'speedup':>8} {'2 thr':>7}  fused rate (1 thread)")
    for case in order:
        r = rows[case]
        unit = 1e-6 if r[(0, 1)]["time_unit"] == "ns" else 1.0
        t = {k: v["real_time"] * unit for k, v in r.items()}
        base = t[(0, 1)]
        f1, f2 = t.get((1, 1)), t.get((1, 2))
        fused = r.get((1, 1), {})
        rate = ""
        if "GB/s" in fused:
            rate = f"{fused['GB/s']:.1f} GB/s = {fused['of_copy']:.0%} of copy"
        elif "GFLOP/s" in fused:
            rate = f"{fused['GFLOP/s']:.1f} GFLOP/s = {fused['of_sgemm']:.0%} of SGEMM"
        print(f"{case:<34} {base:10.3f} {f1:9.3f} {f2:9.3f} {base / f1:7.2f}x "
              f"{base / f2:6.2f}x  {rate}")


if __name__ == "__main__":
    main()
