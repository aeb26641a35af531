"""The result of a predictor: point predictions with a central interval."""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy.stats import norm

from coreval.errors import ValidationError


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
        How the interval was made: ``"posterior"`` (credible interval from
        draws), ``"jackknife+"`` (Barber et al. 2021), ``"split-conformal"``,
        ``"gaussian-conditional"``, ``"gp-loo-conformal"`` (a Gaussian-process
        predictive scaled by its leave-one-out conformal factor), ``"cv-residual"``
        (split conformal on the pipeline's out-of-fold residuals) or ``"none"``; an
        imputer's ``"+cross-conformal"`` suffix: scaled by the cross-conformal factor of
        its ``calibration_folds``.
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

    def to_frame(self, index=None) -> pd.DataFrame:
        """One row per predicted model: ``mean, lower, upper, width, level, interval``.

        Parameters
        ----------
        index : sequence, optional
            Row labels (e.g. the models' ids); default ``0..n-1``. Predictions of whole
            columns (``columns`` set) get one row per model and column, in long layout.
        """
        mean = np.atleast_1d(np.asarray(self.mean, dtype=float))
        lower = np.broadcast_to(np.asarray(self.lower, dtype=float), mean.shape)
        upper = np.broadcast_to(np.asarray(self.upper, dtype=float), mean.shape)
        if mean.ndim == 1:
            frame = pd.DataFrame({"mean": mean, "lower": lower, "upper": upper},
                                 index=index)
        else:
            rows = np.arange(mean.shape[0]) if index is None else np.asarray(index)
            cols = (np.arange(mean.shape[1]) if self.columns is None
                    else np.asarray(self.columns))
            frame = pd.DataFrame({"model": np.repeat(rows, mean.shape[1]),
                                  "column": np.tile(cols, mean.shape[0]),
                                  "mean": mean.ravel(), "lower": lower.ravel(),
                                  "upper": upper.ravel()})
        frame["width"] = frame["upper"] - frame["lower"]
        frame["level"] = float(self.level)
        frame["interval"] = self.interval
        return frame

    def normal_sd(self) -> np.ndarray:
        """Standard deviation of the normal whose central ``level`` interval is this one.

        ``sd = (upper - lower) / (2 z_{(1 + level) / 2})``; infinite bounds give ``inf``.
        """
        z = norm.ppf(0.5 + self.level / 2)
        with np.errstate(invalid="ignore"):
            return (self.upper - self.lower) / (2.0 * z)

    def at_level(self, level: float) -> Prediction:
        """The same prediction with its interval at another nominal ``level``.

        From the posterior draws (equal-tailed quantiles) when there are draws;
        otherwise a normal approximation with :meth:`normal_sd`
        (``interval="normal-approx"``, unless ``level`` is this prediction's own).
        """
        level = float(level)
        if not 0.0 < level < 1.0:
            raise ValidationError(f"interval level must be in (0, 1), got {level!r}")
        if self.draws is not None:
            alpha = 1.0 - level
            lower, upper = np.quantile(np.asarray(self.draws, float),
                                       [alpha / 2, 1 - alpha / 2], axis=0)
            return replace(self, lower=lower, upper=upper, level=level)
        if np.isclose(level, self.level):
            return self
        return self.normal_approximation(level)

    def normal_approximation(self, level: float) -> Prediction:
        """The central ``level`` interval of a normal with sd :meth:`normal_sd` around ``mean``."""
        half = self.normal_sd() * norm.ppf(0.5 + float(level) / 2)
        return replace(self, lower=self.mean - half, upper=self.mean + half, level=float(level),
                       interval="normal-approx", draws=None)
