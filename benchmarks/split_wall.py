"""The real wall time of one item-level grid split, cell by cell, against the grid's
per-run seconds.

The item-level grid (``benchmarks/item_level.py``) runs the cells of one split (every
method and budget on the same source models) one after another in one process with one
fit cache, so a fit made for one cell is reused by the others. Its ``seconds`` columns
count a reused fit with the seconds it took, so they say what one run costs alone. This
script runs every method of the grid at every budget on one split, sequentially
(``n_jobs=1``) into an empty store, and reads each cell's real wall time from when its
result was written (a cell's time includes the fits it made for later cells). It writes
per method the real seconds of its cells and their ``seconds`` column, the split's wall
time, and what that makes the whole grid (8 matrices × 3 M × 5 seeds = 120 splits) on 2
cores if every split cost this one.

Usage::

    python benchmarks/split_wall.py [--dataset gsm] [--n-source 30] [--seed 0]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from _results import RESULTS, SHARED, command_line, provenance, write_markdown
from coreval.data import load_matrix
from coreval.harness import run_grid
from coreval.harness.store import read_results
from coreval.jax_cache import enable_compilation_cache
from item_level import BUDGETS, DATASETS, METHODS, N_SOURCE, SEEDS, _md

#: Splits of the full item-level grid.
GRID_SPLITS = len(DATASETS) * len(N_SOURCE) * len(SEEDS)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="gsm")
    ap.add_argument("--n-source", type=int, default=30)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    enable_compilation_cache()
    matrix = load_matrix(args.dataset, data_dir=SHARED / "data")
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "split.parquet"
        start = time.time()
        run_grid({args.dataset: matrix}, list(METHODS), list(BUDGETS),
                 n_source=[args.n_source], seeds=[args.seed], split="binned", out=out,
                 n_jobs=1)
        wall = time.time() - start
        parts = sorted((out.parent / (out.name + ".parts")).glob("*.parquet"),
                       key=lambda p: p.stat().st_mtime)
        done = [p.stat().st_mtime for p in parts]
        rows = pd.concat([read_results(p) for p in parts], ignore_index=True)
    rows["real (s)"] = pd.Series(done).diff().fillna(done[0] - start).to_numpy()
    rows["seconds"] = rows[["seconds_select", "seconds_fit", "seconds_predict"]].sum(axis=1)
    per = rows.groupby("method", sort=False).agg(
        cells=("real (s)", "size"), real=("real (s)", "sum"), alone=("seconds", "sum"))
    per = per.reindex([m for m in METHODS if m in per.index]).reset_index()
    per["share of the split"] = per["real"] / per["real"].sum()
    per = per.rename(columns={"real": "real (s)", "alone": "sum of `seconds` (s)"})
    grid_hours = wall * GRID_SPLITS / 2 / 3600
    command = command_line("split_wall.py", argv)
    text = "\n".join([
        "# One item-level grid split, cell by cell", "", *provenance(command), "",
        f"{args.dataset}, binned split, M = {args.n_source}, seed {args.seed}: the "
        f"{len(METHODS)} methods of `item_level.py` at budgets "
        f"{', '.join(f'{b:.0%}' for b in BUDGETS)}, one process, one fit cache, an empty "
        "store (the persistent compilation cache on, as the grid runs). `real`: wall time "
        "between a cell's result and the previous one, summed per method (the fits a cell "
        "makes for later cells count in it); `sum of seconds`: the grid's per-run seconds, "
        "where a reused fit counts with the seconds it took.", "",
        f"Split wall time: {wall:.0f} s. If each of the full grid's {GRID_SPLITS} splits "
        f"({len(DATASETS)} matrices × M ∈ {{{', '.join(map(str, N_SOURCE))}}} × "
        f"{len(SEEDS)} seeds) cost this one, the grid would take "
        f"{grid_hours:.1f} h on 2 cores (two splits at a time); M = 15 splits are cheaper "
        "and M = 50 ones dearer, and the matrices differ in size, so this is an order of "
        "magnitude, not a measurement of the grid.", "",
        *_md(per, {"real (s)": ".0f", "sum of `seconds` (s)": ".0f",
                   "share of the split": ".2f", "cells": ".0f"}), ""])
    print(write_markdown(RESULTS / "split_wall.md", text))


if __name__ == "__main__":
    main()
