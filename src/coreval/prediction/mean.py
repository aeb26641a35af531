"""Plain (or weighted) mean of the coreset responses with a split-conformal interval."""

from __future__ import annotations

import numpy as np

from coreval.base import Coreset, Prediction, Predictor
from coreval.base.conformal import split_conformal_interval
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


class MeanPredictor(Predictor):
    """Predict the summary score as the mean of the coreset responses.

    Without weights this is the ``random`` baseline of the mRMR paper (the
    sample mean of randomly chosen items); with ``coreset.weights`` (anchor
    points: cluster-size fractions) the prediction is ``Σᵢ wᵢ xᵢ``.

    Because nothing is fitted, the source models' residuals ``yᵢ − ŷᵢ`` form a
    valid calibration set, and the interval is split conformal (Lei et al. 2018):
    exact finite-sample coverage ≥ ``level`` for a target model exchangeable with
    the source models.

    Parameters
    ----------
    level : float
        Nominal coverage of the interval.

    Attributes
    ----------
    weights_ : ndarray or None
        The coreset weights used (None = plain mean).
    residuals_ : ndarray
        Calibration residuals ``yᵢ − ŷᵢ`` on the source models.

    References
    ----------
    Lei, J., G'Sell, M., Rinaldo, A., Tibshirani, R. J. & Wasserman, L. (2018).
    "Distribution-free predictive inference for regression". *JASA* 113(523).
    Vivek, R. et al. (2024). "Anchor Points: Benchmarking Models with Much Fewer Examples".
    """

    def __init__(self, level: float = 0.9) -> None:
        self.level = level

    def _estimate(self, x: np.ndarray) -> np.ndarray:
        if self.weights_ is None:
            return x.mean(axis=1)
        return x @ self.weights_

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if not (0.0 < float(self.level) < 1.0):
            raise ValidationError(f"level must be in (0, 1), got {self.level!r}")
        self.weights_ = None if coreset.weights is None else np.asarray(coreset.weights, float)
        if self.weights_ is not None and not np.isfinite(self.weights_).all():
            raise ValidationError("MeanPredictor got non-finite coreset weights")
        x = source.values[:, coreset.indices]
        y = source.summary_scores()
        ok = ~np.isnan(x).any(axis=1) & np.isfinite(y)
        if ok.sum() < 2:
            raise ValidationError(
                f"MeanPredictor needs at least 2 source models with complete coreset scores, "
                f"got {int(ok.sum())}"
            )
        self.residuals_ = y[ok] - self._estimate(x[ok])
        self.clip_ = bool(source.is_binary)

    def _predict(self, x: np.ndarray) -> Prediction:
        mean = self._estimate(x)
        lower, upper = split_conformal_interval(mean, self.residuals_, self.level)
        if self.clip_:
            mean, lower, upper = (np.clip(a, 0.0, 1.0) for a in (mean, lower, upper))
        return Prediction(mean=mean, lower=lower, upper=upper, level=float(self.level),
                          interval="split-conformal")
