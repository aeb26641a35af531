"""Summaries of harness results: mean ± sd over seeds, markdown tables, coreset stability."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.harness.metrics import score_sigma, sigma_weighted
from coreval.harness.stability import hamming_stability, nogueira_stability

#: Metrics summarised by default.
DEFAULT_METRICS: tuple[str, ...] = (
    "mae", "rmse", "kendall", "spearman", "pearson", "r2", "coverage90", "width90",
)
#: The grouping of a summary row (one configuration, aggregated over seeds/folds).
GROUP_KEYS: tuple[str, ...] = ("dataset", "method", "split", "budget", "n_source")
_TIMES = ("seconds_select", "seconds_fit", "seconds_predict")


def _check_columns(df: pd.DataFrame, needed: Sequence[str], who: str) -> None:
    missing = [c for c in needed if c not in df.columns]
    if missing:
        raise ValidationError(f"{who} needs result columns {missing}, which are absent")


def summarize(df: pd.DataFrame, metrics: Sequence[str] = DEFAULT_METRICS, *,
              ddof: int = 1) -> pd.DataFrame:
    """Mean and standard deviation over seeds (or folds) of each configuration.

    Parameters
    ----------
    df : DataFrame
        Results of :func:`coreval.harness.run_grid` (one row per run).
    metrics : sequence of str
        Metric columns to summarise.
    ddof : int
        Delta degrees of freedom of the sd (1: sample sd; 0: population sd as in
        benchmark-selection's figures).

    Returns
    -------
    DataFrame
        One row per dataset × method × split × budget × n_source with ``k``,
        ``n_runs`` (rows), ``n_failed`` (rows with an error), ``<metric>_mean`` and
        ``<metric>_sd`` (NaN-skipping, over the successful runs) and ``seconds``
        (mean of select + fit + predict).
    """
    _check_columns(df, [*GROUP_KEYS, "k", *metrics], "summarize")
    failed = df["error"].notna() if "error" in df else pd.Series(False, index=df.index)
    work = df.assign(_failed=failed.astype(int))
    if all(t in df for t in _TIMES):
        work["_seconds"] = df[list(_TIMES)].sum(axis=1, min_count=3)
    else:
        work["_seconds"] = np.nan
    rows = []
    for keys, g in work.groupby(list(GROUP_KEYS), dropna=False, sort=True):
        ok = g[g["_failed"] == 0]
        row = dict(zip(GROUP_KEYS, keys, strict=True))
        ks = ok["k"].dropna() if len(ok) else g["k"].dropna()
        row["k"] = int(ks.iloc[0]) if len(ks) else pd.NA
        row["n_runs"] = len(g)
        row["n_failed"] = int(g["_failed"].sum())
        for m in metrics:
            vals = pd.to_numeric(ok[m], errors="coerce").to_numpy(dtype=float)
            vals = vals[np.isfinite(vals)]
            row[f"{m}_mean"] = float(vals.mean()) if vals.size else np.nan
            row[f"{m}_sd"] = float(vals.std(ddof=ddof)) if vals.size > ddof else np.nan
        secs = ok["_seconds"].to_numpy(dtype=float)
        secs = secs[np.isfinite(secs)]
        row["seconds"] = float(secs.mean()) if secs.size else np.nan
        rows.append(row)
    columns = [*GROUP_KEYS, "k", "n_runs", "n_failed",
               *[f"{m}_{s}" for m in metrics for s in ("mean", "sd")], "seconds"]
    out = pd.DataFrame(rows, columns=columns)
    out["n_source"] = out["n_source"].astype("Int64")
    return out


def dataset_sigmas(datasets: Mapping[str, ScoreMatrix]) -> dict[str, float]:
    """σ_d per dataset: population std of all its models' true summary scores."""
    return {name: score_sigma(m.summary_scores()) for name, m in datasets.items()}


def sigma_weighted_summary(df: pd.DataFrame, sigma_by_dataset: Mapping[str, float],
                           metrics: Sequence[str] = ("mae", "rmse")) -> pd.DataFrame:
    """Aggregate over datasets with σ⁻¹ weights (mRMR paper, Eqs. 25-27).

    For each method × split × budget × n_source, every metric's mean over seeds
    (:func:`summarize`) is combined across datasets as
    ``Σ_d w_d · metric_d`` with ``w_d = (1/σ_d) / Σ_e (1/σ_e)``
    (:func:`coreval.harness.metrics.sigma_weighted`); datasets where the metric is
    NaN are left out and the weights renormalised.

    Parameters
    ----------
    df : DataFrame
        Raw results of :func:`run_grid` or the output of :func:`summarize`.
    sigma_by_dataset : mapping dataset -> float
        σ_d, e.g. from :func:`dataset_sigmas`.
    metrics : sequence of str
        Metrics to aggregate.

    Returns
    -------
    DataFrame
        ``method, split, budget, n_source, n_datasets`` and one column per metric;
        ``n_datasets`` counts the datasets that entered every metric's aggregate (a
        dataset whose runs all failed is not counted).

    References
    ----------
    Bowyer, Locatelli & Cao (2026), Efficient Benchmarking Is Just Feature
    Selection and Multiple Regression, Eqs. 25-27.
    """
    summary = df if "n_runs" in df.columns else summarize(df, metrics)
    keys = [k for k in GROUP_KEYS if k != "dataset"]
    rows = []
    for vals, g in summary.groupby(keys, dropna=False, sort=True):
        row = dict(zip(keys, vals, strict=True))
        entered = np.ones(len(g), dtype=bool)
        for m in metrics:
            entered &= np.isfinite(g[f"{m}_mean"].to_numpy(dtype=float))
        sigma = g["dataset"].map(lambda d: float(sigma_by_dataset.get(d, np.nan)))
        entered &= np.isfinite(sigma.to_numpy(dtype=float))
        row["n_datasets"] = int(g.loc[entered, "dataset"].nunique())
        for m in metrics:
            row[m] = sigma_weighted(dict(zip(g["dataset"], g[f"{m}_mean"], strict=True)),
                                    sigma_by_dataset)
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*keys, "n_datasets", *metrics])
    out["n_source"] = out["n_source"].astype("Int64")
    return out


def _fmt(x, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)) or x is pd.NA:
        return "—"
    if isinstance(x, float | np.floating):
        return f"{x:.{digits}g}"
    return str(x)


def format_table(df: pd.DataFrame, *, digits: int = 3) -> str:
    """A DataFrame as a GitHub markdown table (numbers to ``digits`` significant digits).

    Hand-written because ``DataFrame.to_markdown`` needs the optional ``tabulate``.
    """
    header = "| " + " | ".join(map(str, df.columns)) + " |"
    sep = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(_fmt(v, digits) for v in row) + " |"
            for row in df.itertuples(index=False, name=None)]
    return "\n".join([header, sep, *body])


def format_summary(df: pd.DataFrame, metrics: Sequence[str] | None = None, *,
                   digits: int = 3) -> str:
    """Markdown table of mean ± sd per configuration.

    Parameters
    ----------
    df : DataFrame
        Raw results of :func:`run_grid` or the output of :func:`summarize`.
    metrics : sequence of str, optional
        Metrics to show (default: those of :data:`DEFAULT_METRICS` present).
    digits : int
        Significant digits.

    Returns
    -------
    str
    """
    if metrics is None:
        metrics = [m for m in DEFAULT_METRICS
                   if m in df.columns or f"{m}_mean" in df.columns]
    summary = df if "n_runs" in df.columns else summarize(df, metrics)
    if not len(summary):
        return "_no results_"
    table = summary[[*GROUP_KEYS, "k", "n_runs", "n_failed"]].copy()
    for m in metrics:
        table[m] = [f"{_fmt(a, digits)} ± {_fmt(b, digits)}" if np.isfinite(b)
                    else _fmt(a, digits)
                    for a, b in zip(summary[f"{m}_mean"], summary[f"{m}_sd"], strict=True)]
    table["seconds"] = summary["seconds"]
    if (table["split"].nunique() == 1) and len(table):
        table = table.drop(columns="split")
    return format_table(table, digits=digits)


def stability_table(df: pd.DataFrame,
                    n_columns: Mapping[str, int] | None = None) -> pd.DataFrame:
    """Stability of the coresets across seeds per dataset × method × split × budget × n_source.

    Each run's ``coreset`` (list of column ids) becomes a row of a binary
    (runs × n_columns) selection matrix; stability is Nogueira et al.'s Φ̂ and the
    mean pairwise Hamming stability (:mod:`coreval.harness.stability`). Failed
    runs are left out; groups with fewer than two runs get NaN.

    Parameters
    ----------
    df : DataFrame
        Results of :func:`run_grid`.
    n_columns : mapping dataset -> int, optional
        Number of columns per dataset; default: the results' ``n_columns`` column.

    Returns
    -------
    DataFrame
        ``dataset, method, split, budget, n_source, k, n_runs, phi, hamming``.
    """
    _check_columns(df, [*GROUP_KEYS, "k", "coreset"], "stability_table")
    ok = df[df["error"].isna()] if "error" in df else df
    rows = []
    for keys, g in ok.groupby(list(GROUP_KEYS), dropna=False, sort=True):
        row = dict(zip(GROUP_KEYS, keys, strict=True))
        if n_columns is not None:
            if row["dataset"] not in n_columns:
                raise ValidationError(f"n_columns lacks dataset {row['dataset']!r}")
            d = int(n_columns[row["dataset"]])
        elif "n_columns" in g:
            d = int(g["n_columns"].iloc[0])
        else:
            raise ValidationError("stability_table needs n_columns (not in the results)")
        ids = sorted({str(i) for cs in g["coreset"] for i in cs})
        if len(ids) > d:
            raise ValidationError(
                f"{row['dataset']}: coresets use {len(ids)} distinct columns but n_columns={d}")
        pos = {c: j for j, c in enumerate(ids)}
        # Columns never selected are the trailing zero columns (they still count in d).
        z = np.zeros((len(g), d), dtype=bool)
        for i, cs in enumerate(g["coreset"]):
            z[i, [pos[str(c)] for c in cs]] = True
        row["k"] = int(g["k"].iloc[0])
        row["n_runs"] = len(g)
        row["phi"] = nogueira_stability(z) if len(g) >= 2 else np.nan
        row["hamming"] = hamming_stability(z) if len(g) >= 2 else np.nan
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*GROUP_KEYS, "k", "n_runs", "phi", "hamming"])
    out["n_source"] = out["n_source"].astype("Int64")
    return out
