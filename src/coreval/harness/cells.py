"""Held-out-cell evaluation of matrix completion (the protocol of BenchPress, section 4.2).

The unit is a held-out *cell* of a benchmark-level score matrix, not a held-out model. A fold
file lists, per fold, the ``(row, column)`` cells to hide; every other observed cell is
training data. A completer maps the training matrix to a :class:`~coreval.lowrank.Completion`
of every cell; the fold's metrics are computed on its hidden cells:

* ``medae`` (median absolute error, score points), ``mae``;
* ``coverage90`` (share of hidden cells inside the central 90 % interval) and ``width90``
  (median interval width over the hidden cells);
* pairwise ranking accuracy at a margin (:func:`ranking_pairs`): per benchmark, its
  leaderboard is completed with the true scores of the training cells and the predictions of
  the hidden cells; every pair of models with at least one hidden cell and a true gap of at
  least ``margin`` points counts, and is correct when the predicted order is the true one
  (predicted ties are wrong). Counts are pooled over folds per benchmark; the headline is the
  median over benchmarks (``compute_ranking_accuracy`` of the authors'
  ``benchpress/evaluation_harness.py`` with ``aggregation="pool"``, summarised as in
  ``experiments/sec5_findings/ranking_preservation/run.py``).

:func:`evaluate_probes` scores a probe set the same way with held-out *models*: each model
reveals only its probe benchmarks and the rest of its row is predicted.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from numbers import Integral
from pathlib import Path
from typing import NamedTuple, TypeVar

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from coreval._atomic import write_atomic
from coreval._progress import progress_bar
from coreval.errors import ValidationError
from coreval.jax_cache import release_compiled_programs
from coreval.lowrank.complete import Completion

#: ``completer(train_values) -> Completion`` of every cell (native scales).
Completer = Callable[[np.ndarray], Completion]
T = TypeVar("T")


class CellFold(NamedTuple):
    """One fold of a held-out-cell protocol.

    Attributes
    ----------
    seed, fold : int
        Labels from the fold file.
    rows, cols : ndarray of int
        The held-out cells.
    """

    seed: int
    fold: int
    rows: np.ndarray
    cols: np.ndarray


def read_cell_folds(path: str | Path, shape: tuple[int, int] | None = None) -> list[CellFold]:
    """Read a fold file: ``{"folds": [{"seed", "fold", "test_cells": [[row, col], ...]}]}``.

    Parameters
    ----------
    path : str or Path
        JSON file (the BenchPress ``folds_s10_f3_bs42_ms1.json`` layout).
    shape : (n_rows, n_cols), optional
        Matrix shape; every cell must lie inside it.
    """
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise ValidationError(f"fold file {path} does not exist") from None
    except json.JSONDecodeError as exc:
        raise ValidationError(f"fold file {path} is not valid JSON: {exc}") from None
    records = data.get("folds") if isinstance(data, dict) else None
    if not isinstance(records, list) or not records:
        raise ValidationError(f"fold file {path} has no 'folds' list")
    folds = []
    for k, rec in enumerate(records):
        cells = np.asarray(rec.get("test_cells", []) if isinstance(rec, dict) else [])
        if cells.ndim != 2 or cells.shape[1] != 2 or cells.shape[0] == 0:
            raise ValidationError(f"fold {k} of {path} needs a non-empty 'test_cells' list of "
                                  "[row, column] pairs")
        if not np.issubdtype(cells.dtype, np.integer):
            raise ValidationError(f"fold {k} of {path}: cells must be integer indices")
        if (cells < 0).any():  # numpy would read them from the end of the matrix
            raise ValidationError(f"fold {k} of {path} has negative cell indices")
        if shape is not None and ((cells[:, 0] >= shape[0]).any()
                                  or (cells[:, 1] >= shape[1]).any()):
            raise ValidationError(f"fold {k} of {path} has cells outside the {shape[0]} x "
                                  f"{shape[1]} matrix")
        if np.unique(cells, axis=0).shape[0] < cells.shape[0]:
            raise ValidationError(f"fold {k} of {path} lists a cell more than once")
        folds.append(CellFold(int(rec.get("seed", 0)), int(rec.get("fold", k)),
                              cells[:, 0].astype(np.intp), cells[:, 1].astype(np.intp)))
    return folds


def ranking_pairs(actual: np.ndarray, predicted: np.ndarray, heldout: np.ndarray,
                  margin: float) -> tuple[int, int]:
    """Scored and correctly ordered pairs of one leaderboard (see the module docstring).

    Parameters
    ----------
    actual, predicted : ndarray of shape (n,)
        True and completed scores of the models observed on one benchmark.
    heldout : ndarray of bool, shape (n,)
        Models whose cell was hidden (their ``predicted`` is a prediction).
    margin : float
        Smallest true gap of a scored pair.

    Returns
    -------
    (n_pairs, n_correct) : tuple of int
    """
    ok = np.isfinite(actual) & np.isfinite(predicted)
    a, p, h = actual[ok], predicted[ok], heldout[ok]
    i, j = np.triu_indices(a.size, k=1)
    gap = a[i] - a[j]
    scored = (h[i] | h[j]) & (gap != 0) & (np.abs(gap) >= margin)
    correct = np.sign(p[i] - p[j]) == np.sign(gap)
    return int(scored.sum()), int((scored & correct).sum())


class FoldPrediction(NamedTuple):
    """What a completer predicted for one fold's held-out cells (in the fold's order).

    Attributes
    ----------
    predicted, lower, upper : ndarray of shape (n_cells,)
        Point prediction and 90 % interval (NaN bounds: no interval).
    seconds : float
        Wall-clock time of the completion.
    details : str
        The completion's ``details`` (choices made inside the fold) as JSON; ``"null"``
        when it has none.
    """

    predicted: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    seconds: float
    details: str


def _predict_fold(values: np.ndarray, fold: CellFold, completer: Completer) -> FoldPrediction:
    """Hide the fold's cells, complete the matrix, keep the held-out cells' predictions."""
    train = values.copy()
    train[fold.rows, fold.cols] = np.nan
    start = time.perf_counter()
    comp = completer(train)
    seconds = time.perf_counter() - start
    if comp.mean.shape != values.shape:
        raise ValidationError(f"completer returned shape {comp.mean.shape}, expected "
                              f"{values.shape}")
    pred = np.asarray(comp.mean[fold.rows, fold.cols], dtype=np.float64)
    if np.isnan(pred).any():
        raise ValidationError(
            f"the completion left {int(np.isnan(pred).sum())} held-out cells of fold "
            f"(seed {fold.seed}, fold {fold.fold}) without a prediction (NaN)")
    return FoldPrediction(pred, np.asarray(comp.lower[fold.rows, fold.cols], dtype=np.float64),
                          np.asarray(comp.upper[fold.rows, fold.cols], dtype=np.float64),
                          float(seconds), _as_json(comp.details))


def _as_json(details) -> str:
    # numpy scalars and arrays (rank choices, weights) are written as the numbers they hold
    return json.dumps(details, default=lambda o: o.tolist() if hasattr(o, "tolist") else str(o))


def _checkpoint_file(checkpoint: Path, fold: CellFold) -> Path:
    return checkpoint / f"seed{fold.seed}_fold{fold.fold}.npz"


def _save_npz(path: Path, **arrays) -> None:
    """Write arrays to ``path`` atomically (a checkpoint unit)."""
    def write(tmp: Path) -> None:
        with open(tmp, "wb") as fh:  # a file object: np.savez would append ".npz" to a name
            np.savez(fh, **arrays)

    write_atomic(path, write)


def _load_npz(path: Path, expected: dict[str, np.ndarray], mismatch: str) -> dict:
    """A checkpoint unit's arrays, after checking that ``expected`` ones match exactly."""
    with np.load(path) as z:
        if not all(np.array_equal(z[k], v, equal_nan=True) for k, v in expected.items()):
            raise ValidationError(f"checkpoint {path} holds {mismatch}")
        return {k: z[k] for k in z.files}


def _save_fold(path: Path, values: np.ndarray, fold: CellFold, pred: FoldPrediction) -> None:
    _save_npz(path, rows=fold.rows, cols=fold.cols, actual=values[fold.rows, fold.cols],
              predicted=pred.predicted, lower=pred.lower, upper=pred.upper,
              seconds=pred.seconds, details=pred.details)


def _load_fold(path: Path, values: np.ndarray, fold: CellFold) -> FoldPrediction:
    """A stored fold, checked to be this fold of this matrix."""
    z = _load_npz(path, {"rows": fold.rows, "cols": fold.cols,
                         "actual": values[fold.rows, fold.cols]},
                  f"other cells or other scores than fold (seed {fold.seed}, fold "
                  f"{fold.fold}) of this matrix; use one checkpoint folder per matrix, fold "
                  "file and completer")
    return FoldPrediction(z["predicted"], z["lower"], z["upper"], float(z["seconds"]),
                          str(z["details"]))


def _fold_metrics(values: np.ndarray, fold: CellFold, pred: FoldPrediction,
                  margin: float) -> tuple[dict, dict[int, tuple[int, int]]]:
    y = values[fold.rows, fold.cols]
    lo, hi = pred.lower, pred.upper
    err = np.abs(pred.predicted - y)
    has_interval = not (np.isnan(lo).any() or np.isnan(hi).any())  # NaN: no interval
    pairs: dict[int, tuple[int, int]] = {}
    for col in np.unique(fold.cols):
        models = np.flatnonzero(~np.isnan(values[:, col]))
        in_col = fold.cols == col
        held = np.zeros(values.shape[0], dtype=bool)
        held[fold.rows[in_col]] = True
        completed = values[:, col].copy()
        completed[fold.rows[in_col]] = pred.predicted[in_col]
        pairs[int(col)] = ranking_pairs(values[models, col], completed[models],
                                        held[models], margin)
    n_pairs = np.array([v[0] for v in pairs.values()])
    n_ok = np.array([v[1] for v in pairs.values()])
    with np.errstate(invalid="ignore", divide="ignore"):
        acc = n_ok / n_pairs
    row = {"seed": fold.seed, "fold": fold.fold, "n_cells": int(y.size),
           "medae": float(np.median(err)), "mae": float(np.mean(err)),
           "coverage90": float(np.mean((y >= lo) & (y <= hi))) if has_interval else np.nan,
           "width90": float(np.median(hi - lo)) if has_interval else np.nan,
           "rank_acc_fold": float(np.nanmedian(acc)) if np.isfinite(acc).any() else np.nan,
           "seconds": pred.seconds, "details": pred.details}
    return row, pairs


def _resumable_map(n: int, compute: Callable[[int], T], *, n_jobs: int,
                   path: Callable[[int], Path] | None, save: Callable[[Path, int, T], None],
                   load: Callable[[Path, int], T], desc: str,
                   show_progress: bool | None) -> list[T]:
    """``[compute(i) for i in range(n)]``, in parallel and resumable.

    With ``path``, unit ``i`` is read with ``load`` when ``path(i)`` exists, and written with
    ``save`` as soon as it finishes, so an interrupted run resumes with the units it had not
    finished. ``n_jobs > 1`` (or -1) runs the units in joblib workers.
    """
    if isinstance(n_jobs, bool) or not isinstance(n_jobs, Integral) or n_jobs == 0 \
            or n_jobs < -1:
        raise ValidationError(f"n_jobs must be a positive int or -1, got {n_jobs!r}")
    n_jobs = int(n_jobs)
    done: dict[int, T] = {}
    if path is not None:
        done = {i: load(path(i), i) for i in range(n) if path(i).exists()}
    todo = [i for i in range(n) if i not in done]
    bar = progress_bar(total=n, desc=desc, show=show_progress)
    bar.update(len(done))
    if n_jobs == 1:
        results: Iterable[tuple[int, T]] = (_indexed(compute, i) for i in todo)
    else:
        results = Parallel(n_jobs=n_jobs, return_as="generator_unordered")(
            delayed(_indexed)(compute, i) for i in todo)
    for i, result in results:
        if path is not None:
            save(path(i), i, result)
        done[i] = result
        bar.update(1)
    bar.close()
    return [done[i] for i in range(n)]


def _indexed(compute: Callable[[int], T], i: int) -> tuple[int, T]:
    """``(i, compute(i))``; then JAX's compiled programs are dropped if they hold too many
    memory mappings (:func:`coreval.jax_cache.release_compiled_programs`)."""
    result = compute(i)
    release_compiled_programs()
    return i, result


def evaluate_cells(values: np.ndarray, folds: list[CellFold], completer: Completer, *,
                   margin: float = 5.0, n_jobs: int = 1, checkpoint: str | Path | None = None,
                   show_progress: bool | None = None,
                   ) -> tuple[pd.DataFrame, dict, pd.DataFrame]:
    """Run a completer on every fold and score its held-out cells.

    Folds run in parallel with ``n_jobs`` joblib workers, and with ``checkpoint`` each
    finished fold's held-out predictions are written to that folder (atomically, one file
    per fold), so an interrupted evaluation resumes with the folds it had not finished and
    ends with the same numbers.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_benchmarks)
        The full observed matrix (NaN = unobserved).
    folds : list of CellFold
        From :func:`read_cell_folds`; every held-out cell must be observed.
    completer : callable
        ``completer(train_values) -> Completion``.
    margin : float
        Margin of the pairwise ranking accuracy (score points).
    n_jobs : int
        Folds completed at once (joblib workers; ``-1``: all cores). The completer must
        then be picklable by cloudpickle (lambdas are).
    checkpoint : str or Path, optional
        Folder of finished folds (``seed<S>_fold<F>.npz``), read on a re-run. One folder per
        matrix, fold file and completer: a stored fold whose cells or true scores differ
        from the fold's is an error, but a changed completer is not detected.
    show_progress : bool, optional
        Progress bar (default: see :func:`coreval._progress.progress_enabled`).

    Returns
    -------
    per_fold : DataFrame
        One row per fold: ``seed, fold, n_cells, medae, mae, coverage90, width90,
        rank_acc_fold`` (median over benchmarks within the fold), ``seconds`` and
        ``details`` (the completion's ``details`` as JSON, ``"null"`` without any).
    summary : dict
        Medians over folds of the per-fold metrics (``medae``, ``mae``, ``coverage90``,
        ``width90``, ``seconds``), the fold range of ``medae``, ``medae_mean``, the pooled
        ``medae_pooled``, ``coverage90_pooled`` and ``width90_pooled`` (over all held-out
        cells), and ``rank_acc`` (pairs pooled over folds per benchmark, median over
        benchmarks).
    cells : DataFrame
        Every held-out prediction: ``seed, fold, row, col, actual, predicted, lower, upper``.
    """
    values = np.asarray(values, dtype=np.float64)
    for fold in folds:
        if np.isnan(values[fold.rows, fold.cols]).any():
            raise ValidationError(f"fold (seed {fold.seed}, fold {fold.fold}) holds out "
                                  "unobserved cells")
    ckpt = None if checkpoint is None else Path(checkpoint)
    preds = _resumable_map(
        len(folds), lambda i: _predict_fold(values, folds[i], completer), n_jobs=n_jobs,
        path=None if ckpt is None else (lambda i: _checkpoint_file(ckpt, folds[i])),
        save=lambda path, i, pred: _save_fold(path, values, folds[i], pred),
        load=lambda path, i: _load_fold(path, values, folds[i]),
        desc="cell folds", show_progress=show_progress)
    rows, all_pairs, cell_frames = [], {}, []
    for fold, pred in zip(folds, preds, strict=True):
        row, pairs = _fold_metrics(values, fold, pred, margin)
        rows.append(row)
        for col, (n, ok) in pairs.items():
            tot = all_pairs.get(col, (0, 0))
            all_pairs[col] = (tot[0] + n, tot[1] + ok)
        cell_frames.append(pd.DataFrame({
            "seed": fold.seed, "fold": fold.fold, "row": fold.rows, "col": fold.cols,
            "actual": values[fold.rows, fold.cols], "predicted": pred.predicted,
            "lower": pred.lower, "upper": pred.upper}))
    per_fold = pd.DataFrame(rows)
    cells = pd.concat(cell_frames, ignore_index=True)
    acc = [ok / n for n, ok in all_pairs.values() if n > 0]
    summary = {key: float(per_fold[key].median())
               for key in ("medae", "mae", "coverage90", "width90", "rank_acc_fold", "seconds")}
    summary.update({
        "medae_mean": float(per_fold["medae"].mean()),
        "medae_min": float(per_fold["medae"].min()),
        "medae_max": float(per_fold["medae"].max()),
        "medae_pooled": float(np.median(np.abs(cells["predicted"] - cells["actual"]))),
        "coverage90_pooled": (float(np.mean((cells["actual"] >= cells["lower"])
                                            & (cells["actual"] <= cells["upper"])))
                              if not np.isnan(cells[["lower", "upper"]].to_numpy()).any()
                              else float("nan")),
        "width90_pooled": float(np.median(cells["upper"] - cells["lower"])),
        "rank_acc": float(np.median(acc)) if acc else float("nan"),
        "n_folds": len(folds),
    })
    return per_fold, summary, cells


def evaluate_probes(values: np.ndarray, probes: list[int], completer: Completer, *,
                    group_size: int = 1, margin: float = 5.0, n_jobs: int = 1,
                    checkpoint: str | Path | None = None,
                    show_progress: bool | None = None) -> dict:
    """Score a probe set with held-out models (the authors' all-known-cells protocol).

    Every model in turn reveals only its probe benchmarks: its other observed cells are
    hidden (the other models keep all theirs), the matrix is completed, and the hidden cells
    are predicted (``experiments/sec5_findings/optimal_probe/all_known/run.py`` of BenchPress).
    ``group_size > 1`` hides that many models at once (fewer completions, slightly less
    training data per completion).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_benchmarks)
    probes : list of int
        Probe columns.
    completer : callable
        ``completer(train_values) -> Completion``.
    group_size : int
        Models hidden per completion (1 = the authors' protocol).
    margin : float
        Margin of the pairwise ranking accuracy.
    n_jobs : int
        Completions run at once (joblib workers; ``-1``: all cores).
    checkpoint : str or Path, optional
        Folder of finished completions (``rows<first>-<last>.npz``, one per group of hidden
        models), read on a re-run so that an interrupted evaluation resumes; one folder per
        matrix, probe set, group size and completer (a stored completion of other rows,
        scores or probes is an error).

    Returns
    -------
    dict
        ``medae`` over every observed cell with the revealed probe cells at zero error (the
        authors' convention), ``medae_hidden`` over the non-probe cells only, ``n_cells``,
        ``n_hidden``, ``rank_acc`` (the authors' ranking measure: every pair of models at
        least ``margin`` apart on a benchmark, ordered by the completed leaderboard of the
        revealed probe scores and the predicted hidden cells; per benchmark, median over
        benchmarks) and ``rank_acc_pooled`` (those pairs pooled over benchmarks),
        ``rank_acc_hidden`` and ``rank_acc_hidden_pooled`` (only the pairs with a hidden
        cell, the stricter measure), and ``seconds`` per completion.
    """
    values = np.asarray(values, dtype=np.float64)
    observed = ~np.isnan(values)
    probes = np.asarray(sorted(set(int(p) for p in probes)), dtype=np.intp)
    if probes.size == 0 or probes.min() < 0 or probes.max() >= values.shape[1]:
        raise ValidationError(f"probes must be column positions in [0, {values.shape[1]})")
    if isinstance(group_size, bool) or int(group_size) < 1:
        raise ValidationError(f"group_size must be a positive integer, got {group_size!r}")
    hidden = observed.copy()
    hidden[:, probes] = False
    predicted = np.where(observed, values, np.nan)
    rows = np.flatnonzero(hidden.any(axis=1))
    groups = [rows[i:i + int(group_size)] for i in range(0, rows.size, int(group_size))]

    def complete_group(i: int) -> tuple[np.ndarray, float]:
        """The completed rows of group ``i`` and the completion's seconds."""
        train = values.copy()
        train[groups[i]] = np.where(hidden[groups[i]], np.nan, values[groups[i]])
        start = time.perf_counter()
        comp = completer(train)
        return np.asarray(comp.mean[groups[i]], dtype=np.float64), time.perf_counter() - start

    def save(path: Path, i: int, result: tuple[np.ndarray, float]) -> None:
        _save_npz(path, rows=groups[i], probes=probes, actual=values[groups[i]],
                  mean=result[0], seconds=result[1])

    def load(path: Path, i: int) -> tuple[np.ndarray, float]:
        z = _load_npz(path, {"rows": groups[i], "probes": probes, "actual": values[groups[i]]},
                      "other models, scores or probes than this evaluation; use one "
                      "checkpoint folder per matrix, probe set, group size and completer")
        return z["mean"], float(z["seconds"])

    ckpt = None if checkpoint is None else Path(checkpoint)
    results = _resumable_map(
        len(groups), complete_group, n_jobs=n_jobs,
        path=None if ckpt is None else (
            lambda i: ckpt / f"rows{groups[i][0]}-{groups[i][-1]}.npz"),
        save=save, load=load, desc="probe completions", show_progress=show_progress)
    for group, (mean, _) in zip(groups, results, strict=True):
        predicted[group] = np.where(hidden[group], mean, predicted[group])
    seconds = [sec for _, sec in results]
    if np.isnan(predicted[hidden]).any():  # ranking_pairs would skip them quietly
        raise ValidationError(f"the completion left {int(np.isnan(predicted[hidden]).sum())} "
                              "hidden cells without a prediction (NaN)")
    err = np.abs(predicted - values)
    ranking = {}
    for name, scored in (("rank_acc", observed), ("rank_acc_hidden", hidden)):
        # every pair counts (scored = observed), or only pairs with a hidden cell
        pairs = []
        for col in range(values.shape[1]):
            on_board = np.flatnonzero(observed[:, col])  # the models with a score here
            pairs.append(ranking_pairs(values[on_board, col], predicted[on_board, col],
                                       scored[on_board, col], margin))
        acc = [ok / n for n, ok in pairs if n > 0]
        n_pairs, n_ok = sum(n for n, _ in pairs), sum(ok for _, ok in pairs)
        ranking[name] = float(np.median(acc)) if acc else float("nan")
        ranking[f"{name}_pooled"] = n_ok / n_pairs if n_pairs else float("nan")
    return {"medae": float(np.median(err[observed])),
            "medae_hidden": float(np.median(err[hidden])),
            "n_cells": int(observed.sum()), "n_hidden": int(hidden.sum()),
            **ranking, "seconds": float(np.mean(seconds))}
