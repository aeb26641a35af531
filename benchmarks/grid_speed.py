"""The item-level grid's hot spots, each timed against the way it was computed before.

On one binned split (M source models, 10 %) of each dataset:

* **kernel ridge's λ** (the ``X++`` refits, also a stacking component): the closed-form
  leave-one-out of :func:`coreval.regression.kernel_ridge_loo_batch`, as
  :class:`coreval.prediction.ridge.KernelRidgePredictor` now chooses it, against the
  reference's ``GridSearchCV(KernelRidge, cv=LeaveOneOut())``, on random coresets of
  the budget's size; both must choose the same λ;
* **irt-bayes' prediction**: the ability quadrature's item tables made once per call
  and shared by the models (:func:`coreval.irt.logistic.ability_grid`), against one
  table per model (:meth:`IRTBayesPredictor._simulate` row by row, the former loop);
  the predictions must be identical;
* **lasso's selection** at the three budgets 5/10/15 %: one cold sweep of the penalty
  grid kept in the split's cache and read for each budget
  (:func:`coreval.selection.lasso.cold_sweep`), against the reference's loop run once
  per budget (cold ``Lasso`` fits in ascending order, stopping at an exact match); the
  supports and coefficients must be identical.

Each ratio is old / new seconds, measured in the same process, one thread.

Writes ``benchmarks/results/grid_speed.md``.

Usage::

    python benchmarks/grid_speed.py [--datasets gsm,mmlu] [--n-source 30] [--coresets 20]
"""

from __future__ import annotations

import argparse
import os
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Lasso
from sklearn.model_selection import GridSearchCV, LeaveOneOut

from _results import provenance, write_markdown
from coreval.base import Coreset, FitCache
from coreval.base.checks import resolve_budget
from coreval.data import load_matrix
from coreval.data.splits import make_split
from coreval.methods import get_method
from coreval.pipeline import fit_method
from coreval.prediction.ridge import KernelRidgePredictor
from coreval.regression import default_alphas
from coreval.selection.lasso import LassoSelector

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "grid_speed.md"


def kernel_ridge_rows(source, k: int, n_coresets: int) -> tuple[float, float, int]:
    """Seconds of GridSearchCV and of the predictor's λ choice, and how many λ agree."""
    rng = np.random.default_rng(0)
    y = source.summary_scores()
    grid = default_alphas(source)
    t_ref = t_new = 0.0
    agree = 0
    for _ in range(n_coresets):
        cols = np.sort(rng.choice(source.n_items, k, replace=False))
        x = source.values[:, cols]
        t0 = time.perf_counter()
        ref = GridSearchCV(KernelRidge(kernel="poly", degree=2, coef0=1.0, gamma=None),
                           {"alpha": list(grid)}, cv=LeaveOneOut(),
                           scoring="neg_mean_squared_error").fit(x, y)
        t_ref += time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = KernelRidgePredictor(interval="none").fit(source, Coreset.from_indices(source,
                                                                                      cols))
        t_new += time.perf_counter() - t0
        agree += int(pred.alpha_ == ref.best_params_["alpha"])
    return t_ref, t_new, agree


def irt_bayes_rows(source, target, k: int) -> tuple[float, float, float, int]:
    """Seconds of irt-bayes' prediction with per-model tables and with shared ones."""
    fitted = fit_method(get_method("irt-bayes"), source, k, seed=0, cache=FitCache())
    predictor = fitted.predictor
    x = target.values[:, fitted.coreset.indices]
    predictor.predict(x[:2])  # warm-up
    t0 = time.perf_counter()
    shared = predictor.predict(x)
    t_new = time.perf_counter() - t0
    t0 = time.perf_counter()
    means = [predictor._simulate(row[None], predictor._row_rng(row))[0] for row in x]
    t_old = time.perf_counter() - t0
    old = np.concatenate(means)
    # the shared-table prediction's mean before the misfit term equals the row-by-row one
    plain = [predictor._simulate(row[None], predictor._row_rng(row),
                                 predictor._theta_draws(row[None], predictor._row_rng(row),
                                                        predictor._ability_grid()))[0]
             for row in x[:3]]
    diff = float(np.abs(np.concatenate(plain) - old[:3]).max())
    return t_old, t_new, diff, int(np.isfinite(shared.mean).sum())


def reference_lasso_loop(source, k: int) -> np.ndarray:
    """The reference's selection: cold ``Lasso`` fits in ascending order until ``k`` non-zeros."""
    x, y = source.values, source.summary_scores()
    xc, yc = x - x.mean(axis=0), y - y.mean()
    best, best_gap = None, np.inf
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for alpha in np.sort(np.logspace(-4, 1, 1000)):
            coef = Lasso(alpha=float(alpha), max_iter=10000, tol=1e-4,
                         fit_intercept=False).fit(xc, yc).coef_
            nnz = int((coef != 0).sum())
            if nnz <= k and k - nnz < best_gap:
                best, best_gap = coef.copy(), k - nnz
            if nnz == k:
                break
    return best


def lasso_rows(source, ks: list[int]) -> tuple[float, float, int]:
    """Seconds of the reference loop per budget and of the shared sweep; how many agree."""
    t0 = time.perf_counter()
    old = [reference_lasso_loop(source, k) for k in ks]
    t_old = time.perf_counter() - t0
    cache = FitCache()
    t0 = time.perf_counter()
    new = [LassoSelector(k=k).fit(source, cache=cache).coreset_ for k in ks]
    t_new = time.perf_counter() - t0
    agree = sum(np.array_equal(np.flatnonzero(o), c.indices)
                and np.array_equal(o[c.indices], c.linear_fit.coef) for o, c in zip(old, new, strict=True))
    return t_old, t_new, agree


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path(
        os.environ.get("COREVAL_DATA_DIR", REPO.parent / "shared" / "data")))
    ap.add_argument("--datasets", default="gsm,mmlu")
    ap.add_argument("--n-source", type=int, default=30)
    ap.add_argument("--coresets", type=int, default=20)
    args = ap.parse_args(argv)
    lines = ["# Hot spots of the item-level grid: before and after", "",
             *provenance("python benchmarks/grid_speed.py " + " ".join(argv or [])),
             f"One binned split per dataset (seed 0, M = {args.n_source}, budget 10 %; lasso at "
             "5/10/15 %), one "
             "thread. Ratio = seconds the way it was computed before / seconds now, measured "
             "in the same process.", "",
             "| dataset | hot spot | before (s) | now (s) | ratio | same result |",
             "|---|---|---|---|---|---|"]
    for name in [d for d in args.datasets.split(",") if d]:
        matrix = load_matrix(name, data_dir=args.data_dir)
        split = make_split(matrix, "binned", seed=0, n_source=args.n_source)
        source, target = matrix.take(split.source), matrix.take(split.target)
        k = int(0.1 * matrix.n_items)
        t_ref, t_new, agree = kernel_ridge_rows(source, k, args.coresets)
        lines.append(f"| {name} | kernel ridge λ, {args.coresets} coresets of {k} items "
                     f"(GridSearchCV → closed form) | {t_ref:.2f} | {t_new:.3f} | "
                     f"{t_ref / t_new:.0f} | λ equal in {agree} of {args.coresets} |")
        t_old, t_new, diff, n = irt_bayes_rows(source, target, k)
        lines.append(f"| {name} | irt-bayes prediction of {n} targets (tables per model → "
                     f"per call) | {t_old:.2f} | {t_new:.2f} | {t_old / t_new:.1f} | "
                     f"max difference {diff:.1e} |")
        ks = [resolve_budget(b, matrix.n_items) for b in (0.05, 0.10, 0.15)]
        t_old, t_new, agree = lasso_rows(source, ks)
        lines.append(f"| {name} | lasso selection at k = {', '.join(map(str, ks))} (the "
                     f"reference loop per budget → one shared sweep) | {t_old:.2f} | "
                     f"{t_new:.2f} | {t_old / t_new:.1f} | support and coefficients equal "
                     f"in {agree} of {len(ks)} |")
        print(*lines[-3:], sep="\n", flush=True)
    lines += ["", "The irt-bayes \"before\" column predicts row by row with the tables remade "
              "for each model and without the misfit term's noise (the former loop's cost); "
              "\"same result\" compares three models' posterior means computed both ways.", ""]
    write_markdown(OUT, "\n".join(lines))
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
