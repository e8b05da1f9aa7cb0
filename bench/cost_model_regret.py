#!/usr/bin/env python3
"""How well the quantized matmul's cost model picks, from `tilevm_qmatmul_sweep --space` output.

    python3 bench/cost_model_regret.py SPACE.txt [TOP]

For each problem (M, K, N): the fastest configuration measured, the cost model's first pick and its measured
time over the fastest (the regret: issue 16 asks for at most 1.10), the best of the model's TOP (default 5)
picks, and the configurations the model ranks worst relative to their measured time (what it underrates).
Standard library only."""
import collections
import sys


def read_space(lines):
    """The "space WTYPE M K N CONFIG MEASURED MODEL" lines by problem: {(wtype, m, k, n): [(config, measured,
    model), ...]} (bench/fit_cost_model.py reads them too)."""
    by = collections.defaultdict(list)
    for line in lines:
        parts = line.split()
        if len(parts) == 8 and parts[0] == "space":
            _, wtype, m, k, n, config, measured, model = parts
            by[(wtype, int(m), int(k), int(n))].append((config, float(measured), float(model)))
    return by


def main():
    if len(sys.argv) < 2:
        print(__doc__)
        return 2
    top = int(sys.argv[2]) if len(sys.argv) > 2 else 5
    with open(sys.argv[1]) as f:
        by = read_space(f)
    if not by:
        print("no 'space' lines in", sys.argv[1])
        return 1
    worst = 1.0
    for (wtype, m, k, n), rows in by.items():
        best = min(rows, key=lambda r: r[1])
        ranked = sorted(rows, key=lambda r: r[2])
        pick = ranked[0]
        best_of_top = min(ranked[:top], key=lambda r: r[1])
        regret = pick[1] / best[1]
        worst = max(worst, regret)
        # Underrated: measured well (within 1.2 x the best) but ranked low by the model.
        rank = {r[0]: i for i, r in enumerate(ranked)}
        underrated = sorted((r for r in rows if r[1] <= 1.2 * best[1]), key=lambda r: -rank[r[0]])[:2]
        print(f"{wtype} M={m} K={k} N={n}: {len(rows)} configurations; fastest {best[0]} {best[1]:.1f} us; "
              f"model's pick {pick[0]} {pick[1]:.1f} us (x{regret:.2f}); best of its top {top} "
              f"x{best_of_top[1] / best[1]:.2f}")
        for r in underrated:
            print(f"    underrated: {r[0]} {r[1]:.1f} us measured, {r[2]:.1f} us modelled, rank {rank[r[0]] + 1}")
    print(f"worst regret of the model's pick: x{worst:.2f} over {len(by)} problems")
    return 0


if __name__ == "__main__":
    sys.exit(main())
