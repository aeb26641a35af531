"""Matplotlib figures for predicted scores, harness results and coresets.

Every function takes an optional ``ax`` and returns the matplotlib ``Axes`` it
drew on, so figures compose in notebooks; nothing is shown or saved here.
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from coreval.base import Prediction
from coreval.errors import ValidationError
from coreval.report.harness_plots import mean_and_seed_sd


def _axes(ax):
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    return ax


def plot_true_vs_predicted(truth: np.ndarray, prediction: Prediction, *, ax=None,
                           title: str | None = None, scale: float = 100.0, color: str = "C0"):
    """Scatter of true vs predicted full scores with the prediction intervals as error bars.

    In the style of the mRMR paper's Fig. 5. Points whose interval misses the
    truth are drawn in red; the legend reports the empirical coverage.

    Parameters
    ----------
    truth : ndarray of shape (n_models,)
        True full-benchmark scores of the held-out models.
    prediction : Prediction
        Predicted means and interval bounds for the same models.
    scale : float
        Multiplier for display (100 shows fractions as percentage points).
    """
    ax = _axes(ax)
    t = np.asarray(truth, float) * scale
    m, lo, hi = (np.asarray(v, float) * scale for v in
                 (prediction.mean, prediction.lower, prediction.upper))
    if t.shape != m.shape:
        raise ValidationError(f"{t.size} true scores for predictions of shape {m.shape}")
    # Models without a truth or a prediction are left out, as in the harness's coverage.
    keep = np.isfinite(t) & ~np.isnan(m) & ~np.isnan(lo) & ~np.isnan(hi)
    t, m, lo, hi = t[keep], m[keep], lo[keep], hi[keep]
    inside = (t >= lo) & (t <= hi)
    for mask, c in ((inside, color), (~inside, "crimson")):
        if mask.any():
            ax.errorbar(t[mask], m[mask], yerr=[m[mask] - lo[mask], hi[mask] - m[mask]],
                        fmt="o", ms=3, lw=0.8, color=c, alpha=0.8)
    finite = np.concatenate([t, lo, hi])
    finite = finite[np.isfinite(finite)]
    if finite.size:
        lims = (finite.min(), finite.max())
        ax.plot(lims, lims, ls="--", color="grey", lw=1)
    cov = inside.mean() if len(t) else np.nan
    ax.set_xlabel("true score" + (" (%)" if scale == 100 else ""))
    ax.set_ylabel("predicted score" + (" (%)" if scale == 100 else ""))
    label = f"{prediction.level:.0%} {prediction.interval} interval, coverage {cov:.0%}"
    ax.set_title(title or label, fontsize=9)
    if title:
        ax.text(0.02, 0.98, label, transform=ax.transAxes, va="top", fontsize=7)
    return ax


def plot_true_vs_predicted_grid(truth: np.ndarray, predictions: Mapping[str, Prediction], *,
                                ncols: int = 3, scale: float = 100.0):
    """One :func:`plot_true_vs_predicted` panel per method; returns the Figure."""
    n = len(predictions)
    if n == 0:
        raise ValidationError("plot_true_vs_predicted_grid needs at least one prediction")
    ncols = min(ncols, n)
    nrows = int(np.ceil(n / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4 * ncols, 4 * nrows), squeeze=False)
    for ax, (name, pred) in zip(axes.ravel(), predictions.items(), strict=False):
        plot_true_vs_predicted(truth, pred, ax=ax, title=name, scale=scale)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def plot_metric_vs_budget(results: pd.DataFrame, *, metric: str = "rmse", ax=None,
                          scale: float | None = None):
    """Mean ± sd over seeds of a harness metric against the budget, one line per method.

    In the style of the mRMR paper's Figures 1-2. ``results`` has the harness's
    tidy columns (``method``, ``k``, ``seed`` and the metric). Rows of several
    datasets or source sizes are averaged; the error bar is the seed spread within
    each of them (:func:`coreval.report.harness_plots.mean_and_seed_sd`).
    """
    ax = _axes(ax)
    if scale is None:
        scale = 100.0 if metric in {"rmse", "mae", "width90"} else 1.0
    for method, df in results.groupby("method", sort=True):
        g = mean_and_seed_sd(df, "k", metric)
        ax.errorbar(g.index, g["mean"] * scale, yerr=g["sd"] * scale,
                    marker="o", ms=3, capsize=2, label=method)
    ax.set_xlabel("coreset size k")
    ax.set_ylabel(metric + (" (pp)" if scale == 100 else ""))
    ax.legend(fontsize=7)
    return ax


def plot_spectral_diagnostic(cov: np.ndarray, residual_variance: Mapping[str, np.ndarray], *,
                             ax=None):
    """Greedy residual-variance trace against the eigenvalue tail (spectral lower bound).

    Parameters
    ----------
    cov : ndarray (N, N)
        Covariance or correlation matrix the selection ran on.
    residual_variance : mapping name -> ndarray
        ``GreedyResult.residual_variance`` of each selection (value after pick 1..k).
    """
    from coreval.gaussian.diagnostics import eigenvalue_tail

    ax = _axes(ax)
    tail = eigenvalue_tail(cov)
    kmax = max(len(r) for r in residual_variance.values())
    ks = np.arange(0, kmax + 1)
    ax.plot(ks, tail[: kmax + 1], color="black", ls="--", label="eigenvalue tail (bound)")
    for name, r in residual_variance.items():
        ax.plot(np.arange(1, len(r) + 1), r, marker="o", ms=3, label=name)
    ax.set_xlabel("number of selected benchmarks k")
    ax.set_ylabel("residual variance / total variance")
    ax.set_yscale("log")
    ax.legend(fontsize=7)
    return ax
