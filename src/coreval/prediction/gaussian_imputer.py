"""Gaussian conditional imputation of unselected benchmarks with predictive intervals.

Smola, "Submodular Benchmark Selection" (2026), Section 5 / protocol section 6: in the
training-standardised space, a new model's unselected benchmarks ``e`` are predicted from
the selected benchmarks ``a`` it actually has by

    z_e = W z_a,   W = R_ea (R_aa + ridge I)^{-1}           (ridge = 0.01)

with ``R`` the source correlation; the standardisation is undone afterwards. The interval
of each predicted benchmark is the central ``level`` interval of the Gaussian conditional
``N(W z_a, diag(R_ee - W R_ae))`` mapped back to raw scores ("gaussian-conditional").

With ``calibration_folds`` the predictive SDs are also multiplied by one cross-conformal
factor: the method is re-run without each of ``calibration_folds`` folds of the source
models (selection included when a pipeline fitted it, :func:`coreval.pipeline.fit_method`;
a predictor fitted on its own keeps its coreset), predicts the held-out models' unselected
benchmarks from their selected ones, and the factor is the split-conformal quantile of
their standardised scores ``|z − μ| / σ`` over the normal quantile of ``level`` (Vovk
2015, cross-conformal; Lei et al. 2018). Every source model calibrates once, scored by a
fit that did not see it, as a new model is.

References
----------
Vovk, V. (2015). Cross-conformal predictors. *Annals of Mathematics and Artificial
Intelligence* 74, 9-28.

Lei, J., G'Sell, M., Rinaldo, A., Tibshirani, R. J. & Wasserman, L. (2018).
Distribution-free predictive inference for regression. *JASA* 113(523), 1094-1111.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from scipy.stats import norm
from sklearn.model_selection import KFold

from coreval.base import Coreset, Prediction, Predictor
from coreval.base.conformal import normal_sd_factor
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.gaussian.correlation import estimate_options, shared_estimate
from coreval.gaussian.em import PROTOCOL_TOL
from coreval.gaussian.standardize import Standardization


class GaussianImputer(Predictor):
    """Impute every benchmark of new models from their scores on the selected benchmarks.

    Parameters
    ----------
    level : float
        Nominal coverage of the per-benchmark intervals (default 0.9).
    ridge : float
        Ridge added to ``R_aa`` (0.01 as in the reference).
    clip : float or None
        Standardised inputs are clipped to ``[-clip, clip]`` (the reference clips test
        z-scores at 10); None disables.
    estimator, release, max_iter, eps, shrinkage, tol, min_observed, transform,
    unit_diagonal, n_threads
        Correlation estimate on the source models (see
        :func:`coreval.gaussian.correlation.estimate_correlation`). A Gaussian selector
        given the same :class:`~coreval.base.FitCache` and options shares its estimate.
    calibration_folds : int, optional
        Scale the predictive SDs by the cross-conformal factor of this many folds of the
        source models (module docstring); None keeps the model's own intervals.
    seed : int
        Seed of the calibration folds.

    Attributes
    ----------
    estimate_ : CorrelationEstimate
        Source correlation and standardisation.
    mean_, scale_ : ndarray of shape (n_columns,)
        Standardisation of every source column in the (transformed) score space: observed
        mean and floored std (NaN for dropped columns). ``(y - mean_) / scale_`` is the
        training-standardised space in which the protocol computes R².
    upper_ : ndarray of shape (n_columns,)
        Column maxima the ``"logit"`` transform divides by (NaN otherwise).
    columns_ : ndarray of str
        Source column ids (the columns of ``Prediction.mean``).
    calibration_factor_ : float
        The factor the predictive SDs are multiplied by (1 without ``calibration_folds``).
    calibration_scores_ : ndarray
        The held-out source models' standardised scores it was computed from (empty
        without ``calibration_folds``).

    Notes
    -----
    ``Prediction.mean`` has shape (n_models, n_columns): every column is predicted; a
    selected benchmark the model has keeps its observed value (zero-width interval), a
    selected benchmark it lacks is predicted like an unselected one. A model with none of the
    selected benchmarks gets a NaN row (the reference skips it). Dropped columns (too few
    source observations) are NaN.

    References
    ----------
    Smola, A. (2026). Submodular Benchmark Selection, code ``impute_and_evaluate``.
    """

    task = "impute"
    allows_missing_responses = True
    #: ``Prediction.interval`` of the predictions.
    interval_kind = "gaussian-conditional"

    def __init__(self, level: float = 0.9, ridge: float = 0.01, *, clip: float | None = 10.0,
                 estimator: str = "auto", release: str = "head", max_iter: int | None = None,
                 eps: float | None = None, shrinkage: float | str | None = None,
                 tol: float = PROTOCOL_TOL, min_observed: int = 2, transform: str = "none",
                 unit_diagonal: bool = False, n_threads: int | None = 1,
                 calibration_folds: int | None = None, seed: int = 0) -> None:
        self.level = level
        self.ridge = ridge
        self.clip = clip
        self.estimator = estimator
        self.release = release
        self.max_iter = max_iter
        self.eps = eps
        self.shrinkage = shrinkage
        self.tol = tol
        self.min_observed = min_observed
        self.transform = transform
        self.unit_diagonal = unit_diagonal
        self.n_threads = n_threads
        self.calibration_folds = calibration_folds
        self.seed = seed

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValidationError(f"level must be in (0, 1), got {self.level}")
        if self.ridge < 0:
            raise ValidationError(f"ridge must be non-negative, got {self.ridge}")
        est = shared_estimate(source, estimate_options(self), self.cache_)
        self.estimate_ = est
        n = source.n_items
        self.columns_ = source.items
        self.mean_ = np.full(n, np.nan)
        self.scale_ = np.full(n, np.nan)
        self.upper_ = np.full(n, np.nan)  # column maxima of the logit transform
        self.mean_[est.columns] = est.standardization.mean
        self.scale_[est.columns] = est.standardization.std
        if est.standardization.upper is not None:
            self.upper_[est.columns] = est.standardization.upper
        self.kept_ = np.full(n, -1, dtype=np.intp)  # source column -> row of the correlation
        self.kept_[est.columns] = np.arange(len(est.columns))
        self.calibration_factor_ = 1.0
        self.calibration_scores_ = np.zeros(0)
        if self.calibration_folds is not None:
            self.calibration_scores_ = self._cross_fit_scores(source)
            self.calibration_factor_ = self._cross_conformal_factor(self.calibration_scores_)

    def _cross_fit_scores(self, source: ScoreMatrix) -> np.ndarray:
        """Standardised scores ``|z − μ| / σ`` of the source models' unselected observed
        benchmarks, each predicted by the method re-run without the model's fold."""
        folds = int(self.calibration_folds)
        n = source.n_models
        if folds < 2 or n < 2 * folds:
            raise ValidationError(
                f"calibration_folds must be at least 2 and at most half the {n} source "
                f"models, got {self.calibration_folds}; pass calibration_folds=None to keep "
                "the model's own intervals")
        scores = []
        splits = KFold(folds, shuffle=True, random_state=self.seed).split(np.arange(n))
        for train, held in splits:
            coreset, fold = self.refit_(source.take(train), calibration_folds=None)
            values = source.values[held]
            z, usable = fold._standardized_coreset(values[:, coreset.indices])
            mean_z, sd_z = fold._moments(z, usable)
            est = fold.estimate_
            truth = est.standardization.forward(values[:, est.columns])
            unselected = np.ones(len(est.columns), dtype=bool)
            selected = fold.kept_[coreset.indices]
            unselected[selected[selected >= 0]] = False
            cells = np.isfinite(truth) & np.isfinite(mean_z) & (sd_z > 0) & unselected
            scores.append(np.abs(truth - mean_z)[cells] / sd_z[cells])
        return np.concatenate(scores)

    def _cross_conformal_factor(self, scores: np.ndarray) -> float:
        """The factor that makes the ``level`` Gaussian interval cover the conformal
        quantile of ``scores``; 1 (with a warning) when they are too few for ``level``."""
        if len(scores) < math.ceil(1.0 / (1.0 - self.level)):
            warnings.warn(f"{type(self).__name__}: {len(scores)} held-out cells are too few "
                          f"for a {self.level:g} conformal quantile; the model's own "
                          "intervals are kept", stacklevel=3)
            return 1.0
        return normal_sd_factor(scores, self.level)

    def _standardized_coreset(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Coreset scores ``x`` in the standardised space (clipped), and which are usable."""
        sel = self.coreset_.indices
        z = Standardization(self.mean_[sel], self.scale_[sel], self.transform,
                            self.upper_[sel] if self.transform == "logit" else None).forward(x)
        if self.clip is not None:
            z = np.clip(z, -self.clip, self.clip)
        return z, ~np.isnan(z) & (self.kept_[sel] >= 0)

    def _conditional(self, pattern: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Weights ``w`` (n_kept, |a|) and variances of the conditional on the selected
        benchmarks marked in ``pattern``: ``E[z_k | z_a] = w_k · z_a``,
        ``Var = R_kk − w_k · R_ka`` (``R_aa`` with ``ridge`` added)."""
        corr = self.estimate_.correlation
        a = self.kept_[self.coreset_.indices][pattern]  # selection order
        r_aa = corr[np.ix_(a, a)] + self.ridge * np.eye(len(a))
        r_ka = corr[:, a]
        w = np.linalg.solve(r_aa, r_ka.T).T
        return w, np.diag(corr) - (w * r_ka).sum(axis=1)

    def _moments(self, z: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Predictive mean and SD of every kept column (standardised) for coreset scores
        ``z``, one conditional per pattern of ``usable`` selected benchmarks."""
        n_kept = len(self.estimate_.columns)
        mean_z = np.full((len(z), n_kept), np.nan)
        sd_z = np.full((len(z), n_kept), np.nan)
        patterns, inverse = np.unique(usable, axis=0, return_inverse=True)
        inverse = inverse.ravel()
        for g, pattern in enumerate(patterns):
            rows = np.flatnonzero(inverse == g)
            if not pattern.any():
                continue  # no selected benchmark observed: NaN row (skipped by the reference)
            w, var = self._conditional(pattern)
            zp = z[np.ix_(rows, np.flatnonzero(pattern))]
            mean_z[rows], sd_z[rows] = self._refine(zp, pattern, w, zp @ w.T,
                                                    np.tile(np.sqrt(np.maximum(var, 0.0)),
                                                            (len(rows), 1)))
        return mean_z, sd_z * self.calibration_factor_

    def _refine(self, zp: np.ndarray, pattern: np.ndarray, w: np.ndarray, mean: np.ndarray,
                sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The moments of the models ``zp`` that report the selections in ``pattern``;
        the Gaussian conditional's ``mean``, ``sd`` (weights ``w``) as they are here, a
        hook for a correction of them (:class:`~coreval.prediction.gp_imputer.GPImputer`)."""
        return mean, sd

    def _predict(self, x: np.ndarray) -> Prediction:
        est = self.estimate_
        n_models, n = x.shape[0], len(self.columns_)
        sel = self.coreset_.indices
        z, usable = self._standardized_coreset(x)
        mean_z, sd_z = self._moments(z, usable)
        half = norm.ppf(0.5 + self.level / 2.0) * sd_z
        back = est.standardization.inverse
        mean = np.full((n_models, n), np.nan)
        lower = np.full((n_models, n), np.nan)
        upper = np.full((n_models, n), np.nan)
        mean[:, est.columns] = back(mean_z)
        lower[:, est.columns] = back(mean_z - half)
        upper[:, est.columns] = back(mean_z + half)
        # selected benchmarks the model has keep their observed value
        has = ~np.isnan(x) & usable.any(axis=1)[:, None]
        for col in range(len(sel)):
            rows = np.flatnonzero(has[:, col])
            mean[rows, sel[col]] = lower[rows, sel[col]] = upper[rows, sel[col]] = x[rows, col]
        return Prediction(mean=mean, lower=lower, upper=upper, level=self.level,
                          interval=self.interval_kind if self.calibration_folds is None
                          else f"{self.interval_kind}+cross-conformal",
                          columns=self.columns_)
