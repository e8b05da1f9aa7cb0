#!/usr/bin/env python3
"""Refit constants of the quantized matmul's cost model (QMatmulCalibration) to recorded sweeps, without a GPU.

    python3 bench/fit_cost_model.py SWEEP FIELD=START [FIELD=START ...] [--rounds N] [--rms-weight W]
    e.g. python3 bench/fit_cost_model.py <(zcat bench/data/qmatmul_space_h200.txt.gz) \\
             warp_weights_per_ns=2.3 sm_weights_per_ns=29 slice_overhead_weights=41

SWEEP holds `tilevm_qmatmul_sweep --space` lines (every configuration of the tuner's space timed). Each
candidate calibration is scored by `tilevm_qmatmul_sweep --replay SWEEP --set FIELD=VALUE ...` (this build's
model): for every problem the regret, the measured time of the model's first pick over the fastest measured,
and the log error of the model on the configurations within 1.5 x the fastest. The search is a coordinate
descent with multiplicative steps (shrunk where neither direction helps) that minimizes
    4 log(geometric mean regret) + log(worst regret) + W * rms log error   (W: --rms-weight, default 5),
the score of the twenty-seventh session's refit (docs/performance.md). The fit is sharp (picks among close
configurations flip): check the picks it would make on problems it did not see before keeping a result.
Standard library only; the sweep tool is looked for in build/bin (TILEVM_SWEEP overrides)."""
import math
import os
import subprocess
import sys
import tempfile

from cost_model_regret import read_space

TOOL = os.environ.get("TILEVM_SWEEP", os.path.join("build", "bin", "tilevm_qmatmul_sweep"))


def score(sweep, fields, rms_weight):
    args = [TOOL, "--replay", sweep]
    for name, value in fields.items():
        args += ["--set", f"{name}={value:.6g}"]
    out = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    regrets, errors = [], []
    for rows in read_space(out.splitlines()).values():
        fastest = min(r[1] for r in rows)
        regrets.append(min(rows, key=lambda r: r[2])[1] / fastest)
        errors += [math.log(r[2] / r[1]) ** 2 for r in rows if r[1] <= 1.5 * fastest]
    geo = math.exp(sum(map(math.log, regrets)) / len(regrets))
    rms = math.sqrt(sum(errors) / len(errors))
    return 4 * math.log(geo) + math.log(max(regrets)) + rms_weight * rms, geo, max(regrets), rms


def main():
    argv = sys.argv[1:]
    rounds, rms_weight = 20, 5.0
    for flag in ("--rounds", "--rms-weight"):
        if flag in argv:
            i = argv.index(flag)
            value = argv[i + 1]
            del argv[i:i + 2]
            rounds, rms_weight = (int(value), rms_weight) if flag == "--rounds" else (rounds, float(value))
    if len(argv) < 2:
        print(__doc__)
        return 2
    # Process substitutions and pipes cannot be read twice: keep a copy.
    with open(argv[0]) as src, tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as copy:
        copy.write(src.read())
    fields = {a.split("=")[0]: float(a.split("=")[1]) for a in argv[1:]}
    steps = {name: 0.3 for name in fields}
    best = score(copy.name, fields, rms_weight)
    print(f"start {fields}: geomean {best[1]:.4f} worst {best[2]:.3f} rms {best[3]:.3f}")
    for r in range(rounds):
        for name in fields:
            for direction in (1, -1):
                trial = dict(fields, **{name: fields[name] * math.exp(direction * steps[name])})
                s = score(copy.name, trial, rms_weight)
                if s[0] < best[0] - 1e-9:
                    fields, best = trial, s
                    break
            else:
                steps[name] *= 0.6
        print(f"round {r + 1}: " + " ".join(f"{k}={v:.4g}" for k, v in fields.items()) +
              f": geomean {best[1]:.4f} worst {best[2]:.3f} rms {best[3]:.3f}", flush=True)
    os.unlink(copy.name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
