"""Prediction with the lasso chosen by the lasso selector (the ``lasso`` baseline).

References
----------
Bowyer, S. et al. "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression": the ``lasso`` baseline (reference code ``LassoPred``).
"""

from __future__ import annotations

import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.linear_model import Lasso

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.prediction.ridge import LooRegressionPredictor


class LassoPredictor(LooRegressionPredictor):
    """Predict with the selector's lasso model (no refit); jackknife+ interval.

    The point prediction is ``intercept + x @ coef`` with the coefficients that
    :class:`~coreval.selection.lasso.LassoSelector` stored in ``coreset.linear_fit`` (the reference predicts with
    that same model). For the jackknife+ interval each source model is left out
    in turn and a lasso with the selector's ``alpha`` is refitted on the coreset
    columns only; restricting to the coreset keeps the refits cheap and is exact
    for the full-data fit (the lasso restricted to its own support has the same
    solution), but the folds cannot pick up new items. ``alpha`` is not
    re-selected inside each fold.

    Parameters
    ----------
    level : float
        Nominal coverage of the interval.
    max_iter : int
        Iteration limit of the leave-one-out lasso refits.
    interval : {"jackknife+", "none"}
        Interval kind.
    """

    def __init__(self, level: float = 0.9, max_iter: int = 10000,
                 interval: str = "jackknife+") -> None:
        self.level = level
        self.max_iter = max_iter
        self.interval = interval

    def _fit_full(self, x: np.ndarray, y: np.ndarray, source: ScoreMatrix) -> Lasso:
        fit = self.coreset_.linear_fit
        if fit is None:
            raise ValidationError(
                "LassoPredictor needs a coreset made by LassoSelector (coreset.linear_fit)")
        coef = np.asarray(fit.coef, dtype=float)
        if coef.shape != (x.shape[1],):
            raise ValidationError(f"{coef.shape[0]} lasso coefficients for {x.shape[1]} columns")
        self.alpha_ = float(fit.alpha)
        model = Lasso(alpha=self.alpha_, max_iter=self.max_iter)
        # Use the selector's coefficients as they are: the reference predicts with that model.
        model.coef_ = coef
        model.intercept_ = float(fit.intercept)
        model.n_features_in_ = x.shape[1]
        return model

    def _loo_estimator(self) -> Lasso:
        return _QuietLasso(alpha=self.alpha_, max_iter=self.max_iter)


class _QuietLasso(Lasso):
    """A Lasso whose fit does not warn when a leave-one-out refit stops at ``max_iter``."""

    def fit(self, X, y, sample_weight=None, check_input=True):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return super().fit(X, y, sample_weight=sample_weight, check_input=check_input)
