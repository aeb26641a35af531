"""Do the harness's seconds per run match the wall time of the run on its own?

For each method, one binned split (M source models, 10 %) of each dataset is fitted
once to compile its programs, then twice more with :func:`coreval.pipeline.fit_method`:

* ``cold``: a new :class:`coreval.base.FitCache` of the grid's size, the reference: the reported seconds
  (select + fit) must equal the wall time (ratio 1);
* ``warm``: again, with the cache the cold run filled, as a harness cell that follows
  another cell of the same split: the fits are reused, and the reported seconds must
  still be the cold run's (ratio of the two reported seconds ≈ 1; the part of a run
  that no cache holds, such as mRMR's scores, is computed again in both);
* the predictions of the warm run must equal the cold run's (the reuse changes nothing).

Then the cache that the cells of one split share (:data:`coreval.harness.grid.
SPLIT_CACHE_SIZE` fits) against the former 16: gp-irt, gp-irt+ and gp-irt++ at 5, 10
and 15 % on the first dataset, as the grid runs them: wall time, fits made, and the
memory the cache holds (pickled size of its fits).

Writes ``benchmarks/results/timing_accounting.md``.

Usage::

    python benchmarks/timing_accounting.py [--datasets gsm,mmlu] [--methods gp-irt,...]
                                           [--n-source 30]
"""

from __future__ import annotations

import argparse
import os
import pickle
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _results import provenance, write_markdown
from coreval.base import FitCache
from coreval.data import load_matrix
from coreval.data.splits import make_split
from coreval.harness.grid import SPLIT_CACHE_SIZE
from coreval.jax_cache import enable_compilation_cache
from coreval.methods import get_method
from coreval.pipeline import fit_method
from item_level import _md

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
METHODS = ("mrmr++", "gp-irt", "irt-bayes", "stack-random")


def _run(method: str, source, target, k: int, cache: FitCache) -> tuple[float, float, np.ndarray]:
    wall = time.perf_counter()
    fitted = fit_method(get_method(method), source, k, seed=0, cache=cache)
    wall = time.perf_counter() - wall
    reported = fitted.seconds["select"] + fitted.seconds["fit"]
    mean = fitted.predict_array(target.values[:, fitted.coreset.indices]).mean
    return reported, wall, mean


def _split_cells(source, n_items: int, maxsize: int) -> dict:
    """The gp-irt family's cells of one split, run through one cache of ``maxsize`` fits."""
    cache = FitCache(maxsize=maxsize)
    wall = time.perf_counter()
    for method in ("gp-irt", "gp-irt+", "gp-irt++"):
        for budget in (0.05, 0.10, 0.15):
            fit_method(get_method(method), source, round(budget * n_items), seed=0, cache=cache)
    wall = time.perf_counter() - wall
    held = sum(len(pickle.dumps(v)) for v in cache.values()) / 1e6
    return {"cache size": maxsize, "wall (s)": wall, "fits made": cache.misses,
            "fits reused": cache.hits, "MB held": held}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", default="gsm,mmlu")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--n-source", type=int, default=30)
    ap.add_argument("--data-dir", type=Path,
                    default=Path(os.environ.get("COREVAL_DATA", REPO.parent / "shared" / "data")))
    args = ap.parse_args()
    enable_compilation_cache()
    rows, sizes = [], []
    for name in args.datasets.split(","):
        matrix = load_matrix(name, data_dir=args.data_dir)
        split = make_split(matrix, "binned", seed=0, n_source=args.n_source)
        source, target = matrix.take(split.source), matrix.take(split.target)
        k = round(0.10 * matrix.n_items)
        for method in args.methods.split(","):
            _run(method, source, target, k, FitCache())  # compiles: both runs below are warm
            cache = FitCache(maxsize=SPLIT_CACHE_SIZE)  # the grid's per-split cache
            cold_rep, cold_wall, cold_mean = _run(method, source, target, k, cache)
            warm_rep, warm_wall, warm_mean = _run(method, source, target, k, cache)
            rows.append({"dataset": name, "method": method, "cold wall (s)": cold_wall,
                         "cold reported / wall": cold_rep / cold_wall,
                         "warm wall (s)": warm_wall,
                         "warm reported / cold reported": warm_rep / cold_rep,
                         "same predictions": bool(np.array_equal(cold_mean, warm_mean))})
            print(rows[-1], flush=True)
        if not sizes:
            sizes = [_split_cells(source, matrix.n_items, n) for n in (16, SPLIT_CACHE_SIZE)]
            print(sizes, flush=True)
    table = pd.DataFrame(rows)
    command = ("python benchmarks/timing_accounting.py --datasets " + args.datasets
               + " --methods " + args.methods + f" --n-source {args.n_source}")
    text = "\n".join([
        "# Harness seconds per run against the wall time", "", *provenance(command), "",
        f"Binned split, seed 0, M = {args.n_source}, 10 %. `cold`: a new fit cache, so the "
        "reported seconds (select + fit, `FittedMethod.seconds`) should equal the wall time; "
        "`warm`: the same run again with the cache the cold run filled, as a harness cell "
        "after another cell of its split: the reported seconds should still be the cold "
        "run's, while the wall time is what the reuse left. Each method is run once before, "
        "so neither run compiles. mrmr++ keeps nothing in the cache, so its warm run "
        "computes everything again. One process, one thread, with another job beside it on "
        "the 2-core machine.", "",
        *_md(table, {"cold wall (s)": ".1f", "cold reported / wall": ".3f",
                     "warm wall (s)": ".1f", "warm reported / cold reported": ".3f"}), "",
        f"## The split's cache: gp-irt, gp-irt+ and gp-irt++ at 5, 10 and 15 % "
        f"({args.datasets.split(',')[0]})", "",
        "The nine cells of one split, in the grid's order, through one cache; the fits of "
        "gp-irt's calibration folds do not depend on the budget or the variant.", "",
        *_md(pd.DataFrame(sizes), {"wall (s)": ".1f", "MB held": ".0f"}), ""])
    print(write_markdown(RESULTS / "timing_accounting.md", text))


if __name__ == "__main__":
    main()
