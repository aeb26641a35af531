"""Coverage of the adaptive tests' interval against the folds its misfit term τ is learnt on.

An adaptive test's 90 % interval adds the misfit term ``τ ρ`` to its predictive variance
(:class:`coreval.prediction.adaptive.AdaptivePredictor`): ``τ²`` is the split-conformal
inflation of held-out source models' tests, each run on a bank refitted without its fold.
A fold's bank is fitted on ``(K − 1)/K`` of the source models and the targets' bank on all
of them, so the held-out tests are scored by a bank that differs from the one in use, by
less as ``K`` grows (the same learning-curve gap as ``calibration="cv"``'s folds,
:mod:`coreval.pipeline`). This script runs one rule on the random split of
``benchmarks/adaptive.py`` (``--n-source`` source models, all others targets) with each
``--folds`` value and reports the targets' coverage, RMSE and width, per seed and on
average.

Run from the repository root::

    python benchmarks/adaptive_tau_folds.py [--datasets arc_challenge:0.02 ifeval:0.05]

Rows are stored in ``benchmarks/results/raw/adaptive_tau_folds/`` as they finish (a re-run
computes only the missing ones); the report (``--out``, by default
``benchmarks/results/adaptive_tau_folds.md``) lists the stored rows of ``--rule``.
"""

from __future__ import annotations

import argparse
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import pandas as pd

from _results import RESULTS, SHARED, command_line, provenance, write_markdown

RAW = RESULTS / "raw" / "adaptive_tau_folds"


def run(name: str, budget: float, seeds: list[int], folds: list[int], rule: str,
        n_source: int) -> None:
    """Store one row per (seed, folds) of ``rule`` on ``name`` at ``budget``."""
    from adaptive import method_row
    from coreval._atomic import write_text_atomic
    from coreval.base import FitCache, resolve_budget
    from coreval.data.io import load_matrix
    from coreval.data.splits import make_split
    from coreval.jax_cache import release_compiled_programs

    matrix = None
    for seed in seeds:
        todo = [f for f in folds
                if not (RAW / f"{name}_b{budget:g}_{rule}_s{seed}_f{f}.json").exists()]
        if not todo:
            continue
        matrix = matrix or load_matrix(name, data_dir=SHARED / "data")
        split = make_split(matrix, "random", seed=seed, n_source=n_source)
        source, target = matrix.take(split.source), matrix.take(split.target)
        k = resolve_budget(budget, matrix.n_items)
        cache = FitCache()  # the bank on all source models is fitted once per seed
        for f in todo:
            _, row = method_row(rule, source, target, k, seed, cache, tau_folds=f)
            row.update(dataset=name, budget=budget, seed=seed, tau_folds=f,
                       n_source=source.n_models, n_target=target.n_models)
            write_text_atomic(RAW / f"{name}_b{budget:g}_{rule}_s{seed}_f{f}.json",
                              json.dumps(row))
            print(f"{name} {budget:g} seed {seed} folds {f}: coverage "
                  f"{row['coverage90']:.3f}", flush=True)
        release_compiled_programs()


def report(df: pd.DataFrame, command: str) -> str:
    """The markdown of ``adaptive_tau_folds.md``."""
    lines = ["# Adaptive tests: coverage against the folds of the misfit term", "",
             *provenance(command),
             "Random split: the source models drawn at random, every other model a target "
             "(as `adaptive.md`'s Open LLM v2 rows). Each row: the rule at the budget's "
             "fixed number of items, its misfit τ learnt with `tau_folds` folds of the "
             "source models (`AdaptivePredictor(tau=\"cv\")`); coverage of the targets' "
             "90 % intervals, RMSE and median width in percentage points of the full score, "
             "τ misfit in pp; mean over seeds, per-seed coverage in brackets. The point "
             "predictions do not depend on the folds (equal RMSE); only τ does.", "",
             "| dataset | budget | rule | targets | tau_folds | coverage90 (per seed) | "
             "RMSE (pp) | width90 (pp) | τ misfit (pp) | seconds |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    keys = ["dataset", "budget", "method", "tau_folds"]
    for (name, budget, rule, folds), g in df.sort_values([*keys, "seed"]).groupby(
            keys, sort=True):
        per_seed = ", ".join(f"{c:.2f}" for c in g["coverage90"])
        lines.append(
            f"| {name} | {budget:g} | {rule} | {int(g['n_target'].iloc[0])} | {folds} | "
            f"{g['coverage90'].mean():.3f} ({per_seed}) | {g['rmse_pp'].mean():.2f} | "
            f"{g['width90_pp'].mean():.2f} | {100 * g['tau_misfit'].mean():.2f} | "
            f"{g['seconds'].median():.0f} |")
    lines += ["", "Seconds: median per fit and prediction of all targets (the first fit of a "
              "seed also fits the bank on all source models; the fold banks are not shared "
              "between fold counts). One thread, with another job beside it on the shared "
              "2-core machine.", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["arc_challenge:0.02", "ifeval:0.05", "openllm_math:0.02"],
                        help="NAME:BUDGET pairs")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--folds", nargs="+", type=int, default=[5, 10])
    parser.add_argument("--rule", default="cat-fisher")
    parser.add_argument("--n-source", type=int, default=100)
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", default=str(RESULTS / "adaptive_tau_folds.md"),
                        help="the report; it lists the stored rows of --rule")
    args = parser.parse_args(argv)
    RAW.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        for pair in args.datasets:
            name, budget = pair.split(":")
            run(name, float(budget), args.seeds, args.folds, args.rule, args.n_source)
    rows = [json.loads(p.read_text()) for p in sorted(RAW.glob(f"*_{args.rule}_s*.json"))]
    if not rows:
        raise SystemExit(f"nothing stored for {args.rule} under {RAW}")
    text = report(pd.DataFrame(rows), command_line("adaptive_tau_folds.py", argv))
    print(write_markdown(args.out, text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
