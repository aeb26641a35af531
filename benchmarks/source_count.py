"""How much of the item-level error comes from having few source models.

The item-level grid trains each method on M = 30 source models of the binned split and
scores it on the other models (the targets). This script scores the same targets twice:

- ``M = 30``: the method fitted on the split's 30 source models, as in the grid;
- ``sources + 90 % of targets``: 10-fold cross-validation over the targets, each fold's
  targets predicted by the method fitted on the 30 sources and the other nine folds' targets
  (selection, the selection check and the predictor all run again on that larger set).

If the second RMSE is far below the first, a method that learns more from few models could
close the gap; if it is close, the error is set by the budget's items and the predictor, not
by M. The coreset size is the same in both (``budget`` of the items). Point predictions
only: each fit uses ``calibration="native"``, which does not change them.

Run from the repository root::

    python benchmarks/source_count.py [--methods mrmr++ random++] [--seeds 0 1 2]

Rows are stored in ``benchmarks/results/raw/source_count/`` as they finish (a re-run
computes only the missing ones); the report is ``benchmarks/results/source_count.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np
import pandas as pd

from _results import LLM, RESULTS, SHARED, command_line, provenance, write_markdown

RAW = RESULTS / "raw" / "source_count"
N_SOURCE = 30
TARGET_FOLDS = 10


def run(name: str, methods: list[str], seeds: list[int], budget: float,
        selection: str, options: dict[str, str]) -> None:
    """Store one row per (method, seed) of ``name``: target RMSE at M = 30 and with the targets' other folds."""
    from sklearn.model_selection import KFold

    from coreval._atomic import write_text_atomic
    from coreval.base import resolve_budget
    from coreval.data import load_matrix
    from coreval.data.splits import make_split
    from coreval.harness.metrics import rmse
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    matrix = load_matrix(name, data_dir=SHARED / "data")
    truth = matrix.summary_scores()
    k = resolve_budget(budget, matrix.n_items)
    tag = "".join(f"_{key}-{value}" for key, value in sorted(options.items()))

    def predict(rows: np.ndarray, method, seed: int, targets: np.ndarray) -> np.ndarray:
        fitted = fit_method(method, matrix.take(rows), k, seed=seed, calibration="native",
                            selection=selection, **options)
        x = matrix.values[np.ix_(targets, fitted.coreset.indices)]
        return np.asarray(fitted.predict_array(x).mean, dtype=float)

    for seed in seeds:
        split = make_split(matrix, "binned", seed=seed, n_source=N_SOURCE)
        source, target = np.asarray(split.source), np.asarray(split.target)
        for method_name in methods:
            path = RAW / f"{name}_{method_name}_{selection}{tag}_b{budget:g}_s{seed}.json"
            if path.exists():
                continue
            method = get_method(method_name)
            start = time.perf_counter()
            at_m = predict(source, method, seed, target)
            pooled = np.full(target.size, np.nan)
            folds = KFold(TARGET_FOLDS, shuffle=True, random_state=seed).split(target)
            for train, test in folds:
                rows = np.sort(np.concatenate([source, target[train]]))
                pooled[test] = predict(rows, method, seed, target[test])
            label = " ".join([method_name, *(f"{key}={value}" for key, value
                                             in sorted(options.items()))])
            row = {"dataset": name, "method": label, "selection": selection,
                   "budget": budget, "seed": seed, "k": k, "n_target": int(target.size),
                   "n_pooled": int(source.size + target.size * (TARGET_FOLDS - 1)
                                   / TARGET_FOLDS),
                   "rmse_m30": rmse(truth[target], at_m),
                   "rmse_pooled": rmse(truth[target], pooled),
                   "seconds": time.perf_counter() - start}
            write_text_atomic(path, json.dumps(row))
            print(f"{name} {method_name} seed {seed}: {100 * row['rmse_m30']:.2f} → "
                  f"{100 * row['rmse_pooled']:.2f} pp", flush=True)


def report(df: pd.DataFrame, command: str) -> str:
    """The markdown of ``source_count.md``."""
    from coreval.data import load_matrix
    from coreval.harness import dataset_sigmas
    from coreval.harness.metrics import sigma_weighted

    sigmas = dataset_sigmas({d: load_matrix(d, data_dir=SHARED / "data")
                             for d in df["dataset"].unique()})
    keys = ["method", "selection", "budget"]
    seeds = sorted(df["seed"].unique())
    lines = ["# Target error with the split's 30 source models and with most of the targets added",
             "", *provenance(command),
             f"Binned split, M = {N_SOURCE}, seeds {', '.join(map(str, seeds))} (per row "
             "below where they differ); the 8 LLM matrices. `M = 30`: the method fitted on the split's source models, as in "
             "`item_level.md`. `pooled`: the targets in 10 folds, each fold predicted by the "
             "method fitted on the 30 sources and the other folds' targets (`n pooled` "
             "models: from 77 on the HELM matrices to about 400 on ifeval and "
             "openllm_math). Same coreset size, same targets, point predictions only. RMSE "
             "in pp, mean over seeds per dataset, σ⁻¹-aggregated over datasets (mRMR "
             "paper, Eqs. 25-27). `selection`: the selection option of every fit (`auto` "
             "keeps the method's coreset unless a random one of the same size predicts "
             "held-out training models better).", "",
             "| method | selection | budget | RMSE, M = 30 | RMSE, pooled | pooled / M = 30 "
             "| datasets | median seconds |",
             "|---|---|---|---|---|---|---|---|"]
    per = df.groupby([*keys, "dataset"], as_index=False)[["rmse_m30", "rmse_pooled"]].mean()
    for (method, selection, budget), g in per.groupby(keys, sort=True):
        m30 = sigma_weighted(dict(zip(g["dataset"], g["rmse_m30"], strict=True)), sigmas)
        pooled = sigma_weighted(dict(zip(g["dataset"], g["rmse_pooled"], strict=True)), sigmas)
        secs = df[(df["method"] == method) & (df["selection"] == selection)
                  & (df["budget"] == budget)]["seconds"].median()
        lines.append(f"| {method} | {selection} | {budget:g} | {100 * m30:.2f} | "
                     f"{100 * pooled:.2f} | {pooled / m30:.2f} | {g['dataset'].nunique()} | "
                     f"{secs:.0f} |")
    counts = per.groupby(keys)["dataset"].nunique()
    if counts.nunique() > 1:
        lines += ["", f"Rows over fewer than {counts.max()} datasets are σ⁻¹-aggregated over "
                  "their own datasets only (each row's `datasets`); compare them with the "
                  "others per dataset, below."]
    seed_sets = {key: tuple(sorted(g["seed"].unique()))
                 for key, g in df.groupby(keys, sort=True)}
    if len(set(seed_sets.values())) > 1:
        lines += ["", "Seeds per row: " + "; ".join(
            f"{key[0]} ({key[1]}): {', '.join(map(str, seeds))}"
            for key, seeds in seed_sets.items()) + "."]
    lines += ["", "## Per dataset (RMSE in pp, M = 30 → pooled; mean over seeds)", "",
              "| method | selection | budget | " + " | ".join(LLM) + " |",
              "|---|---|---|" + "---|" * len(LLM)]
    for (method, selection, budget), g in per.groupby(keys, sort=True):
        by = g.set_index("dataset")
        cells = [f"{100 * by.loc[d, 'rmse_m30']:.2f} → {100 * by.loc[d, 'rmse_pooled']:.2f}"
                 if d in by.index else "—" for d in LLM]
        lines.append(f"| {method} | {selection} | {budget:g} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(LLM))
    parser.add_argument("--methods", nargs="+", default=["mrmr++", "random++"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--selection", default="auto", choices=["auto", "method"])
    parser.add_argument("--option", nargs="*", default=[], metavar="KEY=VALUE",
                        help="options of every fit, e.g. scheme=mid for the mRMR methods")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--out", default=str(RESULTS / "source_count.md"))
    args = parser.parse_args(argv)
    RAW.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        for name in args.datasets:
            run(name, args.methods, args.seeds, args.budget, args.selection,
                dict(pair.split("=", 1) for pair in args.option))
    rows = [json.loads(p.read_text()) for p in sorted(RAW.glob("*.json"))]
    if not rows:
        raise SystemExit(f"nothing stored under {RAW}")
    text = report(pd.DataFrame(rows), command_line("source_count.py", argv))
    print(write_markdown(args.out, text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
