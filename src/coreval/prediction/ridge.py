"""The ``X+`` and ``X++`` refits: ridge and polynomial kernel ridge on the coreset.

Both regress each source model's summary score on its coreset responses and
choose the penalty λ by leave-one-out over a small grid, as in the mRMR paper
and its reference code (sambowyer/mrmr_eval, ``RidgeCV`` / ``GridSearchCV(KernelRidge)``).
Intervals are jackknife+ (Barber et al. 2021) from leave-one-out refits.

References
----------
Bowyer, S. et al. "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression" (mRMR paper), Section 3: ridge (``+``) and degree-2 polynomial kernel
ridge with c = 1 (``++``) on the selected items.

Barber, R. F., Candès, E. J., Ramdas, A. & Tibshirani, R. J. (2021).
"Predictive inference with the jackknife+". *Annals of Statistics* 49(1), 486-507.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.base import RegressorMixin, clone
from sklearn.kernel_ridge import KernelRidge
from sklearn.linear_model import Ridge, RidgeCV
from sklearn.model_selection import GridSearchCV, LeaveOneOut

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.prediction.base import Prediction, Predictor
from coreval.prediction.conformal import jackknife_plus_interval
from coreval.selection.base import Coreset

_INTERVALS = ("jackknife+", "none")


def default_alphas(source: ScoreMatrix) -> np.ndarray:
    """The reference λ grid: ``logspace(-1, 1, 5)`` for binary scores, else ``logspace(-2, 2, 9)``."""
    return np.logspace(-1, 1, 5) if source.is_binary else np.logspace(-2, 2, 9)


def coreset_design(source: ScoreMatrix, coreset: Coreset, who: str) -> tuple[np.ndarray, np.ndarray]:
    """Features ``X = source[:, coreset]`` and target ``y = source.summary_scores()``.

    Raises
    ------
    ValidationError
        When a coreset column has a missing source score (regressions need complete rows).
    """
    x = source.values[:, coreset.indices]
    if np.isnan(x).any():
        raise ValidationError(
            f"{who} needs complete source scores on the coreset; "
            f"{int(np.isnan(x).sum())} are missing"
        )
    y = source.summary_scores()
    if not np.isfinite(y).all():
        raise ValidationError(f"{who}: some source models have no summary score")
    return x, y


class LooRegressionPredictor(Predictor):
    """Base of regressors on the coreset with jackknife+ intervals.

    Subclasses implement :meth:`_fit_full` (fit on all source models, choose λ,
    return the fitted estimator) and :meth:`_loo_estimator` (an unfitted estimator
    with the chosen λ, refitted once per left-out source model). λ is **not**
    re-selected inside each leave-one-out fold: the folds reuse the λ chosen on
    all source models, so the jackknife+ interval is conditional on that choice.

    Attributes
    ----------
    model_ : estimator
        The regressor fitted on all source models.
    alpha_ : float
        The chosen penalty.
    loo_models_ : list of estimators
        ``μ̂₋ᵢ``, fitted without source model ``i``.
    loo_residuals_ : ndarray
        ``|yᵢ − μ̂₋ᵢ(xᵢ)|``.
    clip_ : bool
        Whether predictions are clipped to [0, 1] (binary source scores).
    """

    min_source_models = 3
    level: float
    interval: str

    def _fit_full(self, x: np.ndarray, y: np.ndarray, source: ScoreMatrix) -> RegressorMixin:
        raise NotImplementedError  # pragma: no cover

    def _loo_estimator(self) -> RegressorMixin:
        raise NotImplementedError  # pragma: no cover

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if self.interval not in _INTERVALS:
            raise ValidationError(
                f"{type(self).__name__}: interval must be one of {_INTERVALS}, got {self.interval!r}"
            )
        if not (0.0 < float(self.level) < 1.0):
            raise ValidationError(f"level must be in (0, 1), got {self.level!r}")
        x, y = coreset_design(source, coreset, type(self).__name__)
        self.clip_ = bool(source.is_binary)
        self.model_ = self._fit_full(x, y, source)
        self.loo_models_: list[Any] = []
        residuals = np.empty(len(y))
        if self.interval == "jackknife+":
            keep = np.ones(len(y), dtype=bool)
            for i in range(len(y)):
                keep[i] = False
                est = clone(self._loo_estimator()).fit(x[keep], y[keep])
                keep[i] = True
                residuals[i] = y[i] - est.predict(x[i:i + 1]).ravel()[0]
                self.loo_models_.append(est)
        self.loo_residuals_ = np.abs(residuals) if self.loo_models_ else residuals * np.nan

    def _predict(self, x: np.ndarray) -> Prediction:
        mean = np.asarray(self.model_.predict(x), dtype=float).ravel()
        if self.interval == "jackknife+":
            mu = np.column_stack([np.asarray(m.predict(x), dtype=float).ravel()
                                  for m in self.loo_models_])
            lower, upper = jackknife_plus_interval(mu, self.loo_residuals_, self.level)
            kind = "jackknife+"
        else:
            lower, upper, kind = np.full_like(mean, np.nan), np.full_like(mean, np.nan), "none"
        if self.clip_:
            mean, lower, upper = (np.clip(a, 0.0, 1.0) for a in (mean, lower, upper))
        return Prediction(mean=mean, lower=lower, upper=upper, level=float(self.level),
                          interval=kind)


class RidgePredictor(LooRegressionPredictor):
    """Ridge regression of the summary score on the coreset (the mRMR paper's ``X+``).

    ``sklearn.linear_model.RidgeCV`` with an unpenalised intercept and efficient
    leave-one-out (``cv=None``) choice of λ, exactly as the reference code.

    Parameters
    ----------
    alphas : array-like, optional
        λ grid. Default: ``logspace(-1, 1, 5)`` for binary sources, else ``logspace(-2, 2, 9)``.
    level : float
        Nominal coverage of the interval.
    interval : {"jackknife+", "none"}
        ``"jackknife+"``: leave-one-out refits with the chosen λ (not re-selected per fold).
    """

    def __init__(self, alphas=None, level: float = 0.9, interval: str = "jackknife+") -> None:
        self.alphas = alphas
        self.level = level
        self.interval = interval

    def _fit_full(self, x: np.ndarray, y: np.ndarray, source: ScoreMatrix) -> RidgeCV:
        grid = default_alphas(source) if self.alphas is None else np.asarray(self.alphas, float)
        model = RidgeCV(alphas=grid, fit_intercept=True).fit(x, y)
        self.alpha_ = float(model.alpha_)
        return model

    def _loo_estimator(self) -> Ridge:
        return Ridge(alpha=self.alpha_, fit_intercept=True)


class KernelRidgePredictor(LooRegressionPredictor):
    """Polynomial kernel ridge on the coreset (the mRMR paper's ``X++``).

    ``GridSearchCV(KernelRidge(kernel="poly", degree, coef0, gamma=None), {"alpha": grid},
    cv=LeaveOneOut(), scoring="neg_mean_squared_error")``, refitted on all source
    models with the best λ. The kernel is ``(γ⟨x, x'⟩ + coef0)^degree`` with
    scikit-learn's default γ = 1 / n_features; there is no separate intercept.

    Parameters
    ----------
    degree : int
        Polynomial degree (2 in the paper).
    coef0 : float
        Kernel offset c (1 in the paper).
    alphas : array-like, optional
        λ grid (same defaults as :class:`RidgePredictor`).
    level : float
        Nominal coverage of the interval.
    interval : {"jackknife+", "none"}
        ``"jackknife+"``: leave-one-out refits with the chosen λ (not re-selected per fold).
    """

    def __init__(self, degree: int = 2, coef0: float = 1.0, alphas=None, level: float = 0.9,
                 interval: str = "jackknife+") -> None:
        self.degree = degree
        self.coef0 = coef0
        self.alphas = alphas
        self.level = level
        self.interval = interval

    def _kernel_ridge(self, alpha: float = 1.0) -> KernelRidge:
        return KernelRidge(alpha=alpha, kernel="poly", degree=self.degree, coef0=self.coef0,
                           gamma=None)

    def _fit_full(self, x: np.ndarray, y: np.ndarray, source: ScoreMatrix) -> KernelRidge:
        grid = default_alphas(source) if self.alphas is None else np.asarray(self.alphas, float)
        search = GridSearchCV(self._kernel_ridge(), {"alpha": list(grid)}, cv=LeaveOneOut(),
                              scoring="neg_mean_squared_error").fit(x, y)
        self.alpha_ = float(search.best_params_["alpha"])
        return search.best_estimator_

    def _loo_estimator(self) -> KernelRidge:
        return self._kernel_ridge(self.alpha_)
