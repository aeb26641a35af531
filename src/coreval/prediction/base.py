"""The predictor contract: ``Predictor(...).fit(source, coreset).predict(responses)``.

A predictor maps a new model's responses on the coreset columns to its full
score (``task="score"``) or to every column (``task="impute"``, for benchmark
level data). Every prediction carries a central interval and says how it was
made (``Prediction.interval``): a Bayesian credible interval, a conformal
interval, or a Gaussian conditional interval.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from sklearn.base import BaseEstimator

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.selection.base import Coreset, check_source

IntervalKind = Literal[
    "posterior", "jackknife+", "split-conformal", "gaussian-conditional", "bootstrap",
    "residual-resampling", "binomial", "none",
]


@dataclass(frozen=True)
class Prediction:
    """Predicted scores with a central interval.

    Attributes
    ----------
    mean : ndarray, shape (n_models,) or (n_models, n_columns)
        Point predictions (summary score, or one value per column when imputing).
    lower, upper : ndarray, same shape as ``mean``
        Bounds of the central ``level`` interval.
    level : float
        Nominal coverage of ``[lower, upper]`` (default 0.9).
    interval : str
        How the interval was made, e.g. ``"posterior"`` (credible interval from
        draws), ``"jackknife+"`` (Barber et al. 2021), ``"split-conformal"``,
        ``"gaussian-conditional"``.
    draws : ndarray, shape (n_draws, *mean.shape), optional
        Posterior predictive draws where the method has them.
    columns : ndarray of str, optional
        Column ids of ``mean``'s second axis when imputing.
    """

    mean: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float = 0.9
    interval: str = "none"
    draws: np.ndarray | None = None
    columns: np.ndarray | None = None

    def __post_init__(self) -> None:
        for name in ("mean", "lower", "upper"):
            object.__setattr__(self, name, np.asarray(getattr(self, name), dtype=float))
        if not (self.mean.shape == self.lower.shape == self.upper.shape):
            raise ValidationError(
                f"prediction shapes differ: mean {self.mean.shape}, lower {self.lower.shape}, "
                f"upper {self.upper.shape}"
            )

    @property
    def width(self) -> np.ndarray:
        return self.upper - self.lower


class Predictor(BaseEstimator):
    """Base class of predictors; subclasses implement ``_fit`` and ``_predict``."""

    #: "score": predict the per-model summary score; "impute": predict every column.
    task: str = "score"
    #: Whether target responses on the coreset may contain NaN.
    allows_missing_responses: bool = False
    min_source_models: int = 2
    needs_binary: bool = False

    def fit(self, source: ScoreMatrix, coreset: Coreset) -> Predictor:
        check_source(source, min_models=self.min_source_models, binary=self.needs_binary,
                     who=type(self).__name__)
        if len(coreset) == 0:
            raise ValidationError(f"{type(self).__name__} got an empty coreset")
        self.coreset_ = coreset
        self.n_items_ = source.n_items
        self._fit(source, coreset)
        return self

    def predict(self, responses) -> Prediction:
        """Predict from target responses on the coreset columns.

        Parameters
        ----------
        responses : array-like of shape (n_models, len(coreset)) or (len(coreset),)
            Scores of the new model(s) on the coreset columns, in coreset order.
        """
        if not hasattr(self, "coreset_"):
            raise ValidationError(f"{type(self).__name__} is not fitted; call fit first")
        x = np.asarray(responses, dtype=float)
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2 or x.shape[1] != len(self.coreset_):
            raise ValidationError(
                f"responses have shape {np.shape(responses)}, expected "
                f"(n_models, {len(self.coreset_)}) for this coreset"
            )
        if not self.allows_missing_responses and np.isnan(x).any():
            raise ValidationError(
                f"{type(self).__name__} cannot use missing (NaN) responses on the coreset; "
                f"{int(np.isnan(x).sum())} are missing"
            )
        return self._predict(x)

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, x: np.ndarray) -> Prediction:  # pragma: no cover
        raise NotImplementedError
