"""Bayesian stacking of the low-rank model's candidate ranks (Yao et al. 2018)."""

from __future__ import annotations

import numpy as np
import pytest

from coreval.errors import ValidationError
from coreval.lowrank import complete_bayes, stack_ranks
from coreval.lowrank.rank_choice import mixture_counts


@pytest.mark.parametrize("weights, n", [([0.5, 0.5], 10), ([0.7, 0.2, 0.1], 7),
                                        ([1.0, 0.0, 0.0], 300), ([0.333, 0.333, 0.334], 100)])
def test_mixture_counts_round_by_largest_remainder(weights, n):
    counts = mixture_counts(np.array(weights), n)
    assert counts.sum() == n
    assert np.all(np.abs(counts - np.array(weights) / np.sum(weights) * n) < 1.0)
    assert np.all(counts[np.array(weights) == 0.0] == 0)


def _posteriors(rng, z, good_cols, n_draws=200):
    """Draws of a candidate whose cell means are right on ``good_cols`` and 2 off elsewhere."""
    shift = np.where(np.isin(np.arange(z.shape[1]), good_cols), 0.0, 2.0)
    loc = z[None] + shift[None, None] + rng.normal(0, 0.05, (n_draws, *z.shape))
    return {"loc": loc, "sigma": np.full((n_draws, z.shape[1]), 0.5)}


def test_stacking_weights_maximise_the_loo_log_score(rng):
    """The weights equal a grid search of the stacked PSIS-LOO log score (a second solver)."""
    import warnings

    import arviz as az

    from coreval.lowrank.rank_choice import _loo_data

    z = rng.normal(size=(12, 5))
    observed = np.ones(z.shape, dtype=bool)
    posts = {1: _posteriors(rng, z, [0, 1, 2]), 2: _posteriors(rng, z, [3, 4])}
    mixture, details = stack_ranks(lambda r: posts[r], (1, 2), z, observed, None)

    with warnings.catch_warnings():  # high Pareto k on these sharp fake posteriors
        warnings.simplefilter("ignore")
        pointwise = {r: np.asarray(az.loo(_loo_data(p, z, observed, None), pointwise=True)
                                   ["loo_i"]).ravel() for r, p in posts.items()}
    grid = np.linspace(0.0, 1.0, 1001)
    score = [np.sum(np.logaddexp(np.log(w + 1e-300) + pointwise[1],
                                 np.log(1 - w + 1e-300) + pointwise[2])) for w in grid]
    best = grid[int(np.argmax(score))]
    assert 0.2 < best < 0.8  # each candidate is right on some cells: an interior optimum
    assert details["weights"][1] == pytest.approx(best, abs=0.01)
    assert sum(details["weights"].values()) == pytest.approx(1.0)
    assert details["rank"] == (1 if best > 0.5 else 2)
    # the mixture's draws: the counts of each candidate, taken from that candidate
    n1 = mixture_counts(np.array([details["weights"][1], details["weights"][2]]), 200)[0]
    assert mixture["loc"].shape == (200, *z.shape) and mixture["sigma"].shape == (200, 5)
    shift = mixture["loc"][:, :, 4].mean(axis=1) - z[:, 4].mean()
    assert np.sum(shift > 1.0) == n1  # rank 1 is 2 off on column 4, rank 2 is right there


def test_stacking_puts_the_weight_on_a_dominating_candidate(rng):
    z = rng.normal(size=(10, 4))
    observed = rng.random(z.shape) < 0.8
    posts = {0: _posteriors(rng, z, []), 3: _posteriors(rng, z, [0, 1, 2, 3])}
    mixture, details = stack_ranks(lambda r: posts[r], (0, 3), z, observed, 4.0)
    assert details["weights"][3] > 0.99 and details["rank"] == 3
    np.testing.assert_allclose(mixture["loc"].mean(axis=0), posts[3]["loc"].mean(axis=0),
                               atol=0.02)
    assert set(details["elpd"]) == {0, 3} and details["elpd"][3] > details["elpd"][0]


def test_stacking_a_single_rank_is_its_fit(rng):
    post = _posteriors(rng, rng.normal(size=(3, 2)), [0, 1], n_draws=5)
    mixture, details = stack_ranks(lambda r: post, (2,), None, None, None)
    assert mixture is post and details is None


def test_complete_bayes_stacks_the_simulated_rank(rng):
    """NUTS fits of ranks 0 and 2 on rank-2 data: the stack is the rank-2 fit."""
    from test_lowrank import simulate

    full, values = simulate(rng, n_rows=30, n_cols=14, rank=2, noise=0.05, observed=0.7)
    opts = dict(num_warmup=150, num_samples=100, max_tree_depth=6, seed=0)
    stacked = complete_bayes(values, rank=(0, 2), rank_combination="stack", **opts)
    chosen = complete_bayes(values, rank=(0, 2), **opts)
    assert stacked.details["weights"][2] > 0.95
    hidden = np.isnan(values)
    err = {name: np.median(np.abs(c.mean - full)[hidden]) for name, c in
           (("stacked", stacked), ("chosen", chosen))}
    assert err["stacked"] < 1.1 * err["chosen"]
    assert np.mean((full[hidden] >= stacked.lower[hidden])
                   & (full[hidden] <= stacked.upper[hidden])) > 0.75
    with pytest.raises(ValidationError, match="rank_combination"):
        complete_bayes(values, rank=(0, 2), rank_combination="average")
