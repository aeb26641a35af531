"""Interval calibration: predictions at several levels, empirical coverage, width vs budget.

A predictor's interval has a nominal level (``Prediction.level``). To check it,
predict the held-out models at several levels and compare the fraction of true
scores inside each interval with its level. Intervals at other levels come from

* the posterior draws (``Prediction.draws``), as equal-tailed quantiles, when the
  prediction has them (``interval = "posterior"``);
* the predictor itself, re-run with ``set_params(level=...)``, when it has a
  ``level`` parameter (conformal / jackknife+ / GAM / Gaussian intervals);
* otherwise a normal approximation: the standard deviation implied by the
  predicted interval, ``(upper - lower) / (2 z_{(1 + level) / 2})``
  (``interval = "normal-approx"``).

References
----------
Gneiting, T., Balabdaoui, F. & Raftery, A. E. (2007). Probabilistic forecasts,
calibration and sharpness. *JRSS B* 69, 243-268 (coverage vs nominal level).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from coreval._progress import progress, progress_enabled
from coreval.api import FittedMethod, select
from coreval.base import Prediction
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.harness.metrics import coverage, mean_width, rmse

#: Nominal levels of the calibration plot.
LEVELS: tuple[float, ...] = (0.5, 0.8, 0.9, 0.95)


def _check_levels(levels: Iterable[float]) -> tuple[float, ...]:
    out = tuple(float(v) for v in levels)
    if not out or any(not 0.0 < v < 1.0 for v in out):
        raise ValidationError(f"levels must be in (0, 1), got {list(out)}")
    return out


def intervals_from_draws(prediction: Prediction, level: float) -> Prediction:
    """The equal-tailed ``level`` credible interval from a prediction's posterior draws."""
    (level,) = _check_levels([level])
    if prediction.draws is None:
        raise ValidationError("the prediction has no posterior draws")
    return prediction.at_level(level)


def normal_sd(prediction: Prediction) -> np.ndarray:
    """:meth:`coreval.base.Prediction.normal_sd`."""
    return prediction.normal_sd()


def intervals_from_normal(prediction: Prediction, level: float) -> Prediction:
    """A normal approximation's ``level`` interval around the prediction's mean."""
    (level,) = _check_levels([level])
    return prediction.normal_approximation(level)


def predict_levels(fitted: FittedMethod, responses, levels: Sequence[float] = LEVELS
                   ) -> dict[float, Prediction]:
    """Predict at several interval levels (:meth:`coreval.pipeline.FittedMethod.predict_levels`).

    Parameters
    ----------
    fitted : FittedMethod
        A fitted method (its ``calibration`` decides how the intervals are made).
    responses : array-like of shape (n_models, k) or (k,)
        Responses on the method's coreset.
    levels : sequence of float
        Nominal levels.
    """
    return fitted.predict_levels(np.atleast_2d(np.asarray(responses, float)),
                                 _check_levels(levels))


def coverage_table(truth, predictions: Mapping[float, Prediction]) -> pd.DataFrame:
    """Empirical coverage and mean width per nominal level.

    Parameters
    ----------
    truth : array-like of shape (n_models,)
        True full scores.
    predictions : mapping level -> Prediction
        From :func:`predict_levels`.

    Returns
    -------
    DataFrame
        Columns ``level, coverage, width, n, interval``.
    """
    t = np.asarray(truth, float).ravel()
    rows = []
    for level, pred in sorted(predictions.items()):
        if pred.mean.shape != t.shape:
            raise ValidationError(f"{t.shape[0]} true scores for predictions of shape "
                                  f"{pred.mean.shape}")
        # The harness's metrics, so NaN predictions or truths are left out here as there.
        lower, upper = np.asarray(pred.lower, float), np.asarray(pred.upper, float)
        lower, upper = (np.where(np.isnan(pred.mean), np.nan, b) for b in (lower, upper))
        rows.append({"level": float(level), "coverage": coverage(t, lower, upper),
                     "width": mean_width(lower, upper),
                     "n": int(np.sum(np.isfinite(t) & ~np.isnan(lower) & ~np.isnan(upper))),
                     "interval": pred.interval})
    return pd.DataFrame(rows)


def calibration_runs(matrix: ScoreMatrix, methods: Sequence[str], budget: float, *,
                     seeds: Sequence[int] = (0, 1, 2), n_source: int | None = None,
                     split: str = "random", levels: Sequence[float] = LEVELS,
                     method_options: Mapping[str, dict] | None = None,
                     out: str | os.PathLike | None = None, n_jobs: int = 1,
                     show_progress: bool | None = None) -> pd.DataFrame:
    """Coverage of each method's intervals over held-out models, at several levels.

    Runs the harness (:func:`coreval.harness.run_grid` with ``levels``): for every
    seed the models are split (:func:`coreval.data.splits.iter_splits`), the method
    is fitted on the source models, and the target models' full scores are
    predicted from their coreset responses at every level, with the method's
    ``calibration`` (e.g. ``method_options={"mrmr++": {"calibration": "cv"}}``).

    Parameters
    ----------
    matrix : ScoreMatrix
        Item-level scores.
    methods : sequence of str
        Registered method names of task ``"score"``.
    budget : float
        Coreset size (count ≥ 1, or a fraction).
    seeds : sequence of int
        Split and method seeds.
    n_source : int, optional
        Number of source models (the split's default when None).
    split : str
        Split kind (``"random"`` or ``"binned"``).
    levels : sequence of float
        Nominal levels.
    method_options : mapping name -> dict, optional
        Extra options per method.
    out : path-like, optional
        The harness's results file (finished cells are kept and skipped on a rerun);
        a temporary one when None.
    n_jobs : int
        Harness workers.

    Returns
    -------
    DataFrame
        One row per dataset × method × seed × level: ``coverage, width, n, interval``.

    Raises
    ------
    ValidationError
        A cell failed (the message names it and gives its error).
    """
    from coreval.harness import run_grid

    levels = _check_levels(levels)
    name = matrix.name or "matrix"
    with tempfile.TemporaryDirectory(prefix="coreval-calibration-") as tmp:
        results = run_grid({name: matrix}, list(methods), [budget], n_source=(n_source,),
                           seeds=list(seeds), split=split,
                           out=out if out is not None else Path(tmp) / "calibration.parquet",
                           n_jobs=n_jobs, progress=progress_enabled(show_progress),
                           method_options=dict(method_options or {}), levels=levels)
    failed = results[results["error"].notna()]
    if len(failed):
        first = failed.iloc[0]
        raise ValidationError(f"{len(failed)} calibration run(s) failed; {first['method']} "
                              f"seed {first['seed']}: {first['error']}")
    frames = []
    for row in results.itertuples(index=False):
        table = pd.DataFrame(json.loads(row.calibration))
        table.insert(0, "n", int(row.n_target))
        table.insert(0, "seed", int(row.seed))
        table.insert(0, "k", int(row.k))
        table.insert(0, "method", row.method)
        table.insert(0, "dataset", row.dataset)
        frames.append(table)
    columns = ["dataset", "method", "k", "seed", "level", "coverage", "width", "n", "interval"]
    return pd.concat(frames, ignore_index=True)[columns]


def summarize_calibration(runs: pd.DataFrame) -> pd.DataFrame:
    """Mean coverage and width over seeds (pooled over held-out models), per level."""
    keys = [c for c in ("dataset", "method", "k", "level", "interval") if c in runs]
    runs = runs.assign(hits=runs["coverage"] * runs["n"], wsum=runs["width"] * runs["n"])
    g = runs.groupby(keys, sort=True)[["hits", "wsum", "n"]].sum().reset_index()
    g["coverage"] = g["hits"] / g["n"]
    g["width"] = g["wsum"] / g["n"]
    return g.drop(columns=["hits", "wsum"])


def plot_calibration(table: pd.DataFrame, *, by: str = "method", ax=None, title: str | None = None):
    """Nominal vs empirical coverage, one line per ``by`` value, with the diagonal.

    Parameters
    ----------
    table : DataFrame
        Columns ``level``, ``coverage`` and ``by`` (e.g. from :func:`summarize_calibration`
        or :func:`calibration_runs`; several rows per level are averaged).
    by : str
        Column naming the lines.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.5))
    for name, df in table.groupby(by, sort=True):
        g = df.groupby("level")["coverage"].mean().sort_index()
        ax.plot(g.index * 100, g.to_numpy() * 100, marker="o", ms=4, label=str(name))
    ax.plot([40, 100], [40, 100], ls="--", color="grey", lw=1, label="ideal")
    ax.set_xlim(40, 100)
    ax.set_ylim(0, 100)
    ax.set_xlabel("nominal coverage (%)")
    ax.set_ylabel("empirical coverage (%)")
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    return ax


def width_vs_budget(source: ScoreMatrix, target: ScoreMatrix, method: str,
                    budgets: Sequence[float], *, seed: int = 0, level: float = 0.9,
                    show_progress: bool | None = None, **options) -> pd.DataFrame:
    """Interval width and coverage of one method at several budgets ("how many items do I need").

    Returns
    -------
    DataFrame
        ``method, k, width, coverage, rmse`` (width and error over the target models).
    """
    if set(target.items) != set(source.items):
        raise ValidationError("width_vs_budget: the target models must have the source's items "
                              f"(source {source.n_items} items, target {target.n_items}, "
                              f"{len(set(target.items) ^ set(source.items))} differ), since "
                              "their full scores are the truth")
    truth = target.summary_scores()
    rows = []
    for budget in progress(list(budgets), desc=f"{method} budgets", total=len(budgets),
                           show=show_progress):
        fitted = select(source, method, budget, seed=seed, **options)
        responses = target.values[:, target.item_index(fitted.coreset.items)]
        pred = predict_levels(fitted, responses, [level])[level]
        rows.append({"method": method, "k": len(fitted.coreset),
                     "width": mean_width(pred.lower, pred.upper),
                     "coverage": coverage(truth, pred.lower, pred.upper),
                     "rmse": rmse(truth, pred.mean)})
    return pd.DataFrame(rows)


def plot_width_vs_budget(table: pd.DataFrame, *, ax=None, scale: float = 100.0,
                         target_width: float | None = None):
    """Mean interval width against coreset size, one line per method.

    ``target_width`` (in the same units as the table) draws a horizontal guide.
    """
    if ax is None:
        _, ax = plt.subplots(figsize=(4.5, 4.0))
    for method, df in table.groupby("method", sort=True):
        df = df.sort_values("k")
        ax.plot(df["k"], df["width"] * scale, marker="o", ms=4, label=str(method))
    if target_width is not None:
        ax.axhline(target_width * scale, ls=":", color="grey", lw=1)
    ax.set_xlabel("coreset size k")
    ax.set_ylabel("mean interval width" + (" (pp)" if scale == 100 else ""))
    ax.legend(fontsize=7)
    return ax
