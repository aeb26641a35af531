"""Constant against score-scaled conformal intervals, on the same fits.

A ``calibration="cv"`` interval is ``ŷ ± q``, one half-width for every target model.
Errors in predicting a mean accuracy shrink towards the ends of the score range, so
that interval is too wide for a model near the floor or the ceiling and too narrow
near 0.5; where the binned split's sources (spread evenly over the range) differ from
the targets (crowded where most models are), the constant interval's coverage drifts
from nominal. ``interval_scale="bernoulli"`` scales the conformal scores by
``sqrt(ŷ(1 − ŷ))`` (``coreval.pipeline``, "Interval scale"); ``"quadratic"`` by the
square root of a quadratic variance function of ``ŷ`` fitted to the out-of-fold squared
residuals, which holds both the constant and the Bernoulli shapes and also errors that
grow towards the ends of the sources' range; ``"auto"`` chooses between the constant and
the Bernoulli scale per run from the source models' leave-one-out interval scores.

Each split's method is fitted once (``interval_scale="auto"``); the four intervals are
made from the same out-of-fold residuals around the same predictions, so the columns
differ only by the scale. Methods whose default interval is not ``"cv"`` are skipped.

Usage::

    python benchmarks/interval_scale.py --methods mrmr++ lasso metabench \\
        --n-source 30 --budget 0.1 --seeds 0 1 2 --splits binned random

Writes ``benchmarks/results/interval_scale.md`` (``--out``); one part per (dataset,
method, split, seed) with every target's prediction is stored under
``benchmarks/results/raw/interval_scale/``, and a re-run resumes.
"""

from __future__ import annotations

import argparse
import dataclasses
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
from coreval.base.conformal import interval_scores

DATASETS = ("arc_challenge", "commonsense", "gsm", "ifeval", "math", "med_qa", "mmlu",
            "openllm_math")
SCALES = ("constant", "bernoulli", "quadratic", "auto")


def split_rows(dataset: str, method: str, kind: str, seed: int, n_source: int,
               budget: float) -> list[dict]:
    """One row per target model: truth, prediction and the four intervals."""
    from coreval.base import resolve_budget
    from coreval.data.io import load_matrix

    matrix = load_matrix(dataset, data_dir=SHARED / "data")
    k = resolve_budget(budget, matrix.n_items)
    _, target, fitted, pred, seconds = predict_split(matrix, kind, seed, n_source, method, k,
                                                     interval_scale="auto")
    base = {"dataset": dataset, "method": method, "split": kind, "seed": seed,
            "calibration": fitted.calibration, "auto": fitted.interval_scale}
    print(f"{dataset} {method} {kind} seed {seed}: {seconds:.0f} s, {fitted.calibration}, "
          f"auto → {fitted.interval_scale}", flush=True)
    if fitted.calibration != "cv":
        return [base]
    x = target.values[:, fitted.coreset.indices]
    bounds = {}
    for scale in ("constant", "bernoulli", "quadratic"):
        p = dataclasses.replace(fitted, interval_scale=scale).predict_array(x)
        bounds[scale] = (p.lower, p.upper)
    bounds["auto"] = bounds[fitted.interval_scale]
    rows = []
    for i, (t, m) in enumerate(zip(target.summary_scores(), pred.mean, strict=True)):
        row = {**base, "truth": float(t), "pred": float(m)}
        for scale, (lo, hi) in bounds.items():
            row[f"{scale}_lower"], row[f"{scale}_upper"] = float(lo[i]), float(hi[i])
        rows.append(row)
    return rows


def summarise(table: pd.DataFrame) -> pd.DataFrame:
    """Per (split, method, dataset): coverage, width, interval score and tercile coverage."""
    out = []
    for (kind, method, dataset), part in table.groupby(["split", "method", "dataset"]):
        for scale in SCALES:
            lo, hi = part[f"{scale}_lower"], part[f"{scale}_upper"]
            covered = (part["truth"] >= lo) & (part["truth"] <= hi)
            width = hi - lo
            score = interval_scores(part["truth"], lo, hi, alpha=0.1)
            # terciles of the true score within each seed's targets
            third = part.groupby("seed")["truth"].transform(
                lambda s: pd.qcut(s.rank(method="first"), 3, labels=False))
            by_third = covered.groupby(third).mean()
            out.append({"split": kind, "method": method, "dataset": dataset, "scale": scale,
                        "coverage": covered.mean(), "width": 100 * width.mean(),
                        "interval_score": 100 * score.mean(),
                        "cov_low": by_third.get(0, np.nan), "cov_mid": by_third.get(1, np.nan),
                        "cov_high": by_third.get(2, np.nan)})
    return pd.DataFrame(out)


def sigma_weights(datasets) -> dict[str, float]:
    """σ⁻¹ weights of the datasets (as in ``item_level.md``), normalised to sum to one."""
    from coreval.data.io import load_matrix
    from coreval.harness.metrics import score_sigma

    inv = {d: 1.0 / score_sigma(load_matrix(d, data_dir=SHARED / "data").summary_scores())
           for d in datasets}
    total = sum(inv.values())
    return {d: v / total for d, v in inv.items()}


def _seeds_by_method(table: pd.DataFrame) -> str:
    """``0, 1, 2`` when every method has the same stored seeds, else one list per method."""
    seeds = table.groupby("method")["seed"].apply(
        lambda s: ", ".join(str(v) for v in sorted(s.unique())))
    if seeds.nunique() == 1:
        return seeds.iloc[0]
    return "; ".join(f"{seed_list} ({method})" for method, seed_list in seeds.items())


def to_markdown(table: pd.DataFrame, command: str, args) -> list[str]:
    cv = table[table["calibration"] == "cv"]
    per = summarise(cv)
    weights = sigma_weights(sorted(per["dataset"].unique()))
    per["w"] = per["dataset"].map(weights)
    metrics = ["coverage", "width", "interval_score", "cov_low", "cov_mid", "cov_high"]
    agg = per.groupby(["split", "method", "scale"]).apply(
        lambda g: pd.Series({m: np.average(g[m], weights=g["w"]) for m in metrics}),
        include_groups=False).reset_index()
    choice = (table.drop_duplicates(["dataset", "method", "split", "seed"])
              .groupby(["split", "method"])["auto"].apply(lambda s: (s == "bernoulli").mean()))
    skipped = table[table["calibration"] != "cv"].drop_duplicates(
        ["dataset", "method", "split", "seed"])
    lines = provenance(command)
    lines += [
        f"M = {args.n_source} source models, budget {args.budget:g} of the items, seeds "
        f"{_seeds_by_method(table)}; every method with its "
        "defaults (`calibration=\"auto\"`), fitted once per split. Metrics are on the target "
        "models, per dataset pooled over seeds, then combined with weights ∝ 1/σ_d as in "
        "`item_level.md` over the datasets where the method has a `cv` interval in at "
        "least one split (`nan` below: none, as `selection=\"auto\"` chose random items "
        "with their own interval in every split). width and interval score (Gneiting & Raftery 2007, "
        "lower is better) in pp; `low` / `mid` / `high`: coverage90 of the targets in the "
        "lowest, middle and highest third of each split's true scores. `auto` share: the "
        "share of splits where `interval_scale=\"auto\"` chose the Bernoulli scale from the "
        "source models."
        + (f" {len(skipped)} split(s) whose method's default interval is not `cv` are "
           "skipped." if len(skipped) else ""), ""]
    for kind, part in agg.groupby("split", sort=False):
        lines += [f"## {kind} split", "",
                  "| method | scale | coverage90 | width90 | interval score | low | mid | high "
                  "| `auto` share |", "|---|---|---|---|---|---|---|---|---|"]
        for r in part.sort_values(["method", "scale"]).itertuples():
            share = f"{choice.loc[(kind, r.method)]:.2f}" if r.scale == "auto" else ""
            lines.append(f"| {r.method} | {r.scale} | {r.coverage:.3f} | {r.width:.2f} | "
                         f"{r.interval_score:.2f} | {r.cov_low:.2f} | {r.cov_mid:.2f} | "
                         f"{r.cov_high:.2f} | {share} |")
        lines.append("")
    lines += ["## Per dataset (coverage90 / width90 pp)", ""]
    wide = per.assign(cell=per["coverage"].map("{:.2f}".format) + " / "
                      + per["width"].map("{:.1f}".format))
    wide = wide.pivot_table(index=["split", "method", "scale"], columns="dataset",
                            values="cell", aggfunc="first").reset_index()
    lines += ["| " + " | ".join(wide.columns) + " |", "|" + "---|" * len(wide.columns)]
    lines += ["| " + " | ".join(str(v) for v in r) + " |" for r in wide.itertuples(index=False)]
    lines.append("")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(DATASETS))
    parser.add_argument("--methods", nargs="+", default=["mrmr++", "lasso", "metabench"])
    parser.add_argument("--splits", nargs="+", default=["binned", "random"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--n-source", type=int, default=30)
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--out", default=str(RESULTS / "interval_scale.md"),
                        help="markdown file to write")
    parser.add_argument("--report-only", action="store_true",
                        help="write the report from the stored parts only")
    args = parser.parse_args(argv)
    command = command_line("interval_scale.py", argv)
    raw = RESULTS / "raw" / "interval_scale"
    raw.mkdir(parents=True, exist_ok=True)
    parts = []
    for dataset in args.datasets:
        for method in args.methods:
            for kind in args.splits:
                for seed in args.seeds:
                    part = raw / f"{dataset}_{method}_{kind}_{seed}_M{args.n_source}_b{args.budget:g}.json"
                    if not part.exists() and not args.report_only:
                        rows = [{**r, "command": command} for r in split_rows(
                            dataset, method, kind, seed, args.n_source, args.budget)]
                        write_text_atomic(part, json.dumps(rows))
                    if part.exists():
                        parts.append(part)
    if not parts:
        raise SystemExit("no stored parts for these options; run without --report-only")
    table = pd.DataFrame([r for p in parts for r in json.loads(p.read_text())])
    commands = "`, `".join(dict.fromkeys(table.pop("command").dropna()))
    out = write_markdown(args.out, "\n".join(
        ["# Conformal intervals: constant against score-scaled half-widths", "",
         *to_markdown(table, commands, args)]) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
