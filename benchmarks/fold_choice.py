"""The same grid cells with the IRT choice made again in every fold and held fixed.

gp-irt chooses its IRT model and priors per run (``model="auto"``, ``priors="auto"``).
Its calibration folds, the selection check of gp-irt+ / gp-irt++ and the stacks'
out-of-fold stage (for their gp-IRT component) re-run the pipeline on folds of the
source models: they used to make the choice again in every fold, and now reuse the one
made on all source models (:func:`coreval.pipeline.choice_refit`). This script compares
two stores of the same item-level grid cells (``benchmarks/item_level.py --raw``), one
made by each, cell by cell: point predictions, σ⁻¹-aggregated RMSE, τ, coverage and width of the 90 %
interval, the random-coreset check's decisions and the median seconds per run.
``--selector-fixed`` adds a third store, made once the stacks' out-of-fold folds also
held the choice of their IRT anchor selector fixed (stack-irt-anchors); its methods get
a row of their own, against the same ``--before`` cells.

Usage::

    python benchmarks/fold_choice.py --before STORE --after STORE [--selector-fixed STORE]

Each store is made by :data:`STORE_COMMAND` with the coreval of its side.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from _results import LLM, RESULTS, SHARED, command_line, provenance, write_markdown
from coreval.data import load_matrix
from coreval.harness.store import read_results
from coreval.harness.summary import dataset_sigmas
from item_level import METHOD_TABLE_FORMAT, _md, method_table

METHODS = ("gp-irt", "gp-irt+", "gp-irt++", "stack-random", "stack-mrmr", "stack-irt-anchors")
#: How each store was made (with the coreval before and after the change).
STORE_COMMAND = ("python benchmarks/item_level.py --methods " + ",".join(METHODS)
                 + " --n-source 30 --seeds 0,1 --budgets 0.1 --n-jobs 2 --raw STORE")
KEY = ["dataset", "method", "n_source", "budget", "seed"]


def _cells(store: Path) -> pd.DataFrame:
    """The successful gp-irt family cells of a store (its ``.parts`` folder)."""
    parts = sorted((store.parent / (store.name + ".parts")).glob("*.parquet"))
    if not parts:
        raise SystemExit(f"no stored cells under {store}.parts")
    df = pd.concat([read_results(p) for p in parts], ignore_index=True)
    df = df[df["method"].isin(METHODS) & df["error"].isna()].copy()
    df["seconds"] = df[["seconds_select", "seconds_fit", "seconds_predict"]].sum(axis=1)
    return df


def _row(label: str, before: pd.DataFrame, after: pd.DataFrame, sigmas: dict,
         method: str) -> dict:
    """One method's cells in both stores: equal RMSEs, changed checks, the aggregates."""
    both = before.merge(after, on=KEY, suffixes=("_before", "_after"))
    cells = both[both["method"] == method]
    b, a = (method_table(df[df["dataset"].isin(sigmas)].merge(cells[KEY], on=KEY), sigmas)
            .set_index("method").loc[method] for df in (before, after))
    same = cells["selection_before"] == cells["selection_after"]
    return {"method": label, "cells": len(cells),
            "RMSE equal": int(np.sum(np.isclose(cells["rmse_before"], cells["rmse_after"],
                                                rtol=0, atol=1e-12))),
            "check decision changed": int((~same).sum()),
            "RMSE before": b["rmse"], "RMSE after": a["rmse"],
            "τ before": b["kendall"], "τ after": a["kendall"],
            "coverage90 before": b["coverage90"], "coverage90 after": a["coverage90"],
            "width90 before": b["width90"], "width90 after": a["width90"],
            "seconds before": b["seconds"], "seconds after": a["seconds"],
            "seconds ratio": b["seconds"] / a["seconds"]}


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--before", type=Path, required=True,
                    help="store made with the choice in every fold")
    ap.add_argument("--after", type=Path, required=True,
                    help="store made with the choice held fixed")
    ap.add_argument("--selector-fixed", type=Path, default=None,
                    help="store made with the stacks' folds also holding their selector's "
                         "choice fixed")
    ap.add_argument("--out", type=Path, default=RESULTS / "fold_choice.md")
    args = ap.parse_args(argv)
    after = _cells(args.after)
    before = _cells(args.before).merge(after[KEY], on=KEY)  # the cells of both stores
    after = after.merge(before[KEY], on=KEY)
    sides = [("", after)]
    if args.selector_fixed is not None:
        fixed = _cells(args.selector_fixed).merge(before[KEY], on=KEY)
        sides.append((", selector's choice fixed too", fixed))
    sigmas = dataset_sigmas({name: load_matrix(name, data_dir=SHARED / "data")
                             for name in sorted(set(before["dataset"]) & set(LLM))})
    rows = [_row(method + label, before, side, sigmas, method)
            for label, side in sides for method in METHODS
            if (side["method"] == method).any()]
    table = pd.DataFrame(rows)
    settings = ", ".join(f"{c} {sorted(before[c].unique().tolist())}"
                         for c in ("n_source", "budget", "seed"))
    text = "\n".join([
        "# The IRT choice in the folds: made again in every fold, or held fixed", "",
        *provenance(command_line("fold_choice.py", argv)), "",
        f"Each store was made by `{STORE_COMMAND}`: `--before` (the cells of "
        "`item_level_m30.md`) with coreval at commit cd8e104, where every fold made the "
        "choice again, `--after` with the choice held fixed (commit 8ff24f7; the stacks "
        "in a second run, of commit 98052d7, with the same `src/`)."
        + (" `--selector-fixed` with the stacks' out-of-fold folds also holding the "
           "anchor selector's choice fixed (commit 5938ea7; `--methods stack-irt-anchors "
           "--n-jobs 1`, beside one other single-process benchmark, so also two processes "
           "on the 2 cores)." if args.selector_fixed is not None else ""), "",
        f"Cells present in both stores: {settings}; the {len(sigmas)} LLM matrices "
        f"({', '.join(sigmas)}). RMSE, width in pp; σ⁻¹-aggregated over datasets (mRMR "
        "paper, Eqs. 25-27) after averaging over seeds; coverage90 of the default interval "
        "on the target models; seconds = median select + fit + predict per run, a fit "
        "reused from another cell counted with the seconds it took (so a run's cost alone; "
        "two jobs on the 2-core machine; in the `--after` store the gp-irt family's first "
        "14 minutes ran beside a third process, and the stacks' first 50 minutes at the "
        "lowest priority beside the test suite, which can only have raised their seconds). "
        "`RMSE equal`: cells whose target RMSE is the "
        "same in both stores; `check decision changed`: cells where the random-coreset "
        "check (`selection=\"auto\"`) decided differently.", "",
        *_md(table, {**METHOD_TABLE_FORMAT, "RMSE before": ".2f", "RMSE after": ".2f",
                     "τ before": ".3f", "τ after": ".3f", "coverage90 before": ".3f",
                     "coverage90 after": ".3f", "width90 before": ".1f",
                     "width90 after": ".1f", "seconds before": ".0f",
                     "seconds after": ".0f", "seconds ratio": ".1f", "cells": ".0f",
                     "RMSE equal": ".0f", "check decision changed": ".0f"}), ""])
    print(write_markdown(args.out, text))


if __name__ == "__main__":
    main()
