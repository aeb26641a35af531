"""Per-column score transforms of BenchPress (Zeng & Papailiopoulos 2026, section 4.1).

Benchmark scores come on native scales: most are percentages in ``[0, 100]``, a few are
Elo-type ratings, dollar amounts or indices. Low-rank completion works in a transformed,
standardised space:

1. each column is classified from its *training* entries: a **percentage** column has every
   observed value in ``[-1, 101]`` (the authors' rule, ``_is_pct_bench`` of
   ``benchpress/methods/transforms.py``); every other column is a **rating** column;
2. percentage columns are mapped to log-odds, ``logit(clip(x, eps, 100 - eps) / 100)`` with
   ``eps = 0.5`` points (the authors' clip), rating columns are left as they are
   (``transform="identity"`` leaves every column as it is);
3. every column is then z-scored with the mean and (population, ``ddof=0``) standard deviation
   of its observed training entries; a standard deviation below ``1e-8`` becomes 1.

The inverse undoes the z-score, maps percentage columns back with ``100 sigmoid(z)`` and clips
them to ``[0, 100]``; rating columns are not clipped. The inverse is monotone increasing, so
interval bounds map to interval bounds.
"""

from __future__ import annotations

from typing import Literal, NamedTuple

import numpy as np

from coreval.errors import ValidationError

Transform = Literal["logit", "identity"]
TRANSFORMS: tuple[str, ...] = ("logit", "identity")

#: A column is a percentage column when its observed training values lie in this range.
PERCENT_RANGE = (-1.0, 101.0)
#: Clip (in score points) before the logit, as in the authors' ``_to_logit``.
LOGIT_EPS = 0.5
#: Standard deviations below this are replaced by 1 (the authors' ``col_stats``).
STD_FLOOR = 1e-8


class ColumnTransform(NamedTuple):
    """A fitted per-column transform ``x -> z`` (see the module docstring).

    Attributes
    ----------
    logit : ndarray of bool, shape (n_columns,)
        Columns mapped to log-odds before standardising.
    percent : ndarray of bool, shape (n_columns,)
        Percentage columns (clipped to ``[0, 100]`` by :func:`inverse`).
    mean, std : ndarray of shape (n_columns,)
        Location and scale of the transformed training entries (0 and 1 for unobserved
        columns).
    eps : float
        Logit clip in score points.
    scale : ndarray of shape (n_columns,)
        Points per unit of the column: 100 for fraction columns (scores in [0, 1],
        ``fractions=True``), else 1.
    """

    logit: np.ndarray
    percent: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    eps: float
    scale: np.ndarray


def percent_columns(values: np.ndarray) -> np.ndarray:
    """Columns whose observed entries all lie in ``[-1, 101]`` (False for empty columns)."""
    observed = ~np.isnan(values)
    low = np.where(observed, values, np.inf).min(axis=0)
    high = np.where(observed, values, -np.inf).max(axis=0)
    return observed.any(axis=0) & (low >= PERCENT_RANGE[0]) & (high <= PERCENT_RANGE[1])


def _to_logit(x: np.ndarray, eps: float) -> np.ndarray:
    p = np.clip(x, eps, 100.0 - eps) / 100.0
    return np.log(p) - np.log1p(-p)


def check_matrix(values: np.ndarray, *, who: str = "lowrank") -> np.ndarray:
    """A 2-D float matrix with NaN for missing entries and no infinities."""
    try:
        arr = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(f"{who}: scores must be numbers: {exc}") from None
    if arr.ndim != 2:
        raise ValidationError(f"{who}: scores must be a 2-D models x benchmarks matrix, "
                              f"got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValidationError(f"{who}: scores contain ±inf; use NaN for missing entries")
    if not (~np.isnan(arr)).any():
        raise ValidationError(f"{who}: the score matrix has no observed entry")
    return arr


def fit_transform(values: np.ndarray, *, transform: Transform = "logit",
                  eps: float = LOGIT_EPS, fractions: bool = False) -> ColumnTransform:
    """Fit the per-column transform on training scores (NaN = unobserved).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
        Training scores on their native scales.
    transform : {"logit", "identity"}
        ``"logit"`` maps percentage columns to log-odds; ``"identity"`` only standardises.
    eps : float
        Logit clip in score points, in ``(0, 50)``.
    fractions : bool
        Treat a column whose observed values all lie in ``[-0.01, 1.01]`` as a percentage
        divided by 100 (accuracies stored as fractions, e.g. MTEB). The authors' rule
        (``False``) would clip such a column to 0.5 points, making it constant.

    Returns
    -------
    ColumnTransform
    """
    values = check_matrix(values)
    if transform not in TRANSFORMS:
        raise ValidationError(f"transform must be one of {TRANSFORMS}, got {transform!r}")
    if not 0.0 < eps < 50.0:
        raise ValidationError(f"eps must be in (0, 50) score points, got {eps}")
    observed = ~np.isnan(values)
    scale = np.ones(values.shape[1])
    if fractions:
        low = np.where(observed, values, np.inf).min(axis=0)
        high = np.where(observed, values, -np.inf).max(axis=0)
        scale[observed.any(axis=0) & (low >= -0.01) & (high <= 1.01)] = 100.0
    percent = percent_columns(values * scale)
    logit = percent & (transform == "logit")
    t = np.where(logit[None, :], _to_logit(values * scale, eps), values)
    observed = ~np.isnan(t)
    count = observed.sum(axis=0)
    safe = np.maximum(count, 1)
    mean = np.where(observed, t, 0.0).sum(axis=0) / safe
    var = np.where(observed, (t - mean) ** 2, 0.0).sum(axis=0) / safe
    std = np.sqrt(var)
    std = np.where(std < STD_FLOOR, 1.0, std)
    return ColumnTransform(logit=logit, percent=percent, mean=mean, std=std, eps=float(eps),
                           scale=scale)


def forward(ct: ColumnTransform, values: np.ndarray) -> np.ndarray:
    """Scores -> standardised transformed scores (NaN stays NaN).

    ``values`` has the fitted columns on its last axis.
    """
    x = np.asarray(values, dtype=np.float64)
    t = np.where(ct.logit, _to_logit(x * ct.scale, ct.eps), x)
    return (t - ct.mean) / ct.std


def forward_observed(ct: ColumnTransform, values: np.ndarray
                     ) -> tuple[np.ndarray, np.ndarray]:
    """The observed cells of ``values`` (not NaN) and their :func:`forward` scores, 0 elsewhere.

    The low-rank fits take this pair: a mask and a finite matrix.
    """
    values = np.asarray(values, dtype=np.float64)
    observed = ~np.isnan(values)
    return observed, np.where(observed, forward(ct, np.where(observed, values, 0.0)), 0.0)


def inverse(ct: ColumnTransform, z: np.ndarray) -> np.ndarray:
    """Standardised transformed scores -> scores (percentage columns clipped to [0, 100])."""
    t = np.asarray(z, dtype=np.float64) * ct.std + ct.mean
    with np.errstate(over="ignore"):
        x = np.where(ct.logit, 100.0 / (1.0 + np.exp(-t)) / ct.scale, t)
    return np.where(ct.percent, np.clip(x, 0.0, 100.0 / ct.scale), x)
