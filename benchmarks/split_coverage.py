"""Interval coverage on the binned split vs a random split of the same size.

The binned split (Bowyer et al.'s ``binned_interpolation``) draws the source models
evenly from ten accuracy bins, so the sources over-represent the sparse extremes
of the score range and the targets are mostly mid-range models: the two are not
exchangeable, and every interval calibrated on the sources, even one with a
distribution-free guarantee for exchangeable models (split conformal for
``random``, jackknife+ for ``random++``), may cover the targets at another rate
than its nominal level. This script measures each method's 90 % coverage under
both splits, with the same number of sources, budget and seeds, so that a
coverage away from 0.9 in the item-level grid can be told apart from a
miscalibrated method. A method may carry :func:`coreval.pipeline.fit_method`
options after ``@``: ``mrmr++@folds=5,repeats=3`` is mrmr++ whose
``calibration="cv"`` interval pools three 5-fold cross-validations.

Usage::

    python benchmarks/split_coverage.py --n-source 30 --budget 0.1 --seeds 0 1 2 3 4
    python benchmarks/split_coverage.py --methods mrmr++@folds=10,repeats=2 --splits random

Writes ``benchmarks/results/split_coverage.md``; per-(dataset, method) parts are
stored under ``benchmarks/results/raw/split_coverage/`` and a re-run resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import sys

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np
import pandas as pd

from _results import RESULTS, SHARED, predict_split, provenance, write_markdown

DATASETS = ["arc_challenge", "commonsense", "gsm", "ifeval", "math", "med_qa", "mmlu",
            "openllm_math"]


def method_and_options(spec: str) -> tuple[str, dict[str, int]]:
    """``"mrmr++@folds=5,repeats=3"`` → ``("mrmr++", {"folds": 5, "repeats": 3})``."""
    name, _, opts = spec.partition("@")
    return name, {k: int(v) for k, v in (o.split("=") for o in opts.split(",") if o)}


def coverage_runs(dataset: str, spec: str, splits: list[str], seeds: list[int],
                  n_source: int, budget: float) -> list[dict]:
    """One row per (split, seed): the method's 90 % coverage of the targets."""
    from coreval.base import resolve_budget
    from coreval.data.io import load_matrix

    matrix = load_matrix(dataset, data_dir=SHARED / "data")
    k = resolve_budget(budget, matrix.n_items)
    name, options = method_and_options(spec)
    rows = []
    for kind in splits:
        for seed in seeds:
            _, target, _, pred, seconds = predict_split(matrix, kind, seed, n_source, name, k,
                                                        **options)
            truth = target.summary_scores()
            rows.append({"dataset": dataset, "method": spec, "split": kind, "seed": seed,
                         "interval": pred.interval, "n_targets": len(truth),
                         "coverage90": float(np.mean((truth >= pred.lower)
                                                     & (truth <= pred.upper))),
                         "width90": float(np.mean(pred.upper - pred.lower)),
                         "rmse": float(np.sqrt(np.mean((truth - pred.mean) ** 2))),
                         "seconds": seconds})
    return rows


def to_markdown(table: pd.DataFrame, command: str, args) -> str:
    mean = table.groupby(["method", "split"])["coverage90"].mean().unstack("split")
    spread = table.groupby(["method", "split"])["coverage90"].std().unstack("split")
    width = table.groupby(["method", "split"])["width90"].mean().unstack("split") * 100
    lines = provenance(command)
    lines += [
        f"{len(table['dataset'].unique())} item-level LLM matrices, M = {args.n_source} "
        f"source models, budget {args.budget:g} of the items, seeds "
        f"{', '.join(str(int(x)) for x in sorted(table['seed'].unique()))}; "
        "the binned split and a random split with the same number of sources. Every method "
        "runs with its defaults (`calibration=\"auto\"`) but for the `fit_method` options after "
        "`@` (the default is `folds=10, repeats=1`). coverage90: share of the targets "
        "inside the 90 % interval, mean over datasets and seeds (in brackets the SD over the "
        "dataset × seed runs); width in pp.",
        "",
        "| method | interval | coverage90 binned | coverage90 random | width90 binned | "
        "width90 random | runs |",
        "|---|---|---|---|---|---|---|",
    ]
    for method in mean.index:
        interval = table.loc[table["method"] == method, "interval"].iloc[0]
        runs = int((table["method"] == method).sum())
        ran = [s in mean.columns and pd.notna(mean.loc[method, s]) for s in ("binned", "random")]
        cells = [f"{mean.loc[method, s]:.3f} ({spread.loc[method, s]:.3f})" if ok else "—"
                 for s, ok in zip(("binned", "random"), ran, strict=True)]
        widths = [f"{width.loc[method, s]:.1f}" if ok else "—"
                  for s, ok in zip(("binned", "random"), ran, strict=True)]
        lines.append(f"| {method} | {interval} | {' | '.join(cells)} | {' | '.join(widths)} "
                     f"| {runs} |")
    per = table.pivot_table(index=["dataset"], columns=["method", "split"],
                            values="coverage90").round(2)
    lines += ["", "Coverage per dataset (mean over seeds):", "",
              "| dataset | " + " | ".join(f"{m} {s}" for m, s in per.columns) + " |",
              "|---|" + "---|" * len(per.columns)]
    lines += [f"| {d} | " + " | ".join("—" if pd.isna(v) else f"{v:.2f}" for v in per.loc[d])
              + " |"
              for d in per.index]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=DATASETS)
    parser.add_argument("--methods", nargs="+",
                        default=["random", "random++", "anchor-points++", "mrmr++",
                                 "mrmr++@folds=5"])
    parser.add_argument("--splits", nargs="+", default=["binned", "random"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2, 3, 4])
    parser.add_argument("--n-source", type=int, default=30)
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--out", default=str(RESULTS / "split_coverage.md"),
                        help="markdown file to write")
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from the stored parts of --methods")
    args = parser.parse_args(argv)
    command = "python benchmarks/split_coverage.py " + shlex.join(sys.argv[1:] if argv is None
                                                                  else argv)
    raw = RESULTS / "raw" / "split_coverage"
    raw.mkdir(parents=True, exist_ok=True)
    parts = []
    for dataset in args.datasets:
        for spec in args.methods:
            part = raw / (f"{dataset}_{spec.replace('@', '_').replace('=', '')}_"
                          f"{'-'.join(args.splits)}_M{args.n_source}_b{args.budget:g}.json")
            if args.report_only:  # every stored part of this method, whatever its splits
                parts += sorted(raw.glob(part.name.replace(f"_{'-'.join(args.splits)}_", "_*_")))
                continue
            if not part.exists():
                rows = [{**r, "command": command} for r in coverage_runs(
                    dataset, spec, args.splits, args.seeds, args.n_source, args.budget)]
                tmp = part.with_suffix(".tmp")
                tmp.write_text(json.dumps(rows))
                tmp.replace(part)
                print(f"{dataset} {spec}: coverage "
                      f"{np.mean([r['coverage90'] for r in rows]):.3f}", flush=True)
            parts.append(part)
    table = pd.DataFrame([r for p in parts for r in json.loads(p.read_text())])
    # the commands that stored the parts shown (a part stores the command that made it)
    commands = "`, `".join(dict.fromkeys(table.pop("command").dropna())) if "command" in table \
        else command
    out = write_markdown(args.out,
                         "# Interval coverage: binned vs random split\n\n"
                         + to_markdown(table, commands, args))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
