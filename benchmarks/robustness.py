"""Robustness: every method of the item-level grid on the two GLUE matrices, against random++.

``mrpc`` and ``sst2`` are classifier matrices whose items often correlate negatively with
the total (label noise) and whose binned splits put chance-level classifiers among the
sources. Each method of ``item_level.py`` runs with its defaults through
:func:`coreval.harness.run_grid` on the binned split with 30 source models, a 10 % budget
and seeds 0-2; the report gives its RMSE on the target models, the ratio to random++'s on
the same splits (the goal: at most 1.3), Kendall τ, and the 90 % coverage and width.

Run from the repository root::

    python benchmarks/robustness.py [--n-jobs 2] [--report-only]

Cells are stored in ``benchmarks/results/raw/robustness.parquet.parts/`` as they finish
(a re-run computes only the missing ones); the report is
``benchmarks/results/robustness.md``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import pandas as pd

from _results import GLUE, RESULTS, SHARED, command_line, grid_runs, provenance, write_markdown
from item_level import METHODS

OUT = RESULTS / "raw" / "robustness.parquet"
N_SOURCE = 30
BUDGET = 0.10
SEEDS = (0, 1, 2)
GOAL = 1.3


def report(df: pd.DataFrame, command: str) -> str:
    """The markdown of ``robustness.md``."""
    df, failed = grid_runs(df)
    df = df.assign(switched=df["selection"] == "random",
                   rmse=100 * df["rmse"], width90=100 * df["width90"])  # pp
    lines = ["# Robustness on the GLUE matrices: every grid method against random++", "",
             *provenance(command),
             f"Binned split, {N_SOURCE} source models, budget {100 * BUDGET:g} %, seeds "
             f"{', '.join(map(str, sorted(df['seed'].unique())))}; every method with its "
             "defaults (`coreval.harness.run_grid`). RMSE and width in pp on the target "
             "models, mean over seeds; ratio = the method's RMSE / random++'s on the same "
             f"splits (goal ≤ {GOAL}); coverage90 of the method's default 90 % interval; random "
             "items: the seeds where `selection=\"auto\"` replaced the method's coreset by "
             "random items; seconds: median per run (select + fit + predict).", ""]
    for name, part in df.groupby("dataset"):
        per = part.groupby("method")[["rmse", "kendall", "coverage90", "width90",
                                      "seconds", "switched"]].agg(
            {"rmse": "mean", "kendall": "mean", "coverage90": "mean", "width90": "mean",
             "seconds": "median", "switched": "sum"})
        base = per.loc["random++", "rmse"]
        per = per.assign(ratio=per["rmse"] / base).sort_values("ratio")
        over = [m for m, r in per["ratio"].items() if r > GOAL]
        lines += [f"## {name}", "",
                  "| method | RMSE | ratio | τ | coverage90 | width90 | random items | "
                  "seconds |", "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {m} | {r.rmse:.2f} | {r.ratio:.2f} | {r.kendall:.3f} | "
                  f"{r.coverage90:.2f} | {r.width90:.1f} | {int(r.switched)} | "
                  f"{r.seconds:.1f} |" for m, r in per.iterrows()]
        lines += ["", f"Above {GOAL} × random++: " + (", ".join(over) if over else "none")
                  + ".", ""]
    lines += [*failed, "`random` is the sample mean of random items (no regression on the source "
              "models) and `lasso` the mRMR paper's lasso baseline as published, which "
              "predicts with the lasso that chose its items, so `selection=\"auto\"` has no "
              "random-coreset variant of it to compare with.", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from coreval.data import load_matrix
    from coreval.harness import run_grid
    from coreval.harness.store import read_results
    from coreval.jax_cache import enable_compilation_cache

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED / "data")
    parser.add_argument("--methods", nargs="+", default=list(METHODS))
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.report_only:
        enable_compilation_cache()
        matrices = {name: load_matrix(name, data_dir=args.data_dir) for name in GLUE}
        run_grid(matrices, args.methods, [BUDGET], n_source=[N_SOURCE], seeds=SEEDS,
                 split="binned", out=OUT, n_jobs=args.n_jobs)
    df = read_results(OUT)
    df = df[df["method"].isin(args.methods) & df["seed"].isin(SEEDS)]
    text = report(df, command_line("robustness.py", argv))
    print(write_markdown(RESULTS / "robustness.md", text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
