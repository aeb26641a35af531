"""Lasso selection: the items with non-zero coefficients of a sparse regression.

The selector sweeps the lasso penalty until at most ``k`` coefficients are
non-zero; :class:`coreval.prediction.lasso.LassoPredictor` then predicts with that same
lasso model.

References
----------
Tibshirani, R. (1996). "Regression shrinkage and selection via the lasso". *JRSS-B* 58(1).
Bowyer, S. et al. "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression": the ``lasso`` baseline (reference code ``LassoPred``).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import joblib
import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso, lasso_path

from coreval._progress import progress
from coreval.base import Coreset, LinearFit, Selector, source_fingerprint
from coreval.base.cache import get_or_fit
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


def _default_alphas() -> np.ndarray:
    return np.logspace(-4, 1, 1000)


class LassoSelector(Selector):
    """Coreset = support of the lasso whose number of non-zeros is closest to ``k`` from below.

    The reference sweeps ``alpha`` over ``alphas`` in ascending order, fitting a
    separate ``Lasso(alpha, max_iter)`` from zero each time, keeps the first model
    whose number of non-zero coefficients is ``≤ k`` and closest to ``k``, and stops
    at an exact match. That cold sweep is the default (``warm_start=False``; a loop
    of scikit-learn ``Lasso`` fits) because it reproduces the reference's numbers
    (e.g. mean RMSE 2.89 vs 2.89 pp on commonsense at 10 %). The fits do not depend
    on ``k``, so the sweep is run over the whole grid once (:func:`cold_sweep`) and
    kept in the caller's :class:`~coreval.base.FitCache`; the reference's rule
    (:func:`reference_choice`) then reads it for each ``k``. Every budget of a
    harness split, and every calibration fold it shares with them, reuses the same
    sweep; a single call without an exact match costs what the reference's loop does
    (it sweeps the whole grid too), one with an early exact match up to a few times more.

    ``warm_start=True`` computes the sweep with one call to
    :func:`sklearn.linear_model.lasso_path` (coordinate descent warm-started along
    the path, 10-30× faster) and applies the same rule to its coefficients: the
    smallest ``alpha`` whose support size is the largest value ``≤ k``. With more
    items than source models the lasso solution is not unique and coordinate
    descent stops wherever the duality-gap tolerance is met; cold starts from zero
    stop early on well-shrunk solutions (implicit regularisation), warm starts from
    the denser neighbour do not, so the warm path predicts worse here (commonsense
    10 %: 5.1 vs 2.9 pp RMSE; mmlu: 4.0 vs 3.9 pp).

    The intercept is ``mean(y) − mean(X) @ coef`` (what ``Lasso(fit_intercept=True)``
    gives).

    The support can be smaller than ``k`` when no penalty in the grid gives exactly
    ``k`` non-zeros.

    Parameters
    ----------
    k : int
        Maximum number of columns.
    alphas : array-like
        Penalty grid (default ``logspace(-4, 1, 1000)``).
    max_iter : int
        Coordinate-descent iteration limit per penalty.
    tol : float
        Coordinate-descent duality-gap tolerance (scikit-learn's and the reference's 1e-4).
    warm_start : bool
        ``False`` (default): the reference's cold sweep; ``True``: one warm-started
        ``lasso_path`` (faster, further from the reference).
    seed : int
        Unused (the lasso is deterministic); kept for the common factory signature.

    Notes
    -----
    ``coreset.linear_fit`` holds the chosen lasso (coefficients of the coreset
    columns in coreset order, intercept and penalty), which
    :class:`coreval.prediction.lasso.LassoPredictor` predicts with.
    """

    def __init__(self, k: int = 10, alphas=None, max_iter: int = 10000, tol: float = 1e-4,
                 warm_start: bool = False, seed: int = 0) -> None:
        self.k = k
        self.alphas = alphas
        self.max_iter = max_iter
        self.tol = tol
        self.warm_start = warm_start
        self.seed = seed

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        if not source.fully_observed:
            raise ValidationError(
                "LassoSelector needs a fully observed source matrix; "
                f"{int((~source.observed).sum())} entries are NaN"
            )
        x = source.values
        y = source.summary_scores()
        grid = _default_alphas() if self.alphas is None else np.asarray(self.alphas, float)
        if grid.ndim != 1 or grid.size == 0 or (grid <= 0).any():
            raise ValidationError("LassoSelector alphas must be a non-empty 1-D array of positives")
        x_mean, y_mean = x.mean(axis=0), y.mean()
        grid = np.sort(grid)
        if self.warm_start:
            found = self._path(x - x_mean, y - y_mean, grid, k)
        else:
            key = ("lasso-cold-sweep", source_fingerprint(source), joblib.hash(grid),
                   int(self.max_iter), float(self.tol))
            sweep = get_or_fit(self.cache_, key, lambda: cold_sweep(
                x - x_mean, y - y_mean, grid, max_iter=self.max_iter, tol=self.tol))
            j = reference_choice(sweep.nnz, k)
            found = None if j is None else (float(sweep.alphas[j]), sweep.coef(j))
        if found is None:
            raise ValidationError(
                f"LassoSelector: no penalty in the grid gives at most k={k} non-zero coefficients"
            )
        alpha, coef = found
        support = np.flatnonzero(coef)
        if support.size == 0:
            raise ValidationError(
                "LassoSelector: the chosen lasso has no non-zero coefficient "
                "(the summary score is constant across source models?)"
            )
        intercept = float(y_mean - x_mean @ coef)
        fit = LinearFit(coef=coef[support], intercept=intercept, alpha=float(alpha))
        return Coreset.from_indices(source, support, method="lasso", linear_fit=fit,
                                    n_nonzero=int(support.size), k_requested=int(k))

    def _path(self, xc: np.ndarray, yc: np.ndarray, grid: np.ndarray,
              k: int) -> tuple[float, np.ndarray] | None:
        """Warm-started path; the smallest alpha with the largest support size ``≤ k``."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            path_alphas, coefs, _ = lasso_path(xc, yc, alphas=grid, max_iter=self.max_iter,
                                               tol=self.tol)
        # lasso_path returns the penalties in decreasing order; scan them ascending.
        order = np.argsort(path_alphas, kind="stable")
        path_alphas, coefs = path_alphas[order], coefs[:, order]
        nnz = (coefs != 0).sum(axis=0)
        feasible = np.flatnonzero(nnz <= k)
        if feasible.size == 0:
            return None
        j = feasible[nnz[feasible] == nnz[feasible].max()][0]
        return float(path_alphas[j]), coefs[:, j]


@dataclass(frozen=True)
class ColdSweep:
    """The cold lasso fit at each penalty of an ascending grid, stored sparsely.

    Attributes
    ----------
    alphas : ndarray, shape (n_alphas,)
        The penalties, ascending.
    nnz : ndarray of int, shape (n_alphas,)
        Number of non-zero coefficients of each fit.
    supports, values : tuple of ndarray
        Per fit, the positions and values of its non-zero coefficients.
    n_features : int
        Length of a coefficient vector.
    """

    alphas: np.ndarray
    nnz: np.ndarray
    supports: tuple[np.ndarray, ...]
    values: tuple[np.ndarray, ...]
    n_features: int

    def coef(self, j: int) -> np.ndarray:
        """The dense coefficient vector of the ``j``-th fit."""
        out = np.zeros(self.n_features)
        out[self.supports[j]] = self.values[j]
        return out


def cold_sweep(xc: np.ndarray, yc: np.ndarray, alphas: np.ndarray, *, max_iter: int = 10000,
               tol: float = 1e-4) -> ColdSweep:
    """A ``Lasso(alpha, fit_intercept=False)`` fitted from zero at every penalty of ``alphas``.

    ``xc`` and ``yc`` are centred. Each fit is scikit-learn's coordinate descent started
    from zero, as in the reference's loop, so a fit is the same whatever the grid's other
    penalties (unlike :func:`sklearn.linear_model.lasso_path`, which warm-starts).
    """
    supports, values, nnz = [], [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for alpha in progress(alphas, desc="lasso sweep"):
            coef = Lasso(alpha=float(alpha), max_iter=max_iter, tol=tol,
                         fit_intercept=False).fit(xc, yc).coef_
            support = np.flatnonzero(coef)
            supports.append(support)
            values.append(coef[support].copy())
            nnz.append(support.size)
    return ColdSweep(alphas=np.asarray(alphas, dtype=float), nnz=np.asarray(nnz, dtype=int),
                     supports=tuple(supports), values=tuple(values), n_features=xc.shape[1])


def reference_choice(nnz: np.ndarray, k: int) -> int | None:
    """The reference's pick along an ascending sweep (``LassoPred`` of mrmr_eval).

    Scanning the penalties in ascending order, keep the first fit whose number of
    non-zeros is ``≤ k`` and closer to ``k`` than any kept so far, and stop at the first
    fit with exactly ``k``. ``None`` when no fit has at most ``k`` non-zeros.
    """
    best, best_gap = None, np.inf
    for j, n in enumerate(np.asarray(nnz, dtype=int)):
        if n <= k and k - n < best_gap:
            best, best_gap = j, k - n
        if n == k:
            break
    return best
