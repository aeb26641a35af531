"""``selection="auto"`` against the methods' own selectors, on the same splits.

For each regression refit of a supervised coreset (mrmr++, anchor-points++, mrmr+) and
each stacked one (stack-mrmr, stack-irt-anchors),
the method is fitted twice on the same source models: as published (``selection="method"``) and with the default random-coreset
check (``selection="auto"``, :func:`coreval.pipeline.random_is_better`). Target RMSE
of both, how often the check put random items in place of the method's, and the
check's cost, on the binned split with 30 source models at a 10 % budget:

* the 8 LLM matrices, σ⁻¹-aggregated (mRMR paper, Eqs. 25-27), seeds 0-1;
* the two GLUE matrices (robustness, issue goal: ≤ 1.3 × random++), seeds 0-2.

Run from the repository root::

    python benchmarks/selection_check.py --data-dir ../shared/data

(``--groups _stack`` runs the stacked methods only.)

Writes ``benchmarks/results/selection_check.md``; every (dataset, seed) is stored in
``benchmarks/results/raw/selection_check/`` as it finishes, so an interrupted run
resumes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np
import pandas as pd

from _results import (
    GLUE,
    LLM,
    RESULTS,
    SHARED,
    command_line,
    provenance,
    stored_rows,
    write_markdown,
)


@dataclass(frozen=True)
class Group:
    """Checked methods stored together, one part per (dataset, seed).

    ``reuse_kept``: the published fit is re-made only where the check switched (where
    it kept the method, the checked fit *is* the published one), for methods whose
    check compares their own out-of-fold residuals (the stacks).
    """

    baselines: tuple[str, ...]
    methods: tuple[str, ...]
    reuse_kept: bool = False


#: ``part-file suffix -> Group``.
GROUPS = {"": Group(("random++", "random+"), ("mrmr++", "anchor-points++", "mrmr+")),
          "_stack": Group((), ("stack-mrmr", "stack-irt-anchors"), reuse_kept=True)}
METHODS = tuple(m for g in GROUPS.values() for m in g.methods)
BUDGET = 0.10
N_SOURCE = 30
RAW = RESULTS / "raw" / "selection_check"


def run_split(name: str, matrix, seed: int, group: str = "") -> list[dict]:
    """Both variants of every method of ``group`` (:data:`GROUPS`), and its baselines, on
    one binned split."""
    from coreval.base import FitCache, resolve_budget
    from coreval.data.splits import make_split
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    split = make_split(matrix, "binned", seed=seed, n_source=N_SOURCE)
    source, target = matrix.take(split.source), matrix.take(split.target)
    k = resolve_budget(BUDGET, matrix.n_items)
    truth = target.summary_scores()
    cache = FitCache()
    members = GROUPS[group]

    def fit(method: str, selection: str) -> dict:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = fit_method(get_method(method), source, k, seed=seed, cache=cache,
                                selection=selection)
        seconds = time.perf_counter() - t0
        pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
        return {"dataset": name, "seed": seed, "method": method,
                "selection": selection, "used": fitted.selection,
                "rmse": 100 * float(np.sqrt(np.mean((pred.mean - truth) ** 2))),
                "oof_method": (fitted.selection_rmse or {}).get("method", np.nan),
                "oof_random": (fitted.selection_rmse or {}).get("random", np.nan),
                "seconds": seconds}

    rows = [fit(method, "method") for method in members.baselines]
    for method in members.methods:
        if members.reuse_kept:
            auto = fit(method, "auto")
            own = fit(method, "method") if auto["used"] == "random" else {
                **auto, "selection": "method", "used": "method", "seconds": np.nan}
            rows += [own, auto]
        else:
            rows += [fit(method, "method"), fit(method, "auto")]
    return rows


def report(df: pd.DataFrame, sigmas: dict[str, float], command: str) -> str:
    """The markdown of ``selection_check.md``."""
    from coreval.harness.metrics import sigma_weighted

    lines = ["# The random-coreset check of `selection=\"auto\"`", "",
             *provenance(command),
             f"Binned split, {N_SOURCE} source models, budget {100 * BUDGET:g} %. Each method "
             "is fitted on the same split as published (`selection=\"method\"`) and with the "
             "default check (`selection=\"auto\"`): the method and the same predictor on "
             "random items predict held-out source models (10 folds), and random items are "
             "used only when better by more than one standard error of the paired "
             "difference of squared errors (`coreval.pipeline.random_is_better`). RMSE on "
             "the target models, in pp; `switched` counts the splits where the check used "
             "random items; `seconds` is the median wall time of one fit (calibration "
             "included). Stacked methods are compared on the cross-fitted out-of-fold "
             "residuals of their own 5 meta-folds (`stack-mrmr` against `stack-random`); "
             "their published fit is re-made only where the check switched (where it kept "
             "the method, the checked fit is the published one), so their 'seconds as "
             "published' is the median over the switched splits.", ""]
    llm = df[df["dataset"].isin(LLM)]
    if len(llm):
        present = set(llm["dataset"])
        lines += [f"## The 8 LLM matrices (σ⁻¹-aggregated, seeds "
                  f"{', '.join(map(str, sorted(llm['seed'].unique())))})", "",
                  "| method | RMSE as published | RMSE with the check | switched | "
                  "seconds as published | seconds with the check |", "|---|---|---|---|---|---|"]
        partial = []
        for method in ("random++", "random+", *METHODS):
            sub = llm[llm["method"] == method]
            agg = {selection: sigma_weighted(part.groupby("dataset")["rmse"].mean().to_dict(),
                                             sigmas)
                   for selection, part in sub.groupby("selection")}
            missing = sorted(present - set(sub["dataset"]))
            if missing:
                n_splits = int((sub["selection"] == "method").sum())
                partial.append(f"{method} ({n_splits} splits; without {', '.join(missing)})")
            auto = sub[sub["selection"] == "auto"]
            switched = f"{int((auto['used'] == 'random').sum())} / {len(auto)}" if len(auto) \
                else "—"
            secs = sub.groupby("selection")["seconds"].median()
            auto_rmse = f"{agg['auto']:.2f}" if "auto" in agg else "—"
            auto_secs = f"{secs['auto']:.1f}" if "auto" in agg else "—"
            lines.append(f"| {method} | {agg['method']:.2f} | {auto_rmse} | {switched} | "
                         f"{secs['method']:.1f} | {auto_secs} |")
        if partial:
            lines += ["", "Rows run on fewer splits (the aggregate is over the matrices they "
                      "have): " + "; ".join(partial) + "."]
        lines.append("")
    glue = df[df["dataset"].isin(GLUE)]
    if len(glue):
        lines += ["## Robustness: mrpc and sst2 (mean over seeds "
                  f"{', '.join(map(str, sorted(glue['seed'].unique())))}; ratio to random++ "
                  "on the same splits, goal ≤ 1.3)", "",
                  "| dataset | method | RMSE as published | ratio | RMSE with the check | "
                  "ratio | switched |", "|---|---|---|---|---|---|---|"]
        for name, part in glue.groupby("dataset"):
            base = part[part["method"] == "random++"]["rmse"].mean()
            for method in METHODS:
                sub = part[part["method"] == method]
                own = sub[sub["selection"] == "method"]["rmse"].mean()
                auto = sub[sub["selection"] == "auto"]
                lines.append(f"| {name} | {method} | {own:.2f} | {own / base:.2f} | "
                             f"{auto['rmse'].mean():.2f} | {auto['rmse'].mean() / base:.2f} | "
                             f"{int((auto['used'] == 'random').sum())} / {len(auto)} |")
            lines.append(f"| {name} | random++ | {base:.2f} | 1.00 | | | |")
        lines.append("")
    lines += ["## Every split", "",
              "| dataset | seed | method | published | with the check | used | OOF RMSE "
              "method / random |", "|---|---|---|---|---|---|---|"]
    for (name, seed, method), part in df[~df["method"].str.startswith("random")].groupby(
            ["dataset", "seed", "method"], sort=True):
        own = part[part["selection"] == "method"].iloc[0]
        auto = part[part["selection"] == "auto"].iloc[0]
        lines.append(f"| {name} | {seed} | {method} | {own['rmse']:.2f} | {auto['rmse']:.2f} | "
                     f"{auto['used']} | {auto['oof_method']:.2f} / {auto['oof_random']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from coreval._atomic import write_text_atomic
    from coreval.data.io import load_matrix
    from coreval.harness.summary import dataset_sigmas

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED / "data")
    parser.add_argument("--datasets", nargs="+", default=[*LLM, *GLUE])
    parser.add_argument("--llm-seeds", nargs="+", type=int, default=[0, 1])
    parser.add_argument("--glue-seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--groups", nargs="+", default=list(GROUPS), choices=list(GROUPS),
                        help="method groups to run ('' the regression refits, '_stack' "
                             "stacking)")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    RAW.mkdir(parents=True, exist_ok=True)
    matrices = {name: load_matrix(name, data_dir=args.data_dir) for name in args.datasets}
    for group in args.groups:
        for name, matrix in matrices.items():
            for seed in (args.glue_seeds if name in GLUE else args.llm_seeds):
                part = RAW / f"{name}_seed{seed}{group}.json"
                if args.report_only or part.exists():
                    continue
                write_text_atomic(part, json.dumps(run_split(name, matrix, seed, group)))
                print(f"{name} seed {seed}{group} done", flush=True)
    df = pd.DataFrame(stored_rows(RAW, matrices))
    command = command_line("selection_check.py", argv)
    text = report(df, dataset_sigmas(matrices), command)
    print(write_markdown(RESULTS / "selection_check.md", text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
