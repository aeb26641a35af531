"""BenchPress 2026 whole-benchmark completion: coreval's low-rank engine on the authors' folds.

Held-out-cell protocol of Zeng & Papailiopoulos (2026), "You Don't Need to Run Every Eval":
30 folds (10 seeds x 3 folds) of held-out observed cells of the 84 x 133 matrix
(``../shared/data/benchpress2026_info/folds_s10_f3_bs42_ms1.json``); the reference numbers
measured with the authors' code are in ``../shared/anchors/benchpress/README.md``.

Methods (every hyperparameter choice is made inside the fold, from training cells only):

* ``als-logit``: logit Bias-ALS, rank 2, lambda 0.1 (the authors' default, reproduced);
* ``als-identity``: the same without the logit;
* ``als-nested``: rank in {1, 2, 3, 4} and lambda in {0.01, 0.1, 1} chosen on a third of
  each model's training cells held out (:func:`coreval.lowrank.select_als`);
* ``bayes``: the Bayesian low-rank model (rank 2, per-benchmark noise, Student-t likelihood
  with 4 degrees of freedom; NUTS, 300 warm-up + 300 draws, started at a Bias-ALS fit),
  posterior predictive intervals as they are;
* ``bayes-conformal``: the same with the normalised conformal factor fitted on inner held-out
  training cells.

Run from the repository root::

    python benchmarks/benchpress.py --out benchmarks/results/benchpress.md
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

from _results import provenance, write_markdown
from coreval.data import load_matrix
from coreval.harness.cells import evaluate_cells, read_cell_folds
from coreval.lowrank import complete_bayes, complete_bias_als, select_als

FOLD_FILE = "benchpress2026_info/folds_s10_f3_bs42_ms1.json"

#: The authors' numbers on these folds (anchors README): MedAE (median over folds), fold range,
#: pooled MedAE, coverage / median width of their conformal interval, margin-5 ranking, s / 30 folds.
AUTHORS = {"medae": 4.629, "medae_mean": 4.576, "range": "4.19–5.06", "pooled": 4.598,
           "coverage": 0.8994, "width": 27.17, "rank_acc": 0.9205, "seconds_30": 99.0}


def nested_als(train: np.ndarray):
    rank, lam, _ = select_als(train, seed=0)
    return complete_bias_als(train, rank=rank, lam=lam)


METHODS = {
    "als-logit": lambda tr: complete_bias_als(tr, rank=2, lam=0.1),
    "als-identity": lambda tr: complete_bias_als(tr, transform="identity", rank=2, lam=0.1),
    "als-nested": nested_als,
    "bayes": lambda tr: complete_bayes(tr, rank=2, df=4.0),
    "bayes-conformal": lambda tr: complete_bayes(tr, rank=2, df=4.0, calibration="conformal"),
}


def fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def run_method(name: str, values: np.ndarray, folds, cache: Path | None) -> dict:
    """Summary of one method over the folds, read from ``cache`` when it was run before."""
    path = None if cache is None else cache / f"benchpress_{name}_{len(folds)}.json"
    if path is not None and path.exists():
        return json.loads(path.read_text())
    start = time.perf_counter()
    _, summary, _ = evaluate_cells(values, folds, METHODS[name])
    print(f"{name}: {summary} ({time.perf_counter() - start:.0f} s)", file=sys.stderr,
          flush=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary))
    return summary


def completion_section(values: np.ndarray, folds, methods: list[str],
                       cache: Path | None) -> list[str]:
    lines = ["## Held-out-cell completion (30 folds)", "",
             "MedAE: median over folds of the fold's median absolute error (score points); "
             "coverage / width: median over folds of the fold's coverage of the 90 % interval "
             "and of its median width (pooled over all held-out cells in brackets); ranking: "
             "margin-5 pairwise ranking accuracy, pairs pooled over folds per benchmark, median "
             "over benchmarks. Seconds: per fold (single-threaded), with the authors' 30-fold "
             "total divided by 30 beside it.", "",
             "| method | MedAE | mean of fold MedAEs | fold range | pooled MedAE | coverage90 "
             "| width90 | ranking (margin 5) | s / fold |",
             "|---|---|---|---|---|---|---|---|---|",
             f"| BenchPress (authors' code, logit Bias-ALS r2 λ0.1, conformal risk model) | "
             f"{AUTHORS['medae']:.3f} | {AUTHORS['medae_mean']:.3f} | {AUTHORS['range']} | "
             f"{AUTHORS['pooled']:.3f} | ({AUTHORS['coverage']:.3f}) | ({AUTHORS['width']:.2f}) | "
             f"{AUTHORS['rank_acc']:.4f} | {AUTHORS['seconds_30'] / 30:.1f} |"]
    for name in methods:
        s = run_method(name, values, folds, cache)
        lines.append(
            f"| {name} | {s['medae']:.3f} | {s['medae_mean']:.3f} | "
            f"{s['medae_min']:.2f}–{s['medae_max']:.2f} | {s['medae_pooled']:.3f} | "
            f"{fmt(s['coverage90'])} ({fmt(s['coverage90_pooled'])}) | "
            f"{fmt(s['width90'], 2)} ({fmt(s['width90_pooled'], 2)}) | {s['rank_acc']:.4f} | "
            f"{s['seconds']:.2f} |")
    return [*lines, ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--folds", type=int, default=None, help="first N folds only")
    parser.add_argument("--out", default=None, help="markdown file (default: print)")
    parser.add_argument("--cache", default=None,
                        help="folder of per-method JSON summaries (reused when present)")
    args = parser.parse_args(argv)
    data = Path(args.data_dir)
    values = load_matrix("benchpress2026", data_dir=data).values.astype(np.float64)
    folds = read_cell_folds(data / FOLD_FILE, values.shape)[: args.folds]
    command = "python benchmarks/benchpress.py " + " ".join(argv if argv is not None
                                                           else sys.argv[1:])
    lines = ["# BenchPress 2026: whole-benchmark completion on the authors' folds", "",
             *provenance(command, f" (single-threaded, {os.cpu_count()} CPU cores shared)."),
             "Matrix `benchpress2026.npz` (84 × 133, 2,604 observed cells), the authors' 30 "
             "folds of held-out cells. Reference numbers: `../shared/anchors/benchpress/`. "
             "Hyperparameters are fixed or chosen inside each fold from its training cells.", ""]
    cache = Path(args.cache) if args.cache else None
    lines += completion_section(values, folds, args.methods, cache)
    text = "\n".join(lines)
    if args.out:
        write_markdown(args.out, text)
    print(text)


if __name__ == "__main__":
    main()
