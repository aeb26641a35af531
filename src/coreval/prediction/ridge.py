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
from sklearn.metrics.pairwise import polynomial_kernel

from coreval.base import Coreset, Prediction, Predictor
from coreval.base.conformal import jackknife_plus_interval
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.regression import alpha_grid, kernel_ridge_loo_batch

_INTERVALS = ("jackknife+", "none")


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
    The coreset is held fixed as well: when the selector looked at the source
    models (anchor points, search, lasso, mRMR), the left-out model helped choose
    the coreset, its leave-one-out residual is optimistic and the interval can
    under-cover (measured in ``benchmarks/results/baselines.md``: 0.45-0.85 for
    anchor-points+ / ++ at nominal 0.9, back to ≥ 0.9 when the selection is redone in
    every fold). For a coreset chosen without the scores (random) the guarantee of
    Barber et al. (≥ 1 − 2α, typically ≈ 1 − α) holds for exchangeable models.

    Attributes
    ----------
    model_ : estimator
        The regressor fitted on all source models.
    alpha_ : float
        The chosen penalty.
    loo_models_ : list of estimators
        ``μ̂₋ᵢ``, fitted without source model ``i`` (generic path; ridge and kernel
        ridge store closed-form leave-one-out coefficients instead).
    loo_residuals_ : ndarray
        ``|yᵢ − μ̂₋ᵢ(xᵢ)|`` (NaN when ``interval="none"``).
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
        self.loo_residuals_ = np.full(len(y), np.nan)
        if self.interval == "jackknife+":
            self.loo_residuals_ = np.abs(self._fit_loo(x, y))

    def _fit_loo(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Refit without each source model in turn; return ``yᵢ − μ̂₋ᵢ(xᵢ)``.

        The generic path refits :meth:`_loo_estimator` n times; ridge and kernel
        ridge override it with exact closed forms.
        """
        self.loo_models_: list[Any] = []
        residuals = np.empty(len(y))
        keep = np.ones(len(y), dtype=bool)
        for i in range(len(y)):
            keep[i] = False
            est = clone(self._loo_estimator()).fit(x[keep], y[keep])
            keep[i] = True
            residuals[i] = y[i] - est.predict(x[i:i + 1]).ravel()[0]
            self.loo_models_.append(est)
        return residuals

    def _loo_predictions(self, x: np.ndarray) -> np.ndarray:
        """``μ̂₋ᵢ(x)`` for every new point (rows) and left-out source model (columns)."""
        return np.column_stack([np.asarray(m.predict(x), dtype=float).ravel()
                                for m in self.loo_models_])

    def _predict(self, x: np.ndarray) -> Prediction:
        mean = np.asarray(self.model_.predict(x), dtype=float).ravel()
        if self.interval == "jackknife+":
            lower, upper = jackknife_plus_interval(self._loo_predictions(x), self.loo_residuals_,
                                                   self.level)
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

    compare_random_coreset = True

    def __init__(self, alphas=None, level: float = 0.9, interval: str = "jackknife+") -> None:
        self.alphas = alphas
        self.level = level
        self.interval = interval

    def _fit_full(self, x: np.ndarray, y: np.ndarray, source: ScoreMatrix) -> RidgeCV:
        grid = alpha_grid(self.alphas, source)
        model = RidgeCV(alphas=grid, fit_intercept=True).fit(x, y)
        self.alpha_ = float(model.alpha_)
        return model

    def _loo_estimator(self) -> Ridge:
        return Ridge(alpha=self.alpha_, fit_intercept=True)

    def _fit_loo(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Exact leave-one-out ridge fits in closed form (Sherman-Morrison downdate).

        With ``Z = [1, X]``, ``A = ZᵀZ + diag(0, λ, …, λ)`` (unpenalised intercept,
        as ``Ridge(fit_intercept=True)``) and ``θ = A⁻¹Zᵀy``, removing model ``i``
        gives ``θ₋ᵢ = θ − A⁻¹zᵢ eᵢ / (1 − hᵢᵢ)`` with ``eᵢ = yᵢ − zᵢᵀθ`` and
        ``hᵢᵢ = zᵢᵀA⁻¹zᵢ``; the leave-one-out residual is ``eᵢ / (1 − hᵢᵢ)``. Hand-written
        because scikit-learn exposes the leave-one-out errors (``RidgeCV``) but not
        the leave-one-out coefficients that jackknife+ needs at new points.
        """
        z = np.column_stack([np.ones(len(y)), x])
        penalty = np.full(z.shape[1], self.alpha_)
        penalty[0] = 0.0
        a_inv_zt = np.linalg.solve(z.T @ z + np.diag(penalty), z.T)   # A⁻¹Zᵀ, (p+1, n)
        theta = a_inv_zt @ y
        h = np.einsum("ij,ji->i", z, a_inv_zt)
        loo_resid = (y - z @ theta) / (1.0 - h)
        self.loo_coef_ = theta[:, None] - a_inv_zt * loo_resid[None, :]  # column i = θ₋ᵢ
        return loo_resid

    def _loo_predictions(self, x: np.ndarray) -> np.ndarray:
        return self.loo_coef_[0][None, :] + x @ self.loo_coef_[1:]


class KernelRidgePredictor(LooRegressionPredictor):
    """Polynomial kernel ridge on the coreset (the mRMR paper's ``X++``).

    ``GridSearchCV(KernelRidge(kernel="poly", degree, coef0, gamma=None), {"alpha": grid},
    cv=LeaveOneOut(), scoring="neg_mean_squared_error")``, refitted on all source
    models with the best λ (the leave-one-out errors in closed form,
    :func:`coreval.regression.kernel_ridge_loo_batch`). The kernel is ``(γ⟨x, x'⟩ + coef0)^degree`` with
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

    compare_random_coreset = True

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
        if isinstance(self.degree, bool) or not isinstance(self.degree, int | np.integer) \
                or self.degree < 1:
            raise ValidationError(f"kernel degree must be a positive integer, got "
                                  f"{self.degree!r}")
        grid = alpha_grid(self.alphas, source)
        # λ by the closed-form leave-one-out of the batched engine: the choice of
        # GridSearchCV(..., cv=LeaveOneOut()) (tests/test_baselines.py) from one
        # eigendecomposition instead of n × |grid| fits through scikit-learn's machinery
        _, chosen = kernel_ridge_loo_batch(x[None], y, x[None], grid, degree=int(self.degree),
                                           coef0=float(self.coef0))
        self.alpha_ = float(chosen[0])
        return self._kernel_ridge(self.alpha_).fit(x, y)

    def _loo_estimator(self) -> KernelRidge:
        return self._kernel_ridge(self.alpha_)

    def _kernel(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return polynomial_kernel(a, b, degree=self.degree, gamma=None, coef0=self.coef0)

    def _fit_loo(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Exact leave-one-out kernel ridge fits in closed form.

        With ``G = (K + λI)⁻¹`` and ``a = Gy``, the model fitted without point ``i``
        has dual coefficients ``a − G[:, i] aᵢ / Gᵢᵢ`` (block inversion; the ``i``-th
        entry is 0) and leave-one-out residual ``aᵢ / Gᵢᵢ`` (Rifkin & Lippert 2007,
        "Notes on regularized least squares"). Hand-written for the same reason as
        the ridge case: scikit-learn has no leave-one-out coefficients.
        """
        self.x_train_ = x
        g = np.linalg.inv(self._kernel(x, x) + self.alpha_ * np.eye(len(y)))
        a = g @ y
        loo_resid = a / np.diag(g)
        self.loo_dual_ = a[:, None] - g * loo_resid[None, :]             # column i: fold i
        return loo_resid

    def _loo_predictions(self, x: np.ndarray) -> np.ndarray:
        return self._kernel(x, self.x_train_) @ self.loo_dual_
