"""BenchPress's greedy probe search: grow the probe set by the held-out-model score itself.

At each step every remaining candidate benchmark is added to the current probe set in turn,
the enlarged set is scored by :func:`coreval.harness.cells.evaluate_probes` (every model
reveals only its probes and the rest of its row is completed), and the candidate with the
best score is kept (Zeng & Papailiopoulos 2026, "You Don't Need to Run Every Eval", section 5;
``experiments/sec5_findings/optimal_probe`` and ``ranking_preservation/greedy_probe_set`` of
their code). The objective is the MedAE over every observed cell with the revealed probe
cells at zero error, or the margin pairwise ranking accuracy.

The search scores candidates on the very models it is then evaluated on, so the score of the
chosen set is in-sample for the choice; it costs ``k × n_candidates`` probe evaluations of
``n_models / group_size`` completions each, which is why the covariance-based selectors of
:mod:`coreval.gaussian` (seconds) exist beside it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal, NamedTuple

import numpy as np
from joblib import Parallel, delayed

from coreval._progress import progress
from coreval.errors import ValidationError
from coreval.harness.cells import Completer, evaluate_probes

Objective = Literal["medae", "rank_acc"]


class ProbeSearch(NamedTuple):
    """The outcome of :func:`greedy_probe_search`.

    Attributes
    ----------
    selected : list of int
        The probe columns in the order they were added.
    scores : list of float
        The objective of the probe set after each step.
    results : list of dict
        :func:`~coreval.harness.cells.evaluate_probes`'s result for the set after each step.
    """

    selected: list[int]
    scores: list[float]
    results: list[dict]


def _check(values: np.ndarray, k: int, candidates: Sequence[int] | None,
           objective: str) -> np.ndarray:
    if objective not in ("medae", "rank_acc"):
        raise ValidationError(f"objective must be 'medae' or 'rank_acc', got {objective!r}")
    if values.ndim != 2:
        raise ValidationError(f"values must be a 2-D (models × benchmarks) matrix, got shape "
                              f"{values.shape}")
    pool = (np.arange(values.shape[1]) if candidates is None
            else np.asarray([int(c) for c in candidates], dtype=np.intp))
    if pool.size == 0 or pool.min() < 0 or pool.max() >= values.shape[1]:
        raise ValidationError(f"candidates must be column positions in [0, {values.shape[1]})")
    if np.unique(pool).size != pool.size:
        raise ValidationError("candidates repeat a column")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not 1 <= k <= pool.size:
        raise ValidationError(f"k must be an integer in [1, {pool.size}] (the number of "
                              f"candidates), got {k!r}")
    return pool


def greedy_probe_search(values: np.ndarray, k: int, completer: Completer, *,
                        candidates: Sequence[int] | None = None,
                        objective: Objective = "medae", group_size: int = 1,
                        margin: float = 5.0, n_jobs: int = 1,
                        show_progress: bool | None = None) -> ProbeSearch:
    """Choose ``k`` probe benchmarks greedily by their held-out-model score.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_benchmarks)
        Scores, NaN where a model has no score.
    k : int
        Number of probes.
    completer : callable
        ``completer(train_values) -> Completion`` (e.g.
        :func:`coreval.lowrank.complete_bias_als`, BenchPress's default).
    candidates : sequence of int, optional
        Columns the probes may come from (default: all), e.g. a low-cost allowlist.
    objective : {"medae", "rank_acc"}
        Minimise the MedAE (revealed probe cells at zero error, the authors' convention) or
        maximise the margin pairwise ranking accuracy (the authors' measure: every pair
        of the completed leaderboard, median over benchmarks).
    group_size, margin
        As in :func:`~coreval.harness.cells.evaluate_probes`.
    n_jobs : int
        joblib workers over the candidates of a step (``-1``: all cores); the result does
        not depend on it.
    show_progress : bool, optional
        One bar over the steps (default: :func:`coreval._progress.progress_enabled`).

    Returns
    -------
    ProbeSearch
        Ties go to the earlier candidate of ``candidates``.
    """
    values = np.asarray(values, dtype=np.float64)
    pool = _check(values, k, candidates, objective)
    sign = 1.0 if objective == "medae" else -1.0
    selected: list[int] = []
    scores: list[float] = []
    results: list[dict] = []
    for _ in progress(range(int(k)), desc="greedy probe steps", show=show_progress):
        remaining = [int(c) for c in pool if int(c) not in selected]
        trials = Parallel(n_jobs=n_jobs)(
            delayed(evaluate_probes)(values, [*selected, c], completer, group_size=group_size,
                                     margin=margin, show_progress=False)
            for c in remaining)
        keys = np.array([sign * r[objective] for r in trials])
        best = int(np.argmin(np.where(np.isnan(keys), np.inf, keys)))  # first one on ties
        selected.append(remaining[best])
        scores.append(float(trials[best][objective]))
        results.append(trials[best])
    return ProbeSearch(selected, scores, results)
