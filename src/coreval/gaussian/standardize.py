"""The one per-column standardisation of benchmark scores (observed mean, floored std).

Protocol section 3 of Smola, "Submodular Benchmark Selection" (2026) as run by the reference
code (``smolix/benchmark-selection``, ``estimate_corr_em`` of ``code/eval_entropy_vs_mi.py``):
each column is centred on the mean of its observed entries and divided by their standard
deviation (ddof 1), floored at ``0.01 (|mean| + 1)`` so that a constant column does not
explode; optionally on logit-transformed scores (the reference's ``code/eval_logit.py``:
each column divided by its largest observed source score, clipped to ``[1e-3, 1 - 1e-3]``).
Every standardisation in coreval (the Gaussian correlation estimate and imputer, the factor
imputer, the impute metrics) is this one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from coreval.errors import ValidationError

Transform = Literal["none", "logit"]

#: Relative floor of the standard deviation used by the reference code (``0.01 (|mean| + 1)``).
STD_FLOOR = 0.01
#: Clip of max-normalised scores before the logit (``[LOGIT_CLIP, 1 - LOGIT_CLIP]``), and the
#: floor of a column's maximum; the reference's ``EPS`` (``code/eval_logit.py``).
LOGIT_CLIP = 1e-3


@dataclass(frozen=True)
class Standardization:
    """Per-column location and scale: ``z = (x - mean) / std``.

    Attributes
    ----------
    mean, std : ndarray of shape (n_columns,)
        Observed-entry mean and floored standard deviation of each column.
    transform : {"none", "logit"}
        Transform applied to the raw scores before standardising.
    upper : ndarray of shape (n_columns,), optional
        Column maxima the ``"logit"`` transform divides by (from the source scores,
        :func:`column_maxima`); None for ``"none"``.
    """

    mean: np.ndarray
    std: np.ndarray
    transform: str = "none"
    upper: np.ndarray | None = None

    def forward(self, values: np.ndarray) -> np.ndarray:
        """Raw scores -> standardised scores (NaN stays NaN)."""
        return (apply_transform(values, self.transform, self.upper) - self.mean) / self.std

    def inverse(self, z: np.ndarray) -> np.ndarray:
        """Standardised scores -> raw scores (undoes :meth:`forward`)."""
        return invert_transform(np.asarray(z) * self.std + self.mean, self.transform, self.upper)


def column_maxima(values: np.ndarray) -> np.ndarray:
    """Largest observed score of each column, floored at :data:`LOGIT_CLIP` (1 if unobserved)."""
    values = np.asarray(values, dtype=np.float64)
    observed = ~np.isnan(values)
    top = np.where(observed, values, -np.inf).max(axis=0, initial=-np.inf)
    return np.maximum(np.where(observed.any(axis=0), top, 1.0), LOGIT_CLIP)


def apply_transform(values: np.ndarray, transform: str = "none",
                    upper: np.ndarray | None = None) -> np.ndarray:
    """Apply the score transform: identity, or ``logit`` of max-normalised scores.

    ``"logit"`` is the reference's logit-space variant (Smola 2026, ``code/eval_logit.py``):
    ``f = logit(clip(s / u_j, ε, 1 − ε))`` with ``u_j`` the column's largest source score
    and ``ε = 10⁻³``, so it applies to any non-negative scale (fractions, 0–100, ratings).

    Parameters
    ----------
    values : ndarray
        Raw scores, NaN for missing.
    transform : {"none", "logit"}
    upper : ndarray of shape (n_columns,), optional
        Column maxima ``u_j`` (:func:`column_maxima` of the source scores); by default
        those of ``values``.

    Returns
    -------
    ndarray
        Transformed scores.
    """
    values = np.asarray(values, dtype=np.float64)
    if transform == "none":
        return values
    if transform != "logit":
        raise ValidationError(f"transform must be 'none' or 'logit', got {transform!r}")
    observed = values[~np.isnan(values)]
    if observed.size and observed.min() < 0.0:
        raise ValidationError(f"logit transform needs non-negative scores; the smallest is "
                              f"{observed.min():.4g}")
    u = column_maxima(values) if upper is None else np.asarray(upper, dtype=np.float64)
    p = np.clip(values / u, LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(p) - np.log1p(-p)


def invert_transform(values: np.ndarray, transform: str = "none",
                     upper: np.ndarray | None = None) -> np.ndarray:
    """Inverse of :func:`apply_transform`: ``u_j · expit(f)`` for ``"logit"``."""
    if transform == "logit":
        from scipy.special import expit

        return expit(values) * (1.0 if upper is None else np.asarray(upper, dtype=np.float64))
    return np.asarray(values, dtype=np.float64)


def fit_standardization(values: np.ndarray, *, floor: float = STD_FLOOR,
                        transform: str = "none") -> Standardization:
    """Observed-entry mean and standard deviation of each column (protocol section 3).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
        Scores, NaN for missing.
    floor : float
        The standard deviation is floored at ``floor * (|mean| + 1)`` (reference:
        ``col_std_floor = 0.01 * (|mean| + 1)``), so a constant column does not explode.
    transform : {"none", "logit"}
        Transform applied before standardising.

    Returns
    -------
    Standardization
        ``mean`` = observed mean (0 for an unobserved column), ``std`` from the ddof-1
        variance over observed entries (0 for fewer than two entries) with the floor.
    """
    upper = column_maxima(values) if transform == "logit" else None
    x = apply_transform(values, transform, upper)
    obs = ~np.isnan(x)
    cnt = obs.sum(axis=0)
    x0 = np.where(obs, x, 0.0)
    mean = x0.sum(axis=0) / np.maximum(cnt, 1)
    resid = np.where(obs, x - mean, 0.0)
    var = (resid**2).sum(axis=0) / np.maximum(cnt - 1, 1)
    std = np.sqrt(np.maximum(var, (floor * (np.abs(mean) + 1.0)) ** 2))
    return Standardization(mean=mean, std=std, transform=transform, upper=upper)
