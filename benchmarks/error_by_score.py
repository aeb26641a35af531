"""Prediction error by the target's true score: where in the score range a method errs.

A σ⁻¹-aggregated RMSE (``item_level.md``) weighs each matrix by the inverse spread of its
scores, so a matrix whose models crowd at one end of the range (openllm_math: half of
the 447 models score below 2 %, a quarter below 0.5 %) weighs most, and the error on
that crowd decides it. This script breaks each method's target errors down by the
target's true full score, with the share of source and target models in each bin, on
the binned split (sources spread evenly over the score range, Bowyer et al.) and on a
random split of the same size (sources drawn like the targets): a model-based
predictor learns the source population, and where the binned sources under-represent
the targets' crowd its predictions there carry a bias that the coreset's own mean does
not have. bias = mean(predicted − true); coverage90 = share inside the 90 % interval.

Usage::

    python benchmarks/error_by_score.py --datasets openllm_math --methods gp-irt irt-bayes random++ \\
        --n-source 30 --budget 0.1 --seeds 0 1 2 --splits binned random

Writes ``benchmarks/results/error_by_score.md`` (``--out``); per-(dataset, method) parts
with every target's prediction are stored under ``benchmarks/results/raw/error_by_score/``
and a re-run resumes.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np
import pandas as pd

from _results import (
    RESULTS,
    SHARED,
    command_line,
    predict_split,
    provenance,
    write_markdown,
)
from coreval._atomic import write_text_atomic

#: Bin edges of the true full score (pp); the last bin is open.
EDGES = (0.0, 0.5, 2.0, 5.0, 10.0, 20.0, 40.0, 60.0, 80.0)


def target_rows(dataset: str, method: str, splits: list[str], seeds: list[int],
                n_source: int, budget: float) -> list[dict]:
    """One row per (split, seed, model): true and predicted score, interval, role."""
    from coreval.base import resolve_budget
    from coreval.data.io import load_matrix

    matrix = load_matrix(dataset, data_dir=SHARED / "data")
    k = resolve_budget(budget, matrix.n_items)
    rows = []
    for kind in splits:
        for seed in seeds:
            source, target, _, pred, seconds = predict_split(matrix, kind, seed, n_source,
                                                             method, k)
            base = {"dataset": dataset, "method": method, "split": kind, "seed": seed}
            rows += [{**base, "role": "source", "truth": float(t)}
                     for t in source.summary_scores()]
            rows += [{**base, "role": "target", "truth": float(t), "pred": float(m),
                      "lower": float(lo), "upper": float(hi), "seconds": seconds}
                     for t, m, lo, hi in zip(target.summary_scores(), pred.mean, pred.lower,
                                             pred.upper, strict=True)]
            print(f"{dataset} {method} {kind} seed {seed}: {seconds:.0f} s", flush=True)
    return rows


def score_bins(truth: pd.Series) -> pd.Series:
    """The bin label of each true score (fractions), e.g. ``"0.5-2"`` (pp)."""
    edges = [*EDGES, np.inf]
    labels = [f"{lo:g}-{hi:g}" if np.isfinite(hi) else f"≥{lo:g}"
              for lo, hi in itertools.pairwise(edges)]
    return pd.cut(truth * 100, edges, labels=labels, right=False, include_lowest=True)


def to_markdown(table: pd.DataFrame, command: str, args) -> str:
    table = table.assign(bin=score_bins(table["truth"]))
    targets = table[table["role"] == "target"].copy()
    targets["err"] = (targets["pred"] - targets["truth"]) * 100
    targets["covered"] = (targets["truth"] >= targets["lower"]) & (
        targets["truth"] <= targets["upper"])
    lines = provenance(command)
    lines += [
        f"M = {args.n_source} source models, budget {args.budget:g} of the items, seeds "
        f"{', '.join(str(s) for s in sorted(table['seed'].unique()))}; every method with its "
        "defaults. Bins of the target's true full score (pp); `sources` and `targets`: "
        "the share of each split's source and target models in the bin (mean over seeds); "
        "per method, bias (mean predicted − true, pp), RMSE (pp) and coverage90 of the "
        "targets in the bin, pooled over seeds. `all`: every target.",
        ""]
    methods = list(dict.fromkeys(targets["method"]))
    for (dataset, kind), part in targets.groupby(["dataset", "split"], sort=False):
        roles = table[(table["dataset"] == dataset) & (table["split"] == kind)
                      & (table["method"] == methods[0])]
        share = roles.groupby(["role", "bin"], observed=False).size().unstack("role").fillna(0)
        share = share / share.sum()
        lines += [f"## {dataset}, {kind} split", "",
                  "| bin (pp) | sources | targets | " + " | ".join(
                      f"{m} bias | {m} RMSE | {m} cov." for m in methods) + " |",
                  "|---|---|---|" + "---|---|---|" * len(methods)]
        groups = [(str(b), part[part["bin"] == b]) for b in share.index] + [("all", part)]
        for label, rows in groups:
            if rows.empty:
                continue
            src = "" if label == "all" else f"{share.loc[label, 'source']:.2f}"
            tgt = "" if label == "all" else f"{share.loc[label, 'target']:.2f}"
            cells = []
            for m in methods:
                e = rows[rows["method"] == m]
                cells += [f"{e['err'].mean():+.2f}", f"{np.sqrt(np.mean(e['err'] ** 2)):.2f}",
                          f"{e['covered'].mean():.2f}"]
            lines.append(f"| {label} | {src} | {tgt} | " + " | ".join(cells) + " |")
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["openllm_math"])
    parser.add_argument("--methods", nargs="+", default=["gp-irt", "irt-bayes", "random++"])
    parser.add_argument("--splits", nargs="+", default=["binned", "random"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--n-source", type=int, default=30)
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--out", default=str(RESULTS / "error_by_score.md"),
                        help="markdown file to write")
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from the stored parts only")
    args = parser.parse_args(argv)
    command = command_line("error_by_score.py", argv)
    raw = RESULTS / "raw" / "error_by_score"
    raw.mkdir(parents=True, exist_ok=True)
    parts = []
    for dataset in args.datasets:
        for method in args.methods:
            part = raw / (f"{dataset}_{method}_{'-'.join(args.splits)}_"
                          f"{'-'.join(map(str, args.seeds))}_M{args.n_source}_b{args.budget:g}.json")
            if not part.exists() and not args.report_only:
                rows = [{**r, "command": command} for r in target_rows(
                    dataset, method, args.splits, args.seeds, args.n_source, args.budget)]
                write_text_atomic(part, json.dumps(rows))
            if part.exists():
                parts.append(part)
    if not parts:
        raise SystemExit("no stored parts for these options; run without --report-only")
    table = pd.DataFrame([r for p in parts for r in json.loads(p.read_text())])
    commands = "`, `".join(dict.fromkeys(table.pop("command").dropna()))
    out = write_markdown(args.out, "# Prediction error by the target's true score\n\n"
                         + to_markdown(table, commands, args))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
