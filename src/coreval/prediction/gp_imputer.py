"""The Gaussian conditional plus a Gaussian-process correction per benchmark (task ``"impute"``).

:class:`~coreval.prediction.gaussian_imputer.GaussianImputer` predicts an unselected
benchmark ``j`` by the conditional mean of one joint Gaussian, linear in the selected
scores: ``g_j(z_S) = w_j · z_S``. It borrows strength across all benchmarks through the
EM correlation, which matters when most cells are missing, but it cannot bend: a
benchmark near its ceiling, or one that only strong models pass, is not linear in the
others. :class:`GPImputer` keeps ``g_j`` as the prior mean and models what it misses,

    z_j = g_j(z_S) + f_j(z_S) + ε,   f_j ~ GP(0, c · RBF_ARD),   ε ~ N(0, σ²_j),

in the source-standardised space, fitted on the source models that report ``j`` and the
selected benchmarks used (one fit per column and pattern of reported selections). The
amplitude ``c``, the length scales and ``σ²_j`` maximise the log marginal likelihood
(scikit-learn's ``GaussianProcessRegressor``; Rasmussen & Williams 2006, ch. 5), so where
the data show no departure from the line ``c`` shrinks and the prediction is the Gaussian
conditional's. The 90 % interval is the GP's predictive distribution of a new
observation (noise included), its width scaled by a conformal factor: the
``⌈(n + 1)·level⌉``-th smallest of the ``n`` source models' leave-one-out scores
``|y_i − μ₋ᵢ| / σ₋ᵢ`` (closed form for a GP, Rasmussen & Williams 2006, sec. 5.4.2)
over the normal quantile, because the marginal-likelihood fit reads its noise off the
same models. Those scores still miss that the conditional mean ``g_j`` was fitted on the
same models too, and the intervals alone under-cover held-out models (Table 4 protocol:
0.87 on MTEB, 0.89 on MERGED at nominal 0.90), so by default (``calibration_folds=5``)
all SDs are also multiplied by the cross-conformal factor of
:class:`~coreval.prediction.gaussian_imputer.GaussianImputer`: the method re-run without
each fold of the source models, selection included, scores the fold's models
(``benchmarks/results/gp_imputer.md``). A column with fewer than ``min_rows`` usable source
models keeps the Gaussian conditional's mean and interval.

References
----------
Rasmussen, C. E. & Williams, C. K. I. (2006). Gaussian Processes for Machine Learning. MIT
Press.
"""

from __future__ import annotations

import warnings

import numpy as np
from scipy.linalg import solve_triangular
from sklearn.exceptions import ConvergenceWarning
from sklearn.gaussian_process import GaussianProcessRegressor
from sklearn.gaussian_process.kernels import RBF, ConstantKernel, WhiteKernel

from coreval.base import Coreset
from coreval.base.conformal import normal_sd_factor
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.gaussian.em import PROTOCOL_TOL
from coreval.prediction.gaussian_imputer import GaussianImputer


class GPImputer(GaussianImputer):
    """The Gaussian conditional mean plus a Gaussian-process correction per benchmark.

    Parameters
    ----------
    min_rows : int
        Fewest source models (reporting the column and the selected benchmarks used) that
        a column's GP is fitted on; below it the column keeps the Gaussian conditional.
    calibration_folds : int, optional
        Folds of the source models for the cross-conformal factor (module docstring);
        None keeps the leave-one-out-scaled GP intervals.
    seed : int
        Seed of the calibration folds and of the optimiser's restarts (none are made).
    **gaussian
        The options of :class:`~coreval.prediction.gaussian_imputer.GaussianImputer`
        (``level``, ``ridge``, the correlation estimate's options).

    Attributes
    ----------
    gps_ : dict
        ``(kept column, pattern of selected benchmarks used) -> (fitted GP, interval
        factor)`` or None (too few source models); filled as patterns are met. The factor
        multiplies the GP's predictive SD (module docstring).
    """

    interval_kind = "gp-loo-conformal"

    def __init__(self, level: float = 0.9, ridge: float = 0.01, *, min_rows: int = 10,
                 seed: int = 0, clip: float | None = 10.0, estimator: str = "auto",
                 release: str = "head", max_iter: int | None = None, eps: float | None = None,
                 shrinkage: float | str | None = None, tol: float = PROTOCOL_TOL,
                 min_observed: int = 2, transform: str = "none", unit_diagonal: bool = False,
                 n_threads: int | None = 1, calibration_folds: int | None = 5) -> None:
        super().__init__(level, ridge, clip=clip, estimator=estimator, release=release,
                         max_iter=max_iter, eps=eps, shrinkage=shrinkage, tol=tol,
                         min_observed=min_observed, transform=transform,
                         unit_diagonal=unit_diagonal, n_threads=n_threads,
                         calibration_folds=calibration_folds, seed=seed)
        self.min_rows = min_rows

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if int(self.min_rows) < 3:
            raise ValidationError(f"min_rows must be at least 3, got {self.min_rows}")
        super()._fit(source, coreset)
        est = self.estimate_
        self.source_z_ = est.standardization.forward(source.values[:, est.columns])
        if self.clip is not None:
            self.source_z_ = np.clip(self.source_z_, -self.clip, self.clip)
        self.source_sel_z_, _ = self._standardized_coreset(source.values[:, coreset.indices])
        self.gps_: dict[tuple[int, tuple[bool, ...]], GaussianProcessRegressor | None] = {}

    def _gp(self, k: int, pattern: np.ndarray, w: np.ndarray
            ) -> tuple[GaussianProcessRegressor, float] | None:
        """The GP of kept column ``k`` on the selected benchmarks marked in ``pattern``,
        fitted to what the conditional mean ``w · z`` leaves, and its interval factor."""
        key = (int(k), tuple(bool(p) for p in pattern))
        if key not in self.gps_:
            x = self.source_sel_z_[:, pattern]
            y = self.source_z_[:, k]
            rows = np.isfinite(y) & np.isfinite(x).all(axis=1)
            gp = None
            if rows.sum() >= int(self.min_rows):
                kernel = (ConstantKernel(0.1) * RBF(length_scale=np.ones(x.shape[1]))
                          + WhiteKernel(0.1))
                gp = GaussianProcessRegressor(kernel, random_state=self.seed)
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", ConvergenceWarning)
                    gp.fit(x[rows], y[rows] - x[rows] @ w)
                gp = (gp, _loo_factor(gp, self.level))
            self.gps_[key] = gp
        return self.gps_[key]

    def _refine(self, zp: np.ndarray, pattern: np.ndarray, w: np.ndarray, mean: np.ndarray,
                sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Add each column's GP correction to the conditional ``mean`` and take its
        (scaled) predictive SD, for the models ``zp`` reporting the selections in
        ``pattern``; the columns they report keep theirs."""
        used_kept = self.kept_[self.coreset_.indices][pattern]
        for k in np.setdiff1d(np.arange(mean.shape[1]), used_kept):
            fitted = self._gp(k, pattern, w[k])
            if fitted is None:
                continue
            correction, gp_sd = fitted[0].predict(zp, return_std=True)
            mean[:, k] += correction
            sd[:, k] = fitted[1] * gp_sd
        return mean, sd


def _loo_factor(gp: GaussianProcessRegressor, level: float) -> float:
    """Conformal factor of a fitted GP's predictive SD from its leave-one-out scores.

    With ``K`` the training covariance (noise included) and ``α = K⁻¹y``, the leave-one-out
    residual and SD are ``αᵢ / [K⁻¹]ᵢᵢ`` and ``[K⁻¹]ᵢᵢ^(-1/2)`` (Rasmussen & Williams 2006,
    eq. 5.12); the factor is the conformal quantile of ``|residual| / SD`` over the normal
    quantile of ``level``.
    """
    k_inv_diag = np.sum(solve_triangular(gp.L_, np.eye(len(gp.L_)), lower=True) ** 2, axis=0)
    scores = np.abs(gp.alpha_.ravel()) / np.sqrt(k_inv_diag)
    return normal_sd_factor(scores, level)
