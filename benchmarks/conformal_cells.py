"""Held-out-cell coverage of the Bayesian low-rank completer on matrices other than BenchPress 2026.

``complete_bayes(calibration="conformal")`` scales the posterior predictive half-widths by a
normalised split-conformal factor (Lei et al. 2018, section 5.2) learnt on an inner fit
that hides ``inner_fraction`` of each model's training cells
(:func:`coreval.lowrank.complete.inner_split`). The inner fit sees fewer cells than the
final fit, so its calibration residuals can be larger than the final fit's errors and the
factor can over-cover; a smaller inner fraction narrows that gap but calibrates on fewer
cells, so the factor varies more from fold to fold. This script measures both effects on
the benchmark-level matrices with missing cells that are *not* the BenchPress 2026 matrix
(``benchpress``: the older BenchPress release, ``merged``, ``mteb``), with random 3-fold
splits of the observed cells (each seed permutes them anew).

Rows: the posterior predictive interval as it is, the split-conformal interval with inner
fractions 1/3 and 1/10, and cross-conformal over 10 inner folds (``complete_bayes``'s
default: every training cell calibrates once, each inner fit sees nine tenths of them).
Rank 2, Student-t (df 4) likelihood, NUTS 300 + 300, 0-1 columns read as fractions.

Usage::

    python benchmarks/conformal_cells.py [--datasets benchpress merged mteb] [--seeds 8 4 2]
        [--variants LABEL ...] [--cache benchmarks/results/raw]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from _results import RESULTS, SHARED, provenance, write_markdown
from coreval.data import load_matrix
from coreval.harness.cells import CellFold, evaluate_cells
from coreval.lowrank import complete_bayes

#: Interval variants: label -> complete_bayes options.
VARIANTS = {
    "posterior": {"calibration": "posterior"},
    "conformal, inner 1/3": {"calibration": "conformal", "inner_fraction": 1 / 3},
    "conformal, inner 1/10": {"calibration": "conformal", "inner_fraction": 1 / 10},
    "cross-conformal, 10 inner folds": {"calibration": "conformal", "n_inner_folds": 10},
}


def random_cell_folds(values: np.ndarray, n_seeds: int, n_folds: int = 3) -> list[CellFold]:
    """``n_folds`` folds of the observed cells per seed, each seed a new permutation."""
    rows, cols = np.nonzero(~np.isnan(values))
    folds = []
    for seed in range(n_seeds):
        fold_of = np.random.default_rng(100 + seed).permutation(len(rows)) % n_folds
        folds += [CellFold(seed, f, rows[fold_of == f], cols[fold_of == f])
                  for f in range(n_folds)]
    return folds


def run(values: np.ndarray, folds: list[CellFold], label: str) -> dict:
    """Summary of one variant over the folds, with the per-fold coverages."""
    options = VARIANTS[label]
    factors: list[float] = []

    def completer(train: np.ndarray):
        comp = complete_bayes(train, rank=2, df=4.0, fractions=True,
                              seed=0, **options)
        if comp.details and "conformal_factor" in comp.details:
            factors.append(float(comp.details["conformal_factor"]))
        return comp

    per_fold, summary, _ = evaluate_cells(values, folds, completer)
    return {"coverage_mean": float(per_fold["coverage90"].mean()),
            "coverage_sd": float(per_fold["coverage90"].std(ddof=1)),
            "coverage_pooled": float(summary["coverage90_pooled"]),
            "width_pooled": float(summary["width90_pooled"]),
            "medae": float(summary["medae"]),
            "factor_mean": float(np.mean(factors)) if factors else None,
            "factor_sd": float(np.std(factors, ddof=1)) if len(factors) > 1 else None,
            "seconds": float(summary["seconds"]), "n_folds": len(folds)}


def fmt(x, digits: int = 3) -> str:
    return "—" if x is None else f"{x:.{digits}f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default=str(SHARED / "data"))
    parser.add_argument("--datasets", nargs="+", default=["benchpress", "merged", "mteb"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[8, 4, 2],
                        help="seeds (3 folds each) per dataset, in --datasets order")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS),
                        choices=list(VARIANTS), help="interval variants (rows) to run")
    parser.add_argument("--cache", default=None, help="folder of per-row JSON results")
    parser.add_argument("--out", default=str(RESULTS / "conformal_cells.md"))
    args = parser.parse_args()
    if len(args.seeds) != len(args.datasets):
        parser.error("give one --seeds value per dataset")
    cache = Path(args.cache) if args.cache else None
    lines = ["# Conformal calibration of the Bayesian low-rank completer on other matrices", "",
             *provenance("python benchmarks/conformal_cells.py " + " ".join(sys.argv[1:])),
             "Random 3-fold splits of each matrix's observed cells (a new permutation per "
             "seed); `complete_bayes(rank=2, df=4, fractions=True)` completes the training "
             "cells. Coverage: share of held-out cells inside the 90 % interval, mean (and "
             "SD) over folds and pooled over all held-out cells; width: median width of the "
             "pooled held-out cells, in the matrix's units; factor: the conformal factor, "
             "mean (SD) over folds. The inner fraction is the share of each model's training "
             "cells hidden from the inner fit that calibrates the factor; cross-conformal "
             "partitions each model's training cells into 10 groups, fits once without each "
             "and pools the ten groups' scores (`n_inner_folds=10`). Seconds per fold: "
             "single-threaded, with other jobs sharing the machine's two cores.", "",
             "| dataset | folds | interval | coverage90 (mean ± SD over folds) | pooled "
             "coverage90 | width90 | factor | MedAE | s / fold |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, n_seeds in zip(args.datasets, args.seeds, strict=True):
        values = np.asarray(load_matrix(name, data_dir=args.data_dir).values, dtype=float)
        folds = random_cell_folds(values, n_seeds)
        for label in args.variants:
            slug = label.replace(", ", "_").replace(" ", "-").replace("/", "of")
            path = None if cache is None else cache / f"conformal_cells_{name}_{slug}_{n_seeds}.json"
            if path is not None and path.exists():
                s = json.loads(path.read_text())
            else:
                s = run(values, folds, label)
                print(f"{name} {label}: {s}", file=sys.stderr, flush=True)
                if path is not None:
                    path.parent.mkdir(parents=True, exist_ok=True)
                    write_markdown(path, json.dumps(s))
            factor = ("—" if s["factor_mean"] is None
                      else f"{s['factor_mean']:.3f} ({fmt(s['factor_sd'])})")
            lines.append(f"| {name} | {s['n_folds']} | {label} | {s['coverage_mean']:.3f} ± "
                         f"{s['coverage_sd']:.3f} | {s['coverage_pooled']:.3f} | "
                         f"{s['width_pooled']:.4g} | {factor} | {s['medae']:.4g} | "
                         f"{s['seconds']:.1f} |")
    write_markdown(args.out, "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
