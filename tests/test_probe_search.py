"""BenchPress's greedy probe search (coreval.harness.probe_search)."""

from __future__ import annotations

import numpy as np
import pytest

from coreval.errors import ValidationError
from coreval.harness.cells import evaluate_probes
from coreval.harness.probe_search import greedy_probe_search
from coreval.lowrank import complete_bias_als


def small_matrix(rng, n_rows=14, n_cols=6, observed=0.8):
    """Percentage scores with rank-1 logits plus biases and some missing cells."""
    logit = (rng.normal(0, 0.8, (n_rows, 1)) * rng.normal(0, 0.8, (1, n_cols))
             + rng.normal(0, 0.5, (1, n_cols)) + rng.normal(0, 0.3, (n_rows, n_cols)))
    full = 100 / (1 + np.exp(-logit))
    mask = rng.random(full.shape) < observed
    mask[:, 0] = True
    return np.where(mask, full, np.nan)


def fast_completer(train):
    return complete_bias_als(train, rank=1, n_iter=8, n_ensemble=1)


def test_each_step_keeps_the_best_candidate_by_brute_force(rng):
    values = small_matrix(rng)
    search = greedy_probe_search(values, 2, fast_completer)
    first = [evaluate_probes(values, [c], fast_completer)["medae"] for c in range(6)]
    assert search.selected[0] == int(np.argmin(first))
    assert search.scores[0] == pytest.approx(min(first))
    rest = [c for c in range(6) if c != search.selected[0]]
    second = [evaluate_probes(values, [search.selected[0], c], fast_completer)["medae"]
              for c in rest]
    assert search.selected[1] == rest[int(np.argmin(second))]
    assert search.scores[1] == pytest.approx(min(second))
    assert search.results[1]["medae"] == pytest.approx(search.scores[1])


def test_candidates_objective_and_workers(rng):
    values = small_matrix(rng)
    pool = [1, 3, 4]
    search = greedy_probe_search(values, 2, fast_completer, candidates=pool,
                                 objective="rank_acc", margin=2.0)
    assert set(search.selected) <= set(pool) and len(set(search.selected)) == 2
    first = [evaluate_probes(values, [c], fast_completer, margin=2.0)["rank_acc"]
             for c in pool]
    assert search.selected[0] == pool[int(np.argmax(first))]
    parallel = greedy_probe_search(values, 2, fast_completer, candidates=pool,
                                   objective="rank_acc", margin=2.0, n_jobs=2)
    assert parallel.selected == search.selected
    assert parallel.scores == pytest.approx(search.scores)


@pytest.mark.parametrize("kwargs, message", [
    (dict(k=0), "k must be an integer in \\[1, 6\\]"),
    (dict(k=7), "k must be an integer in \\[1, 6\\]"),
    (dict(k=2, candidates=[0, 9]), "column positions in \\[0, 6\\)"),
    (dict(k=1, candidates=[1, 1]), "candidates repeat"),
    (dict(k=1, objective="mae"), "objective must be"),
])
def test_rejects_bad_options(rng, kwargs, message):
    values = small_matrix(rng)
    k = kwargs.pop("k")
    with pytest.raises(ValidationError, match=message):
        greedy_probe_search(values, k, fast_completer, **kwargs)
