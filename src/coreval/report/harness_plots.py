"""Figures and tables over harness results (the tidy rows of :func:`coreval.harness.run_grid`).

In the style of "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression" (Bowyer et al.): error and Kendall's τ against the budget (Fig. 1)
and the number of source models (Fig. 2), the question-difficulty distribution
of the chosen coresets (Fig. 3a), plus interval coverage, run time and a
per-regime recommendation computed from the results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


def _axes(ax, size=(4.8, 3.8)):
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def _need(df: pd.DataFrame, cols: Sequence[str], who: str) -> None:
    missing = [c for c in cols if c not in df]
    if missing:
        raise ValidationError(f"{who} needs result columns {missing}")


#: Result columns that define one setting of a run besides its method and seed.
SETTING_COLUMNS: tuple[str, ...] = ("dataset", "split", "n_source", "budget", "k")


def mean_and_seed_sd(results: pd.DataFrame, x: str, metric: str) -> pd.DataFrame:
    """Mean of ``metric`` at each ``x``, with its spread over seeds.

    Rows at one ``x`` may mix other settings (datasets, budgets, source sizes: every
    :data:`SETTING_COLUMNS` present); their spread is not seed noise. The error bar
    is the pooled within-setting standard deviation over seeds,
    ``sqrt(mean_s var_seeds(metric | x, s))``, so settings at different levels do
    not widen it. The mean is over all rows (over seeds first when each setting has
    the same number of seeds).

    Returns
    -------
    DataFrame
        Indexed by sorted ``x``, columns ``mean`` and ``sd`` (0 with one seed).
    """
    settings = [c for c in SETTING_COLUMNS if c in results and c != x]
    df = results.dropna(subset=[metric])
    within = (df.groupby([x, *settings], dropna=False)[metric].var(ddof=1)
              .fillna(0.0).groupby(level=0).mean())
    return pd.DataFrame({"mean": df.groupby(x)[metric].mean(),
                         "sd": np.sqrt(within)}).sort_index()


def plot_metric_vs_sources(results: pd.DataFrame, *, metric: str = "rmse", ax=None,
                           scale: float | None = None):
    """Mean ± sd over seeds of a metric against the number of source models (Fig. 2 style).

    Rows of several budgets or datasets are averaged; the error bar is the seed
    spread within each of them (:func:`mean_and_seed_sd`).
    """
    _need(results, ["method", "n_source", metric], "plot_metric_vs_sources")
    ax = _axes(ax)
    if scale is None:
        scale = 100.0 if metric in {"rmse", "mae", "width90"} else 1.0
    for method, df in results.groupby("method", sort=True):
        g = mean_and_seed_sd(df, "n_source", metric)
        ax.errorbar(g.index, g["mean"] * scale, yerr=g["sd"] * scale, marker="o",
                    ms=3, capsize=2, label=method)
    ax.set_xlabel("number of source models")
    ax.set_ylabel(metric + (" (pp)" if scale == 100 else ""))
    ax.legend(fontsize=7)
    return ax


def plot_time(results: pd.DataFrame, *, ax=None):
    """Total seconds (select + fit + predict) per successful run against k, log scale.

    Failed runs (an ``error``, or a missing time) are left out, as in
    :func:`coreval.harness.summarize`.
    """
    _need(results, ["method", "k", "seconds_select", "seconds_fit"], "plot_time")
    ax = _axes(ax)
    cols = [c for c in ("seconds_select", "seconds_fit", "seconds_predict") if c in results]
    df = results.assign(seconds=results[cols].sum(axis=1, min_count=len(cols)))
    if "error" in df:
        df = df[df["error"].isna()]
    df = df.dropna(subset=["seconds"])
    for method, d in df.groupby("method", sort=True):
        g = d.groupby("k")["seconds"].median().sort_index()
        ax.plot(g.index, g.to_numpy(), marker="o", ms=3, label=method)
    ax.set_yscale("log")
    ax.set_xlabel("coreset size k")
    ax.set_ylabel("seconds per run (median)")
    ax.legend(fontsize=7)
    return ax


def plot_coverage(results: pd.DataFrame, *, ax=None):
    """Mean empirical coverage of the 90% intervals per method (the harness's
    ``coverage90``), with the nominal 90%."""
    _need(results, ["method", "coverage90"], "plot_coverage")
    ax = _axes(ax)
    g = results.groupby("method")["coverage90"].agg(["mean", "std"]).dropna(subset=["mean"])
    g = g.sort_values("mean")
    ax.barh(np.arange(len(g)), g["mean"] * 100, xerr=g["std"].fillna(0) * 100, color="C0",
            alpha=0.8)
    ax.set_yticks(np.arange(len(g)), g.index, fontsize=7)
    ax.axvline(90, color="crimson", ls="--", lw=1, label="nominal 90%")
    ax.set_xlabel("empirical coverage of 90% intervals (%)")
    ax.set_xlim(0, 100)
    ax.legend(fontsize=7, loc="lower right")
    return ax


def coreset_difficulty(matrix: ScoreMatrix, coresets: Mapping[str, Sequence[Sequence[str]]],
                       *, source_rows: np.ndarray | None = None) -> pd.DataFrame:
    """Question difficulty of coreset items (mRMR paper, Fig. 3a).

    Difficulty = 1 - mean score of the item over the source models.

    Parameters
    ----------
    matrix : ScoreMatrix
        The benchmark.
    coresets : mapping method -> list of coresets (item ids)
        E.g. the ``coreset`` column of harness results grouped by method.
    source_rows : ndarray of int, optional
        Rows of the source models (default: all models).

    Returns
    -------
    DataFrame
        ``method, item, difficulty`` (one row per chosen item per coreset) plus the
        rows of method ``"all items"`` for the full benchmark.
    """
    src = matrix if source_rows is None else matrix.take(source_rows)
    with np.errstate(invalid="ignore"):
        difficulty = pd.Series(1.0 - np.nanmean(src.values, axis=0),
                               index=src.items.astype(str))
    rows = [pd.DataFrame({"method": "all items", "item": difficulty.index,
                          "difficulty": difficulty.to_numpy()})]
    for method, sets in coresets.items():
        for items in sets:
            ids = [str(i) for i in items]
            unknown = [i for i in ids if i not in difficulty.index]
            if unknown:
                raise ValidationError(f"coreset of {method} has unknown items, e.g. {unknown[:3]}")
            rows.append(pd.DataFrame({"method": method, "item": ids,
                                      "difficulty": difficulty.loc[ids].to_numpy()}))
    return pd.concat(rows, ignore_index=True)


def plot_difficulty(table: pd.DataFrame, *, ax=None, bins: int = 10):
    """Distribution of coreset item difficulty per method (density histograms, Fig. 3a)."""
    _need(table, ["method", "difficulty"], "plot_difficulty")
    ax = _axes(ax)
    edges = np.linspace(0, 1, bins + 1)
    centers = 0.5 * (edges[1:] + edges[:-1])
    for method, df in table.groupby("method", sort=True):
        h, _ = np.histogram(df["difficulty"].dropna(), bins=edges, density=True)
        style = dict(color="k", lw=2, ls="--") if method == "all items" else dict(lw=1.2)
        ax.plot(centers, h, marker="o", ms=3, label=str(method), **style)
    ax.set_xlabel("question difficulty (1 − mean source score)")
    ax.set_ylabel("density")
    ax.legend(fontsize=7)
    return ax


def recommend(results: pd.DataFrame, *, by: Sequence[str] = ("regime",),
              metric: str = "rmse", lower_is_better: bool = True,
              min_coverage: float | None = None) -> pd.DataFrame:
    """The best method per group of results, with the runner-up and the margin.

    Parameters
    ----------
    results : DataFrame
        Harness rows with the ``by`` columns, ``method`` and ``metric``.
    by : sequence of str
        Grouping columns (e.g. a ``regime`` column the caller derives).
    metric : str
        Metric to rank methods by (mean over the group's runs).
    min_coverage : float, optional
        Only consider methods whose mean ``coverage90`` reaches this.

    Returns
    -------
    DataFrame
        ``*by, best, best_<metric>, runner_up, runner_up_<metric>, n_runs``.
    """
    _need(results, [*by, "method", metric], "recommend")
    if min_coverage is not None:
        _need(results, ["coverage90"], "recommend(min_coverage=...)")
    rows = []
    for key, df in results.groupby(list(by), sort=True):
        g = df.groupby("method").agg(value=(metric, "mean"), n=(metric, "size"))
        if min_coverage is not None:
            cov = df.groupby("method")["coverage90"].mean()
            g = g[cov.reindex(g.index) >= min_coverage]
        g = g.dropna().sort_values("value", ascending=lower_is_better)
        if g.empty:
            continue
        key = key if isinstance(key, tuple) else (key,)
        row = dict(zip(by, key, strict=True))
        row.update({"best": g.index[0], f"best_{metric}": g["value"].iloc[0],
                    "runner_up": g.index[1] if len(g) > 1 else None,
                    f"runner_up_{metric}": g["value"].iloc[1] if len(g) > 1 else np.nan,
                    "n_runs": int(g["n"].sum())})
        rows.append(row)
    return pd.DataFrame(rows)
