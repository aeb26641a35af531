"""Accuracy, ranking and interval metrics on held-out target models.

Every function is NaN-safe: pairs where the truth or the prediction is NaN are
dropped, and a metric that is undefined for what remains (fewer than two
pairs, a constant input for a correlation, zero total variance for R²) is NaN
rather than a warning.

Two tasks are scored (see :func:`score_metrics` and :func:`impute_metrics`):

``score``
    One summary score per target model (item-level data). Errors are in the
    native units of the scores.
``impute``
    Every unselected benchmark of every target model (benchmark-level data),
    scored exactly as in Smola's benchmark-selection code (its PROTOCOL.md §3
    and §6): per-column training standardisation, pooled R² with SS_tot about
    zero, RMSE in standardised units.

References
----------
Gneiting, T. & Raftery, A. E. (2007). Strictly proper scoring rules, prediction,
and estimation. *JASA* 102(477), 359-378 — the interval score, their Eq. 43.
Bowyer, S., Locatelli, A. & Cao, K. (2026). Efficient Benchmarking Is Just
Feature Selection and Multiple Regression — σ⁻¹-weighted aggregation over
datasets, their Eqs. 25-27.
Smola, A. (2026). Submodular Benchmark Selection — code
``smolix/benchmark-selection`` (``impute_and_evaluate``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from scipy import stats

from coreval.base.conformal import interval_scores
from coreval.errors import ValidationError
from coreval.gaussian.standardize import fit_standardization

#: Clip of true standardised test values in the impute task (benchmark-selection §6).
Z_CLIP = 10.0
#: Relative floor of the training std in the impute task (benchmark-selection §3).
STD_FLOOR = 0.01
#: Floor of SS_tot in the pooled impute R² (benchmark-selection §6).
SS_TOT_FLOOR = 1e-12


# --------------------------------------------------------------------------- helpers
def _paired(*arrays) -> list[np.ndarray]:
    """Flatten equally shaped arrays and keep the positions where all are finite."""
    arrs = [np.asarray(a, dtype=float) for a in arrays]
    shape = arrs[0].shape
    for a in arrs[1:]:
        if a.shape != shape:
            raise ValidationError(f"metric inputs have different shapes: {shape} and {a.shape}")
    arrs = [a.ravel() for a in arrs]
    keep = np.logical_and.reduce([np.isfinite(a) for a in arrs])
    return [a[keep] for a in arrs]


def _paired_interval(y_true, lower, upper) -> list[np.ndarray]:
    """Like :func:`_paired` for a truth and interval bounds, keeping infinite bounds.

    An unbounded interval (e.g. split conformal with too few calibration points for
    the level) is a valid, conservative interval: it covers, and its width is inf.
    Only NaN bounds (no interval) and non-finite truths are dropped.
    """
    y, lo, hi = (np.asarray(a, dtype=float) for a in (y_true, lower, upper))
    for a in (lo, hi):
        if a.shape != y.shape:
            raise ValidationError(f"metric inputs have different shapes: {y.shape} and "
                                  f"{a.shape}")
    y, lo, hi = y.ravel(), lo.ravel(), hi.ravel()
    keep = np.isfinite(y) & ~np.isnan(lo) & ~np.isnan(hi)
    return [y[keep], lo[keep], hi[keep]]


def _correlation(fn, y_true, y_pred) -> float:
    a, b = _paired(y_true, y_pred)
    # Undefined for < 2 pairs or a constant side; scipy would warn and return NaN.
    if a.size < 2 or np.ptp(a) == 0 or np.ptp(b) == 0:
        return float("nan")
    return float(fn(a, b)[0])


# --------------------------------------------------------------------------- errors
def mae(y_true, y_pred) -> float:
    """Mean absolute error over pairs where both values are finite (NaN if none)."""
    a, b = _paired(y_true, y_pred)
    return float(np.mean(np.abs(a - b))) if a.size else float("nan")


def rmse(y_true, y_pred) -> float:
    """Root mean squared error over pairs where both values are finite (NaN if none)."""
    a, b = _paired(y_true, y_pred)
    return float(np.sqrt(np.mean((a - b) ** 2))) if a.size else float("nan")


def r2(y_true, y_pred) -> float:
    """Coefficient of determination ``1 - SS_res / SS_tot`` with SS_tot about the truth's mean.

    R² is invariant to standardising truth and prediction with the same affine map,
    so this is also the R² "in standardised space". It can be negative; NaN when
    the truth is constant or fewer than two pairs remain.
    """
    a, b = _paired(y_true, y_pred)
    if a.size < 2:
        return float("nan")
    ss_tot = float(np.sum((a - a.mean()) ** 2))
    if ss_tot == 0.0:
        return float("nan")
    return 1.0 - float(np.sum((a - b) ** 2)) / ss_tot


# --------------------------------------------------------------------------- ranking
def kendall(y_true, y_pred) -> float:
    """Kendall's τ-b (``scipy.stats.kendalltau``); NaN for constant input or < 2 pairs."""
    return _correlation(stats.kendalltau, y_true, y_pred)


def spearman(y_true, y_pred) -> float:
    """Spearman's ρ (``scipy.stats.spearmanr``); NaN for constant input or < 2 pairs."""
    return _correlation(stats.spearmanr, y_true, y_pred)


def pearson(y_true, y_pred) -> float:
    """Pearson's r (``scipy.stats.pearsonr``); NaN for constant input or < 2 pairs."""
    return _correlation(stats.pearsonr, y_true, y_pred)


# --------------------------------------------------------------------------- intervals
def coverage(y_true, lower, upper) -> float:
    """Fraction of truths inside the closed interval ``[lower, upper]`` (NaN if none).

    Infinite bounds are kept (an unbounded interval covers); NaN bounds are dropped.
    """
    y, lo, hi = _paired_interval(y_true, lower, upper)
    return float(np.mean((y >= lo) & (y <= hi))) if y.size else float("nan")


def mean_width(lower, upper) -> float:
    """Mean interval width ``upper - lower`` over non-NaN bounds (NaN if none; inf when an
    interval is unbounded)."""
    _, lo, hi = _paired_interval(np.zeros(np.shape(lower)), lower, upper)
    return float(np.mean(hi - lo)) if lo.size else float("nan")


def interval_score(y_true, lower, upper, alpha: float = 0.1) -> float:
    """Mean interval score of a central ``(1 - alpha)`` interval (lower is better).

    ``S = (u - l) + (2/α)(l - y)·1{y < l} + (2/α)(y - u)·1{y > u}``, the negatively
    oriented form of Gneiting & Raftery (2007), Eq. 43 (which defines the score as
    the negative of this, to be maximised).

    Parameters
    ----------
    y_true, lower, upper : array-like of the same shape
        Truths and interval bounds; entries with any NaN are dropped (an infinite bound
        gives an infinite score).
    alpha : float
        Nominal miscoverage, 0.1 for a 90 % interval.

    Returns
    -------
    float
        Mean score, NaN when no finite triple remains.
    """
    if not 0.0 < alpha < 1.0:
        raise ValidationError(f"alpha must be in (0, 1), got {alpha}")
    y, lo, hi = _paired_interval(y_true, lower, upper)
    if not y.size:
        return float("nan")
    return float(np.mean(interval_scores(y, lo, hi, alpha)))


# --------------------------------------------------------------------------- datasets
def score_sigma(true_scores) -> float:
    """σ_d of a dataset: the population std (ddof = 0) of its models' true full scores."""
    y = np.asarray(true_scores, dtype=float).ravel()
    y = y[np.isfinite(y)]
    return float(np.std(y)) if y.size else float("nan")


def sigma_weights(sigma_by_dataset: Mapping[str, float]) -> dict[str, float]:
    """Weights ``w_d = σ_d⁻¹ / Σ_e σ_e⁻¹`` over the datasets with a finite σ.

    Raises
    ------
    ValidationError
        A dataset with σ ≤ 0 (all its models have the same true score).
    """
    sig = {d: float(s) for d, s in sigma_by_dataset.items() if np.isfinite(s)}
    bad = [d for d, s in sig.items() if s <= 0]
    if bad:
        raise ValidationError(f"sigma must be positive; got sigma <= 0 for datasets {bad}")
    inv = {d: 1.0 / s for d, s in sig.items()}
    total = sum(inv.values())
    return {d: v / total for d, v in inv.items()}


def sigma_weighted(values_by_dataset: Mapping[str, float],
                   sigma_by_dataset: Mapping[str, float]) -> float:
    """σ⁻¹-weighted mean of a metric across datasets (mRMR paper, Eqs. 25-27).

    ``aggregate = Σ_d w_d · value_d`` with ``w_d = (1/σ_d) / Σ_e (1/σ_e)``, where σ_d
    is the standard deviation of the true full scores of dataset d's models (see
    :func:`score_sigma`). Datasets whose value or σ is NaN are left out and the
    weights renormalised over the rest; NaN when none remain.

    Parameters
    ----------
    values_by_dataset : mapping dataset -> float
        The metric per dataset (e.g. mean RMSE over seeds).
    sigma_by_dataset : mapping dataset -> float
        σ_d per dataset; must contain every dataset of ``values_by_dataset``.

    Returns
    -------
    float

    References
    ----------
    Bowyer, Locatelli & Cao (2026), Eqs. 25-27.
    """
    missing = sorted(set(values_by_dataset) - set(sigma_by_dataset))
    if missing:
        raise ValidationError(f"no sigma given for datasets {missing}")
    keep = {d: float(v) for d, v in values_by_dataset.items()
            if np.isfinite(v) and np.isfinite(sigma_by_dataset[d])}
    if not keep:
        return float("nan")
    w = sigma_weights({d: sigma_by_dataset[d] for d in keep})
    return float(sum(w[d] * keep[d] for d in keep))


# --------------------------------------------------------------------------- per task
def score_metrics(y_true, mean, lower=None, upper=None, *, level: float = 0.9) -> dict:
    """All metrics of the ``score`` task for one run (native units).

    Parameters
    ----------
    y_true, mean : array-like of shape (n_target,)
        True and predicted summary scores of the target models.
    lower, upper : array-like of shape (n_target,), optional
        Central ``level`` interval; interval metrics are NaN without one.
    level : float
        Nominal coverage of the interval.

    Returns
    -------
    dict
        ``mae, rmse, kendall, spearman, pearson, r2, coverage, width,
        interval_score``.
    """
    out = {
        "mae": mae(y_true, mean), "rmse": rmse(y_true, mean),
        "kendall": kendall(y_true, mean), "spearman": spearman(y_true, mean),
        "pearson": pearson(y_true, mean), "r2": r2(y_true, mean),
    }
    out.update(_interval_metrics(y_true, lower, upper, level))
    return out


def _interval_metrics(y_true, lower, upper, level: float) -> dict:
    if lower is None or upper is None:
        return {"coverage": float("nan"), "width": float("nan"), "interval_score": float("nan")}
    return {"coverage": coverage(y_true, lower, upper), "width": mean_width(lower, upper),
            "interval_score": interval_score(y_true, lower, upper, alpha=1.0 - level)}


@dataclass(frozen=True)
class Standardizer:
    """Per-column training mean and floored std of the impute task.

    Attributes
    ----------
    mean, std : ndarray of shape (n_columns,)
    """

    mean: np.ndarray
    std: np.ndarray

    @classmethod
    def fit(cls, source_values) -> Standardizer:
        """Observed-entry mean and floored std of each column (benchmark-selection §3).

        ``mean_j`` is the mean of the observed source entries of column j (0 when
        none), ``var_j`` their ddof-1 variance (divisor ``max(n_j - 1, 1)``) and
        ``std_j = sqrt(max(var_j, (0.01 (|mean_j| + 1))²))``; the engine's
        :func:`coreval.gaussian.standardize.fit_standardization`, with ±inf as missing.
        """
        y = np.asarray(source_values, dtype=float)
        if y.ndim != 2:
            raise ValidationError(f"source values must be 2-D, got shape {y.shape}")
        fitted = fit_standardization(np.where(np.isfinite(y), y, np.nan), floor=STD_FLOOR)
        return cls(mean=fitted.mean, std=fitted.std)

    def transform(self, values) -> np.ndarray:
        """``(values - mean) / std`` column-wise (NaN stays NaN)."""
        return (np.asarray(values, dtype=float) - self.mean) / self.std


def impute_metrics(source_values, target_values, mean, lower=None, upper=None, *,
                   selected, level: float = 0.9) -> dict:
    """All metrics of the ``impute`` task for one run (benchmark-selection §3, §6).

    Parameters
    ----------
    source_values : array-like of shape (n_source, n_columns)
        Training scores (NaN = unobserved); they define the standardisation.
    target_values : array-like of shape (n_target, n_columns)
        True scores of the target models (NaN = unobserved).
    mean, lower, upper : array-like of shape (n_target, n_columns)
        Predicted scores and interval bounds in native units (NaN = no prediction).
    selected : array-like of int
        Column positions of the coreset; they are not evaluated.
    level : float
        Nominal coverage of the interval.

    Returns
    -------
    dict
        ``r2``: pooled ``1 - SS_res / max(SS_tot, 1e-12)`` over all evaluated cells,
        SS_tot about zero in training-standardised space; ``rmse`` and ``mae`` in
        standardised units; ``pearson``, ``spearman``, ``kendall`` between true and
        predicted standardised values pooled over the evaluated cells; ``coverage``,
        ``width`` (standardised units) and ``interval_score`` per cell; ``n_cells``
        evaluated; ``n_skipped`` target models without any prediction (a NaN row,
        e.g. none of the selected benchmarks observed), which are left out.

    Notes
    -----
    Evaluated cells are the unselected, observed cells of target models with a
    finite prediction. True standardised values are clipped to ±10; predictions
    are not clipped (as in the reference).
    """
    target = np.asarray(target_values, dtype=float)
    pred = np.asarray(mean, dtype=float)
    if pred.shape != target.shape:
        raise ValidationError(
            f"imputed values have shape {pred.shape}, expected {target.shape}")
    scaler = Standardizer.fit(source_values)
    if scaler.mean.shape[0] != target.shape[1]:
        raise ValidationError(
            f"source has {scaler.mean.shape[0]} columns but target has {target.shape[1]}")
    unselected = np.ones(target.shape[1], dtype=bool)
    unselected[np.asarray(selected, dtype=np.intp)] = False
    has_pred = np.isfinite(pred[:, unselected]).any(axis=1)
    cells = np.isfinite(target) & np.isfinite(pred) & unselected[None, :] & has_pred[:, None]
    z_true = np.clip(scaler.transform(target), -Z_CLIP, Z_CLIP)[cells]
    z_pred = scaler.transform(pred)[cells]
    n = int(cells.sum())
    out = {"n_cells": n, "n_skipped": int((~has_pred).sum())}
    if n == 0:
        nan = float("nan")
        out.update(r2=nan, rmse=nan, mae=nan, pearson=nan, spearman=nan, kendall=nan,
                   coverage=nan, width=nan, interval_score=nan)
        return out
    resid = z_true - z_pred
    ss_res = float(np.sum(resid ** 2))
    out.update(
        r2=1.0 - ss_res / max(float(np.sum(z_true ** 2)), SS_TOT_FLOOR),
        rmse=float(np.sqrt(ss_res / n)), mae=float(np.mean(np.abs(resid))),
        pearson=pearson(z_true, z_pred), spearman=spearman(z_true, z_pred),
        kendall=kendall(z_true, z_pred),
    )
    if lower is None or upper is None:
        out.update(_interval_metrics(None, None, None, level))
        return out
    lo = np.asarray(lower, dtype=float)
    hi = np.asarray(upper, dtype=float)
    if lo.shape != target.shape or hi.shape != target.shape:
        raise ValidationError("imputed interval bounds do not match the target shape")
    # Coverage is unit-free; width and interval score in training-standardised units.
    out.update(_interval_metrics(scaler.transform(target)[cells], scaler.transform(lo)[cells],
                                 scaler.transform(hi)[cells], level))
    return out
