"""The evaluation grid: datasets × source sizes × splits × methods × budgets.

Each cell fits a registered method's selector and predictor on the source models
of one split and scores its predictions on the target models (see
:mod:`coreval.harness.metrics`). Cells run in parallel with joblib (or on a
dask.distributed cluster), finished cells are stored one Parquet part each, and
a restarted grid resumes where it stopped (see :mod:`coreval.harness.store`).
"""

from __future__ import annotations

import json
import math
import numbers
import os
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from joblib import Parallel, delayed, parallel_config

from coreval._atomic import write_text_atomic
from coreval._progress import progress_bar
from coreval.base import FitCache, resolve_budget
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.harness.metrics import coverage, impute_metrics, mean_width, score_metrics
from coreval.harness.store import (
    PartStore,
    matrix_fingerprint,
    rows_fingerprint,
    stable_hash,
    to_frame,
)
from coreval.jax_cache import release_compiled_programs
from coreval.methods import Method, get_method
from coreval.pipeline import check_options, fit_method

#: Nominal level of the interval columns ``coverage90`` / ``width90``.
LEVEL = 0.9
#: Fits kept by the cache that the cells of one split share. gp-irt's calibration folds
#: alone make 44 fits that its budgets and its ``+``/``++`` variants all reuse; with 16
#: the oldest were dropped before the next cell needed them (gsm, M = 30, three budgets
#: of the three variants: 396 fits and 457 s with 16, 44 fits, 58 s and 756 MB held with
#: 64; benchmarks/results/timing_accounting.md).
SPLIT_CACHE_SIZE = 64
#: Bump when the meaning of a stored cell changes (invalidates old parts).
CELL_VERSION = 2


@dataclass(frozen=True)
class Cell:
    """One run of the grid (everything needed to compute it, plus its key)."""

    key: str
    dataset: str
    method: str
    split: str
    budget: float
    k: int | None
    k_error: str | None
    n_source: int | None
    seed: int
    fold: int | None
    label: str | None
    source_rows: np.ndarray = field(repr=False)
    target_rows: np.ndarray = field(repr=False)
    options: dict[str, Any] = field(default_factory=dict, repr=False)
    levels: tuple[float, ...] = ()


def run_grid(datasets: Mapping[str, ScoreMatrix], methods: Sequence[str],
             budgets: Sequence[float], *, n_source: Sequence[int | None] = (None,),
             seeds: Sequence[int] | None = (0,), split: str = "binned", folds: int = 10,
             holdout: float = 0.1, split_seed: int = 42, out: str | os.PathLike,
             n_jobs: int = 1, scheduler: str | None = None, progress: bool | None = None,
             method_options: dict[str, dict] | None = None,
             retry_failed: bool = False, levels: Sequence[float] = ()) -> pd.DataFrame:
    """Evaluate methods on a grid and return one tidy row per run.

    For each dataset × n_source × split (seed, fold or family) × method × budget:
    ``k = resolve_budget(budget, n_columns)``; the method's selector is fitted on
    the source models (``seconds_select``), its predictor on the source models and
    the coreset (``seconds_fit``), and the target models' coreset scores are
    predicted (``seconds_predict``); a fit shared with another cell through the split's
    cache counts in every cell that uses it, once, with the seconds it took
    (:meth:`coreval.base.FitCache.clock`). Methods of task ``"score"`` are scored against
    ``target.summary_scores()`` in native units; methods of task ``"impute"``
    against the target models' unselected observed cells, in training-standardised
    units (:func:`coreval.harness.metrics.impute_metrics`).

    Parameters
    ----------
    datasets : mapping name -> ScoreMatrix
        The score matrices; the name is the ``dataset`` column.
    methods : sequence of str
        Registered method names (:func:`coreval.methods.registry.get_method`).
    budgets : sequence of float
        Coreset sizes: < 1 a fraction of the columns, ≥ 1 a count.
    n_source : sequence of int or None
        Numbers of source models (``None``: the split's default; must be
        ``None`` for ``kfold``).
    seeds : sequence of int or None
        Split seeds (``kfold``: fold indices, ``None`` = all folds). The split's
        seed is also the method's seed.
    split : {"binned", "random", "kfold", "lofo"}
        Split kind (:func:`coreval.data.splits.iter_splits`).
    folds, holdout, split_seed
        Passed to :func:`coreval.data.splits.iter_splits`.
    out : path-like
        Parquet file of the combined results. Finished cells are kept in
        ``<out>.parts/`` and skipped on restart; a markdown summary is written to
        ``<out stem>.summary.md`` next to it.
    n_jobs : int
        joblib workers (``-1``: all cores).
    scheduler : str, optional
        Address of a dask.distributed scheduler: the cells run on that cluster
        via ``joblib.parallel_config(backend="dask")``.
    progress : bool, optional
        Show a progress bar over cells; by default only where one can be drawn (a
        terminal or Jupyter) unless ``COREVAL_PROGRESS`` says otherwise.
    method_options : dict name -> dict, optional
        Extra keyword options for a method's selector and predictor factories.
    retry_failed : bool
        Run again the cells whose stored result is an error.
    levels : sequence of float
        Extra nominal levels at which score predictions are also made (with the
        method's ``calibration``, :meth:`coreval.pipeline.FittedMethod.predict_levels`);
        the column ``calibration`` then holds, per cell, the JSON list of
        ``{"level", "coverage", "width", "interval"}`` over the target models
        (:func:`coreval.report.calibration_runs` reads it).

    Returns
    -------
    DataFrame
        The columns ``dataset, method, split, budget, k, n_source, seed, mae, rmse,
        kendall, spearman, pearson, r2, coverage90, width90, seconds_select,
        seconds_fit, seconds_predict, coreset`` (the public contract), then
        ``n_target, n_skipped, interval, uses_source_models, error, fold, label,
        task, level, interval_score90, n_cells, n_columns, cell``. A failed cell
        has its one-line message in ``error`` and NaN metrics; metrics that do not
        apply are NaN (interval metrics when the prediction has no interval or its
        ``level`` is not 0.9). ``n_source`` is NA where the split default was used.
        Rows are in grid order (dataset, n_source, split, method, budget).

    Raises
    ------
    ValidationError
        Empty grid axes, a non-ScoreMatrix dataset, bad split settings.
    UnknownMethodError
        A method name that is not registered.

    Notes
    -----
    A cell's key hashes the dataset's values and ids, the method name and its
    options, the budget, the split's source/target rows and seed. Changing a
    method's code does not change its key: delete ``<out>.parts/`` (or use
    another ``out``) to recompute. Two grids must not write the same ``out`` at
    the same time.
    """
    from coreval.data.splits import iter_splits  # lazy: the splits module is optional here

    if not datasets:
        raise ValidationError("run_grid needs at least one dataset")
    if not methods:
        raise ValidationError("run_grid needs at least one method")
    if not budgets:
        raise ValidationError("run_grid needs at least one budget")
    if not n_source:
        raise ValidationError("run_grid needs at least one n_source (None for the default)")
    for name, matrix in datasets.items():
        if not isinstance(matrix, ScoreMatrix):
            raise ValidationError(
                f"dataset {name!r} is a {type(matrix).__name__}, expected a ScoreMatrix")
    for b in budgets:  # budget errors that do not depend on the dataset fail the whole grid
        if isinstance(b, bool) or not isinstance(b, numbers.Real):
            raise ValidationError(f"budgets must be numbers, got {b!r}")
        resolve_budget(b, np.iinfo(np.int64).max)
    n_source = [None if n is None else _as_int(n, "n_source") for n in n_source]
    levels = tuple(float(v) for v in levels)
    if any(not 0.0 < v < 1.0 for v in levels):
        raise ValidationError(f"levels must be in (0, 1), got {list(levels)}")
    options = dict(method_options or {})
    unknown = sorted(set(options) - set(methods))
    if unknown:
        raise ValidationError(f"method_options for methods not in the grid: {unknown}")
    resolved = {name: get_method(name) for name in dict.fromkeys(methods)}
    for name, method in resolved.items():  # option errors fail before any cell runs
        check_options(method, options.get(name, {}))

    cells: list[Cell] = []
    for name, matrix in datasets.items():
        fp = matrix_fingerprint(matrix)
        for n_src in dict.fromkeys(n_source):
            splits = iter_splits(matrix, split, seeds=None if seeds is None else list(seeds),
                                 n_source=n_src, folds=folds, holdout=holdout,
                                 split_seed=split_seed)
            for sp in splits:
                for mname in resolved:
                    for budget in dict.fromkeys(budgets):
                        cells.append(_make_cell(name, fp, matrix, sp, split, n_src, mname,
                                                budget, options.get(mname, {}), levels))
    unique: dict[str, Cell] = {}
    for c in cells:  # a repeated seed gives the same cell twice: keep the first
        unique.setdefault(c.key, c)
    cells = list(unique.values())

    store = PartStore(out)
    store.remove_stale_temporaries()
    keys = [c.key for c in cells]
    done = store.finished(keys, include_errors=not retry_failed)
    todo = [c for c in cells if c.key not in done]
    bar = progress_bar(total=len(cells), desc="grid", show=progress)
    bar.update(len(cells) - len(todo))
    try:
        for row in _execute(todo, datasets, resolved, n_jobs=n_jobs, scheduler=scheduler):
            store.write(row)
            bar.update(1)
    finally:
        bar.close()
    df = to_frame(store.combine(keys))
    _write_summary(df, Path(out))
    return df


def _as_int(value, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise ValidationError(f"{what} must be an integer or None, got {value!r}")
    return int(value)


def _make_cell(name: str, fp: str, matrix: ScoreMatrix, sp, split: str, n_src: int | None,
               mname: str, budget: float, opts: dict, levels: tuple[float, ...] = ()
               ) -> Cell:
    try:
        k, k_error = resolve_budget(budget, matrix.n_items), None
    except ValidationError as exc:
        k, k_error = None, _one_line(exc)
    fold = None if sp.fold is None else int(sp.fold)
    label = getattr(sp, "label", None)
    spec = {
        "v": CELL_VERSION, "dataset": name, "data": fp, "method": mname, "options": opts,
        "budget": float(budget), "n_source": n_src, "split": split, "seed": int(sp.seed),
        "fold": fold, "label": label, "source": rows_fingerprint(sp.source),
        "target": rows_fingerprint(sp.target),
    }
    if levels:  # cells without extra levels keep their keys
        spec["levels"] = list(levels)
    key = stable_hash(spec)
    return Cell(key=key, dataset=name, method=mname, split=split, budget=float(budget), k=k,
                k_error=k_error, n_source=n_src, seed=int(sp.seed), fold=fold, label=label,
                source_rows=np.asarray(sp.source), target_rows=np.asarray(sp.target),
                options=dict(opts), levels=tuple(levels))


@contextmanager
def _dask_backend(scheduler: str) -> Iterator[None]:
    from dask.distributed import Client

    with Client(scheduler) as _client, parallel_config(backend="dask"):
        yield


def _execute(todo: list[Cell], datasets: Mapping[str, ScoreMatrix],
             methods: Mapping[str, Method], *, n_jobs: int,
             scheduler: str | None) -> Iterator[dict]:
    """Yield finished rows as cells complete (sequentially, with joblib or with dask).

    Cells that share a dataset and source rows run as one task with one
    :class:`~coreval.base.FitCache`, so the budgets and methods of a split reuse
    each other's IRT fits and Gaussian estimates.
    """
    if not todo:
        return
    groups: dict[tuple[str, str], list[Cell]] = {}
    for c in todo:
        groups.setdefault((c.dataset, rows_fingerprint(c.source_rows)), []).append(c)
    if scheduler is None and n_jobs == 1:
        for cells in groups.values():
            yield from run_cells(cells, datasets[cells[0].dataset], methods)
        return
    tasks = (delayed(_run_cells_list)(cells, datasets[cells[0].dataset], methods)
             for cells in groups.values())
    if scheduler is not None:
        with _dask_backend(scheduler):
            for rows in Parallel(n_jobs=-1 if n_jobs == 1 else n_jobs,
                                 return_as="generator_unordered")(tasks):
                yield from rows
    else:
        for rows in Parallel(n_jobs=n_jobs, return_as="generator_unordered")(tasks):
            yield from rows


def run_cells(cells: Sequence[Cell], matrix: ScoreMatrix,
              methods: Mapping[str, Method]) -> Iterator[dict]:
    """Run cells of one split with one shared fit cache, yielding each row when done.

    After each cell, JAX's compiled programs are dropped if they hold too many of the
    process's memory mappings (:func:`coreval.jax_cache.release_compiled_programs`), so
    that a long grid does not die in XLA.
    """
    cache = FitCache(maxsize=SPLIT_CACHE_SIZE)
    for c in cells:
        row = run_cell(c, matrix, methods[c.method], cache=cache)
        release_compiled_programs()
        yield row


def _run_cells_list(cells: Sequence[Cell], matrix: ScoreMatrix,
                    methods: Mapping[str, Method]) -> list[dict]:
    return list(run_cells(cells, matrix, methods))


def _one_line(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {msg[0] if msg else ''}".rstrip(": ")


def run_cell(cell: Cell, matrix: ScoreMatrix, method: Method, *,
             cache: FitCache | None = None) -> dict:
    """Compute one cell and return its row (errors are recorded, never raised).

    ``cache`` is shared with the other cells of the same split (see :func:`run_cells`).
    """
    nan = float("nan")
    row: dict[str, Any] = {
        "dataset": cell.dataset, "method": cell.method, "split": cell.split,
        "budget": cell.budget, "k": cell.k,
        "n_source": cell.n_source, "seed": cell.seed,
        "mae": nan, "rmse": nan, "kendall": nan, "spearman": nan, "pearson": nan, "r2": nan,
        "coverage90": nan, "width90": nan,
        "seconds_select": nan, "seconds_fit": nan, "seconds_predict": nan, "coreset": [],
        "n_target": len(cell.target_rows), "n_skipped": None, "interval": None,
        "uses_source_models": None, "error": cell.k_error, "fold": cell.fold,
        "label": cell.label, "task": method.task, "level": nan, "interval_score90": nan,
        "n_cells": None, "n_columns": matrix.n_items, "cell": cell.key, "selection": None,
    }
    if cell.k is None:
        return row
    try:
        source = matrix.take(cell.source_rows)
        target = matrix.take(cell.target_rows)
        fitted = fit_method(method, source, cell.k, seed=cell.seed, cache=cache,
                            **cell.options)
        row["seconds_select"] = fitted.seconds["select"]
        row["seconds_fit"] = fitted.seconds["fit"]
        row["selection"] = fitted.selection
        coreset = fitted.coreset
        row["coreset"] = [str(i) for i in coreset.items]
        row["uses_source_models"] = bool(coreset.uses_source_models)
        t0 = time.perf_counter()
        pred = fitted.predict_array(target.values[:, coreset.indices])
        row["seconds_predict"] = time.perf_counter() - t0
        row["interval"] = pred.interval
        row["level"] = float(pred.level)
        row.update(_score(method.task, source, target, coreset.indices, pred))
        if cell.levels and method.task == "score":
            row["calibration"] = _calibration(
                target.summary_scores(),
                fitted.predict_levels(target.values[:, coreset.indices], cell.levels))
    except Exception as exc:  # a failing cell is recorded, the grid goes on
        row["error"] = _one_line(exc)
    return row


def _score(task: str, source: ScoreMatrix, target: ScoreMatrix, selected: np.ndarray,
           pred) -> dict:
    has_interval = pred.interval != "none" and math.isclose(pred.level, LEVEL)
    if task == "score":
        truth = target.summary_scores()
        mean = np.asarray(pred.mean, dtype=float)
        if mean.size != truth.size:
            raise ValidationError(
                f"score prediction has shape {mean.shape}, expected ({truth.size},)")
        lo, hi = (pred.lower.reshape(truth.shape), pred.upper.reshape(truth.shape)) \
            if has_interval else (None, None)
        m = score_metrics(truth, mean.reshape(truth.shape), lo, hi, level=LEVEL)
        extra = {"n_skipped": int((~np.isfinite(mean)).sum()), "n_cells": int(truth.size)}
    elif task == "impute":
        mean, lo, hi = (_full_columns(a, pred, target) for a in (pred.mean, pred.lower,
                                                                   pred.upper))
        m = impute_metrics(source.values, target.values, mean, lo if has_interval else None,
                           hi if has_interval else None, selected=selected, level=LEVEL)
        extra = {"n_skipped": m["n_skipped"], "n_cells": m["n_cells"]}
    else:
        raise ValidationError(f"unknown task {task!r}; expected 'score' or 'impute'")
    return {"mae": m["mae"], "rmse": m["rmse"], "kendall": m["kendall"],
            "spearman": m["spearman"], "pearson": m["pearson"], "r2": m["r2"],
            "coverage90": m["coverage"], "width90": m["width"],
            "interval_score90": m["interval_score"], **extra}


def _calibration(truth: np.ndarray, predictions: Mapping[float, Any]) -> str:
    """Coverage and mean width of the interval at each level, as a JSON list."""
    rows = []
    for level, pred in sorted(predictions.items()):
        lower, upper = (np.asarray(v, dtype=float).reshape(truth.shape)
                        for v in (pred.lower, pred.upper))
        rows.append({"level": float(level), "coverage": coverage(truth, lower, upper),
                     "width": mean_width(lower, upper), "interval": pred.interval})
    return json.dumps(rows)


def _full_columns(values: np.ndarray, pred, target: ScoreMatrix) -> np.ndarray:
    """Imputed values as (n_target, n_columns), mapping ``pred.columns`` ids if given."""
    values = np.asarray(values, dtype=float)
    n, d = target.shape
    if pred.columns is not None:
        cols = target.item_index(np.asarray(pred.columns).astype(str))
        if values.shape != (n, len(cols)):
            raise ValidationError(
                f"imputed values have shape {values.shape}, expected ({n}, {len(cols)})")
        full = np.full((n, d), np.nan)
        full[:, cols] = values
        return full
    if values.shape != (n, d):
        raise ValidationError(f"imputed values have shape {values.shape}, expected ({n}, {d})")
    return values


def _write_summary(df: pd.DataFrame, out: Path) -> Path:
    from coreval.harness.summary import format_summary, format_table, stability_table

    n_err = int(df["error"].notna().sum()) if len(df) else 0
    text = [f"# Results summary: {out.name}", "",
            f"{len(df)} runs, {n_err} failed. Mean ± sd over seeds/folds.", "",
            format_summary(df), ""]
    stab = stability_table(df)
    if len(stab):
        text += ["## Coreset stability across seeds (Nogueira Φ̂, Hamming)", "",
                 format_table(stab), ""]
    return write_text_atomic(out.parent / f"{out.stem}.summary.md", "\n".join(text))
