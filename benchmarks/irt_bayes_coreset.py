"""Method variants (irt-bayes, gp-irt, ... with other options) beside gp-irt on the grid's splits.

gp-irt and irt-bayes differ in their coreset (IRT anchor points for gp-irt, random items
for irt-bayes), in how they choose their IRT model (gp-IRT's validation error for gp-irt,
the out-of-fold RMSE of the misfit folds for irt-bayes) and in their predictor (gp-IRT's
λ-mix vs the posterior predictive). This script separates them: it runs ``irt-bayes``
with other options (``--options coreset=anchors``: the IRT anchor
selector on irt-bayes' own fit, checked against random items by ``selection="auto"``;
``--options coreset=anchors,model=3pl``: also gp-irt's IRT model) through
:func:`coreval.harness.run_grid`, binned split, budget 10 %, and compares each with the
``gp-irt``, ``irt-bayes`` and ``random++`` cells (``--compare``: other stored methods)
that ``item_level.py`` (the 8 LLM matrices) or ``defaults.py`` (also the GLUE matrices)
stored for the same datasets, source sizes and seeds (the same splits: a binned split
depends only on the matrix, M and the seed). ``--method`` runs another method's variants
the same way (``--method gp-irt --options model=auto``: gp-irt's IRT model chosen per run),
and ``--reference`` names the row each variant is paired with per split (gp-irt's stored
cells by default; ``--reference 'gp-irt model=3pl'`` pairs with that variant).

Metrics on the target models: RMSE, coverage90 and width90 σ⁻¹-aggregated over the 8
LLM matrices (mRMR paper, Eqs. 25-27), Kendall τ too, as in ``item_level.md``;
a variant's ``fallback`` line counts the splits where the selection check replaced its
fitted coreset with random items. On the GLUE matrices (``--datasets mrpc,sst2``), each
row's RMSE over random++'s on the same splits, as in ``defaults.md``.

Usage::

    python benchmarks/irt_bayes_coreset.py [--method irt-bayes] [--options coreset=anchors]
                                           [--n-source 30] [--seeds 0,1,2] [--datasets d1,d2]
                                           [--n-jobs 1] [--out irt_bayes_coreset.md]
                                           [--compare gp-irt,irt-bayes,random++]
                                           [--reference gp-irt] [--report-only]

Each variant's cells are stored in
``benchmarks/results/raw/irt_bayes_coreset/METHOD@KEY=VALUE[,KEY=VALUE].parquet.parts/``
and a re-run computes only the missing ones; the report covers every stored variant of
the methods given by ``--method``.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _results import GLUE, LLM, RESULTS, SHARED, provenance, write_markdown
from coreval.data import load_matrix
from coreval.harness import run_grid
from coreval.harness.summary import dataset_sigmas
from coreval.jax_cache import enable_compilation_cache
from defaults import LIMIT, robustness
from defaults import RAW as DEFAULTS_RAW
from item_level import METHOD_TABLE_FORMAT, _md, _stored_at, method_table
from item_level import RAW as GRID_RAW

RAW = RESULTS / "raw" / "irt_bayes_coreset"
BUDGET = 0.10
COMPARED = ("gp-irt", "irt-bayes", "random++")


def parse_options(text: str) -> dict[str, str]:
    """``"coreset=anchors,model=3pl"`` -> ``{"coreset": "anchors", "model": "3pl"}``."""
    pairs = [item.split("=", 1) for item in text.split(",") if item]
    if any(len(pair) != 2 for pair in pairs):
        raise SystemExit(f"--options takes KEY=VALUE pairs separated by commas, got {text!r}")
    return dict(sorted(pairs))


def label(method: str, options: dict[str, str]) -> str:
    """The variant's row label, e.g. ``irt-bayes coreset=anchors model=3pl``."""
    return f"{method} " + " ".join(f"{k}={v}" for k, v in options.items())


def store(method: str, options: dict[str, str]) -> Path:
    """The variant's grid output (its cells in ``<store>.parts``)."""
    return RAW / (f"{method}@" + ",".join(f"{k}={v}" for k, v in options.items())
                  + ".parquet")


def report(cells: pd.DataFrame, variants: list[str], sigmas: dict[str, float],
           command: str, reference: str = "gp-irt", runs: str = "") -> str:
    """The markdown of ``irt_bayes_coreset.md`` from the variants' and the grid's cells
    (``runs``: the commands that computed the variants' cells, after the command)."""
    lines = ["# Method variants beside gp-irt", "", *provenance(command, runs), "",
             f"Binned split, budget {100 * BUDGET:g} %, metrics on the target models. The "
             "`METHOD KEY=VALUE` rows are the method with those options (irt-bayes: "
             "`coreset=anchors`, the IRT anchor selector on irt-bayes' own IRT fit, checked "
             "against random items by `selection=\"auto\"`; `model=auto`, the 2PL or the "
             "3PL, with 1 or 2 dimensions, chosen in each run by the out-of-fold RMSE of "
             "irt-bayes' misfit folds; gp-irt and stack-irt-anchors: `model=auto`, the 2PL "
             "or the 3PL chosen in each run by the gp-IRT validation error, "
             "`coreval.irt.source_fit.resolve_irt_model`; `model=2pl` or `model=3pl`: that "
             "model alone); the other rows are the cells of the item-level grid (`item_level.md`) or of `defaults.md` on "
             "the same splits. On the 8 LLM matrices every metric is averaged over seeds per "
             "dataset and σ⁻¹-aggregated over datasets as in `item_level.md` (RMSE and width "
             "in pp); seconds: median select + fit + predict per run (the grid's cells share "
             "fits across budgets and methods, the variants' do not, so their seconds are not "
             "comparable). On the GLUE matrices each row's RMSE over random++'s, as in "
             "`defaults.md`.", ""]
    for m_src, part in cells[cells["dataset"].isin(GLUE)].groupby("n_source"):
        lines += [f"## M = {int(m_src)}: mrpc and sst2 (goal: ratio ≤ {LIMIT:g})", "",
                  *_md(robustness(part), {"rmse": ".2f", "coverage90": ".2f",
                                          "ratio": ".2f"}), ""]
    for m_src, part in cells[cells["dataset"].isin(LLM)].groupby("n_source"):
        seeds = ", ".join(str(int(s)) for s in sorted(part["seed"].unique()))
        table = method_table(part, sigmas, count="splits")
        present = set(part["method"])
        lines += [f"## M = {int(m_src)} (seeds {seeds})", "",
                  *_md(table, METHOD_TABLE_FORMAT), ""]
        lines += [f"Per split, each variant's RMSE minus {reference}'s on the same split "
                  "(pp; mean ± standard error over splits, and the splits where the variant is "
                  "lower); `fallback`: splits where random items replaced a fitted coreset.",
                  "", *_md(_paired_with(part, [v for v in variants
                                               if v in present and v != reference],
                                        reference),
                           {"mean": "+.2f", "se": ".2f", "lower": ".0f", "splits": ".0f",
                            "fallback": ".0f"}), ""]
        per = part.pivot_table(index="dataset", columns="method", values="rmse") * 100
        lines += ["RMSE per dataset (pp, mean over seeds):", "",
                  *_md(per.reset_index(), {c: ".2f" for c in per.columns}), ""]
    return "\n".join(lines)


def _paired_with(part: pd.DataFrame, variants: list[str], reference: str) -> pd.DataFrame:
    """Per-split RMSE differences of each variant to ``reference`` (pp)."""
    keys = ["dataset", "seed"]
    ref = part[part["method"] == reference].set_index(keys)["rmse"]
    rows = []
    for name in variants:
        sub = part[part["method"] == name].set_index(keys)
        diff = 100 * (sub["rmse"] - ref.reindex(sub.index))
        rows.append({"method": name, "mean": diff.mean(),
                     "se": diff.std(ddof=1) / np.sqrt(len(diff)),
                     "lower": int((diff < 0).sum()), "splits": len(diff),
                     "fallback": int(sub["selection"].eq("random").sum())})
    return pd.DataFrame(rows)


def paired_cells(variants: pd.DataFrame, compared: tuple[str, ...] = COMPARED
                 ) -> pd.DataFrame:
    """The variants' cells and the grid's cells of ``compared``, on the splits where
    every method stored for that M (and for the LLM or the GLUE matrices) has its cell, so
    each table compares its rows on the same splits."""
    keys = ["dataset", "n_source", "seed", "budget"]
    stores = [raw for raw in (GRID_RAW, DEFAULTS_RAW)
              if (raw.parent / (raw.name + ".parts")).is_dir()]
    if not stores:
        raise SystemExit(f"neither {GRID_RAW}.parts nor {DEFAULTS_RAW}.parts holds the "
                         "cells to compare with; run item_level.py or defaults.py first")
    grid = pd.concat([_stored_at(raw) for raw in stores], ignore_index=True)
    # a split both grids ran (an LLM matrix in defaults.py) counts once, the item-level
    # grid's cell
    grid = grid[grid["method"].isin(compared) & grid["error"].isna()].drop_duplicates(
        [*keys, "method"])
    variants = variants[variants["error"].isna()]
    both = pd.concat([variants, grid.merge(variants[keys].drop_duplicates(), on=keys)],
                     ignore_index=True)
    family = [both["n_source"], both["dataset"].isin(GLUE)]
    wanted = both.groupby(family)["method"].transform("nunique")
    both = both[both.groupby(keys)["method"].transform("nunique") == wanted].copy()
    both["seconds"] = both[["seconds_select", "seconds_fit", "seconds_predict"]].sum(axis=1)
    return both


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--method", default="irt-bayes",
                    help="the method whose variants are run and reported, or several "
                         "separated by commas (reported only)")
    ap.add_argument("--compare", default=",".join(COMPARED),
                    help="the stored methods (item_level.py's or defaults.py's cells) shown "
                         "beside the variants")
    ap.add_argument("--reference", default="gp-irt",
                    help="the row each variant is paired with per split: a stored method or "
                         "a variant's label, e.g. 'gp-irt model=3pl'")
    ap.add_argument("--options", action="append", default=[],
                    help="options of one variant of --method, KEY=VALUE[,KEY=VALUE]")
    ap.add_argument("--n-source", default="30")
    ap.add_argument("--seeds", default="0,1,2")
    ap.add_argument("--datasets", default=",".join(LLM),
                    help="the 8 LLM matrices (default) and/or mrpc,sst2")
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--out", default="irt_bayes_coreset.md",
                    help="results file under benchmarks/results/")
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("COREVAL_DATA", SHARED / "data")))
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    matrices = {name: load_matrix(name, data_dir=args.data_dir)
                for name in args.datasets.split(",")}
    n_source = [int(v) for v in args.n_source.split(",")]
    seeds = [int(v) for v in args.seeds.split(",")]
    methods = args.method.split(",")
    if not args.report_only:
        if args.options and len(methods) != 1:
            raise SystemExit("--options runs the variants of one --method")
        enable_compilation_cache()
        for options in map(parse_options, args.options):
            t0 = time.perf_counter()
            run_grid(matrices, methods, [BUDGET], n_source=n_source, seeds=seeds,
                     split="binned", out=store(methods[0], options), n_jobs=args.n_jobs,
                     method_options={methods[0]: options})
            print(f"{label(methods[0], options)}: {time.perf_counter() - t0:.0f} s")
    stored, runs = [], {}
    for method in methods:
        for parts in sorted(RAW.glob(f"{method}@*.parquet.parts")):
            text = parts.name.removesuffix(".parquet.parts").split("@", 1)[1]
            options = parse_options(text)
            stored.append(_stored_at(parts.with_suffix("")).assign(
                method=label(method, options)))
            runs.setdefault(method, []).append(text)
    if not stored:
        raise SystemExit(f"no variant of {args.method} is stored under {RAW}; run with "
                         "--options first")
    cells = pd.concat(stored, ignore_index=True)
    cells = cells[cells["n_source"].isin(n_source) & cells["seed"].isin(seeds)
                  & cells["dataset"].isin(matrices)]
    common = (f"--n-source {args.n_source} --seeds {args.seeds} --datasets {args.datasets} "
              f"--n-jobs {args.n_jobs}")
    command = " ".join([
        f"python benchmarks/irt_bayes_coreset.py --method {args.method}",
        *(f"--options {o}" for o in args.options), common, f"--out {args.out}",
        *([f"--compare {args.compare}"] if args.compare != ",".join(COMPARED) else []),
        *([f"--reference '{args.reference}'"] if args.reference != "gp-irt" else [])])
    run_lines = ", ".join(
        f"`python benchmarks/irt_bayes_coreset.py --method {method} "
        + " ".join(f"--options {o}" for o in opts) + f" {common}`"
        for method, opts in runs.items())
    compared = tuple(args.compare.split(","))
    text = report(paired_cells(cells, compared), sorted(cells["method"].unique()),
                  dataset_sigmas(matrices), command, args.reference,
                  f" (the report); the variants' cells: {run_lines}")
    print(write_markdown(RESULTS / args.out, text))


if __name__ == "__main__":
    main()
