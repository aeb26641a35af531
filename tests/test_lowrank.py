"""The low-rank engine (transform, Bias-ALS, Bayesian model) and the held-out-cell harness."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from coreval.errors import ValidationError
from coreval.harness.cells import evaluate_cells, ranking_pairs, read_cell_folds
from coreval.lowrank import (
    als_init,
    als_step,
    complete_als,
    complete_bayes,
    complete_bias_als,
    conformal_factor,
    fit_als,
    fit_transform,
    forward,
    inner_folds,
    inner_split,
    inverse,
    select_als,
)


def simulate(rng, n_rows=40, n_cols=25, rank=2, noise=0.05, observed=0.6):
    """Percentage scores whose logits are low rank plus biases; a rating column in column 0."""
    a = rng.normal(0, 0.8, n_rows)
    c = rng.normal(0, 0.8, n_cols)
    U = rng.normal(0, 1, (n_rows, rank))
    V = rng.normal(0, 0.6, (n_cols, rank))
    logit = 0.2 + a[:, None] + c[None, :] + U @ V.T + rng.normal(0, noise, (n_rows, n_cols))
    full = 100 / (1 + np.exp(-logit))
    full[:, 0] = 1200 + 150 * logit[:, 0]  # an Elo-type column
    mask = rng.random(full.shape) < observed
    mask[np.arange(n_rows), rng.integers(0, n_cols, n_rows)] = True
    return full, np.where(mask, full, np.nan)


def objective(state, z, observed, lam):
    mu, a, c, U, V = state
    r = np.where(observed, z - (mu + a[:, None] + c[None, :] + U @ V.T), 0.0)
    return (r**2).sum() + lam * ((a**2).sum() + (c**2).sum() + (U**2).sum() + (V**2).sum())


# --- transform -------------------------------------------------------------------------------

def test_transform_classifies_columns_and_round_trips(rng):
    _full, values = simulate(rng)
    ct = fit_transform(values)
    assert not ct.percent[0] and not ct.logit[0]  # ratings stay on their scale
    assert ct.percent[1:].all() and ct.logit[1:].all()
    z = forward(ct, values)
    obs = ~np.isnan(values)
    assert np.allclose(np.nanmean(z, axis=0), 0, atol=1e-9)
    assert np.allclose(np.nanstd(z, axis=0), 1, atol=1e-9)
    inside = obs & ((values >= 0.5) & (values <= 99.5) | ~ct.percent[None, :])
    assert np.allclose(inverse(ct, z)[inside], values[inside])


def test_transform_clips_like_the_authors():
    values = np.array([[0.0, 1500.0], [100.0, 1400.0], [50.0, np.nan]])
    ct = fit_transform(values)
    z = forward(ct, values)
    back = inverse(ct, z)
    assert back[0, 0] == pytest.approx(0.5) and back[1, 0] == pytest.approx(99.5)
    assert inverse(ct, np.array([[50.0, 0.0]]))[0, 0] == 100.0  # clipped to [0, 100]
    ident = fit_transform(values, transform="identity")
    assert not ident.logit.any() and ident.percent[0]


def test_fraction_columns_are_percentages_over_100(rng):
    _full, values = simulate(rng)
    frac = np.where(np.arange(values.shape[1]) == 0, values, values / 100)
    ct = fit_transform(frac, fractions=True)
    assert (ct.scale[1:] == 100).all() and ct.scale[0] == 1 and ct.logit[1:].all()
    z = forward(ct, frac)
    np.testing.assert_allclose(z[:, 1:], forward(fit_transform(values), values)[:, 1:])
    inside = ~np.isnan(values) & (values >= 0.5) & (values <= 99.5)
    inside[:, 0] = False
    np.testing.assert_allclose(inverse(ct, z)[inside], frac[inside])
    # the authors' rule reads them as percentages: every value below 0.5 is clipped to 0.5
    t = forward(fit_transform(frac), frac)[:, 1:]
    clipped = np.isclose(t, np.nanmin(t, axis=0))[~np.isnan(t)]
    assert clipped.mean() > 0.3


@pytest.mark.parametrize("bad, message", [
    (np.array([1.0, 2.0]), "2-D"),
    (np.array([[1.0, np.inf]]), "inf"),
    (np.full((2, 2), np.nan), "no observed"),
])
def test_transform_rejects_bad_matrices(bad, message):
    with pytest.raises(ValidationError, match=message):
        fit_transform(bad)


def test_transform_rejects_unknown_names():
    with pytest.raises(ValidationError, match="transform"):
        fit_transform(np.ones((2, 2)), transform="probit")


# --- Bias-ALS --------------------------------------------------------------------------------

def test_als_steps_never_increase_the_objective(rng):
    _, values = simulate(rng)
    ct = fit_transform(values)
    obs = ~np.isnan(values)
    z = np.where(obs, forward(ct, values), 0.0)
    state = als_init(z, obs, 2, np.random.default_rng(0))
    losses = []
    for _ in range(15):
        state = als_step(state, z, obs, 0.1)
        losses.append(objective(state, z, obs, 0.1))
    # mu is an unpenalised least-squares step, the blocks exact ridge solves: monotone
    assert np.all(np.diff(losses) <= 1e-8 * losses[0])


def test_als_recovers_a_low_rank_matrix(rng):
    full, values = simulate(rng, n_rows=60, n_cols=30, noise=0.02, observed=0.7)
    comp = complete_bias_als(values, rank=2, lam=0.01, n_iter=100, n_ensemble=3)
    hidden = np.isnan(values)
    hidden[:, 0] = False
    err = np.abs(comp.mean - full)[hidden]
    baseline = np.abs(np.nanmean(values, axis=0)[None, :] - full)[hidden]
    assert np.median(err) < 0.15 * np.median(baseline)
    assert np.median(err) < 1.5  # score points
    assert comp.interval == "none" and np.isnan(comp.lower).all()


def test_als_is_deterministic_given_a_seed(rng):
    _, values = simulate(rng)
    a = complete_bias_als(values, n_ensemble=2, seed=3).mean
    b = complete_bias_als(values, n_ensemble=2, seed=3).mean
    c = complete_bias_als(values, n_ensemble=2, seed=4).mean
    assert np.array_equal(a, b)
    assert not np.array_equal(a, c)


@pytest.mark.parametrize("kwargs, message", [
    ({"rank": -1}, "rank"), ({"rank": 1.5}, "rank"), ({"lam": -0.1}, "lam"),
    ({"n_iter": 0}, "n_iter"), ({"n_ensemble": 0}, "n_ensemble"),
])
def test_als_rejects_bad_options(kwargs, message):
    z = np.zeros((3, 3))
    with pytest.raises(ValidationError, match=message):
        complete_als(z, np.ones((3, 3), bool), **kwargs)


def test_rows_without_observations_keep_their_start(rng):
    z = rng.normal(size=(5, 4))
    obs = np.ones_like(z, dtype=bool)
    obs[2] = False
    state = fit_als(z, obs, rank=1, n_iter=3, seed=0)
    start = als_init(np.where(obs, z, 0.0), obs, 1, np.random.default_rng(0))
    assert state.row_bias[2] == 0.0 and np.array_equal(state.U[2], start.U[2])


def test_nested_selection_uses_only_training_cells(rng):
    _, values = simulate(rng)
    rank, lam, errors = select_als(values, ranks=(1, 2), lams=(0.1,), n_ensemble=1)
    assert (rank, lam) in errors and len(errors) == 2
    assert errors[(rank, lam)] == min(errors.values())


def test_nested_selection_reads_fraction_columns_as_percentages(rng):
    _, values = simulate(rng)
    pct = values[:, 1:]  # percentage columns only
    opts = dict(ranks=(1, 2), lams=(0.1, 1.0), n_ensemble=1)
    _, _, on_pct = select_als(pct, **opts)
    _, _, on_frac = select_als(pct / 100, fractions=True, **opts)
    assert on_frac.keys() == on_pct.keys()
    assert np.allclose([100 * on_frac[k] for k in on_pct], list(on_pct.values()), rtol=1e-6)


def test_inner_split_keeps_a_cell_per_row(rng):
    obs = rng.random((30, 10)) < 0.5
    held = inner_split(obs, seed=1)
    assert not (held & ~obs).any()
    assert ((obs & ~held).sum(axis=1) >= np.minimum(obs.sum(axis=1), 1)).all()
    assert np.array_equal(held, inner_split(obs, seed=1))


def test_inner_folds_partition_each_row_evenly(rng):
    obs = rng.random((40, 12)) < 0.5
    obs[0] = False
    obs[1, :] = False
    obs[1, 3] = True  # a row with one cell is never held out
    group = inner_folds(obs, 5, seed=2)
    assert (group[~obs] == -1).all() and (group[1] == -1).all()
    for i in range(2, 40):
        n = obs[i].sum()
        if n < 2:
            continue
        counts = np.bincount(group[i][obs[i]], minlength=5)
        assert counts.sum() == n and counts.max() - counts.min() <= 1
        # leaving any one group out keeps a cell of the row
        assert all((obs[i] & (group[i] != k)).any() for k in range(5))
    assert np.array_equal(group, inner_folds(obs, 5, seed=2))
    assert not np.array_equal(group, inner_folds(obs, 5, seed=3))
    with pytest.raises(ValidationError, match="n_folds"):
        inner_folds(obs, 1)


def test_cross_conformal_inner_fits_leave_out_each_group_once(rng, monkeypatch):
    """K inner fits, each without one group; together they calibrate on every cell once."""
    from coreval.lowrank import complete as complete_module

    _full, values = simulate(rng, n_rows=20, n_cols=8)
    observed = ~np.isnan(values)
    calls = []
    real = complete_module._bayes_posterior

    def spy(z, observed, **kw):
        calls.append(observed.copy())
        return real(z, observed, **kw)

    monkeypatch.setattr(complete_module, "_bayes_posterior", spy)
    comp = complete_bayes(values, rank=1, inference="svi", n_steps=50, num_samples=20,
                          calibration="conformal", n_inner_folds=4, seed=0)
    assert len(calls) == 1 + 4 and np.isfinite(comp.details["conformal_factor"])
    np.testing.assert_array_equal(calls[0], observed)
    held = [observed & ~inner for inner in calls[1:]]
    assert (sum(h.astype(int) for h in held) <= 1).all()
    eligible = observed & (observed.sum(axis=1) >= 2)[:, None]
    np.testing.assert_array_equal(np.logical_or.reduce(held), eligible)
    with pytest.raises(ValidationError, match="n_inner_folds"):
        complete_bayes(values, calibration="conformal", n_inner_folds=1)
    with pytest.raises(ValidationError, match="not both"):
        complete_bayes(values, calibration="conformal", n_inner_folds=4, inner_fraction=0.2)


def test_conformal_factor_covers_exchangeable_cells(rng):
    y = rng.standard_t(3, size=4000)
    factor = conformal_factor(y[:2000], 0.0, np.ones(2000), 0.9)
    assert np.mean(np.abs(y[2000:]) <= factor) == pytest.approx(0.9, abs=0.03)
    # exactly the ceil((n + 1) level)-th smallest score; inf when n is too small
    scores = rng.permutation(np.arange(1.0, 11.0))
    assert conformal_factor(scores, 0.0, np.ones(10), 0.5) == 6.0
    assert conformal_factor(scores, 0.0, np.ones(10), 0.9) == 10.0
    assert conformal_factor(scores, 0.0, np.ones(10), 0.95) == np.inf
    # its coverage is k / (n + 1) = 17 / 21 at n = 20, level 0.8 (Monte Carlo)
    cal, new = rng.normal(size=(20000, 20)), rng.normal(size=20000)
    q = np.sort(np.abs(cal), axis=1)[:, 16]
    assert conformal_factor(np.abs(cal[0]), 0.0, np.ones(20), 0.8) == q[0]
    assert np.mean(np.abs(new) <= q) == pytest.approx(17 / 21, abs=0.01)


def test_conformal_inner_fit_never_sees_the_calibration_cells(rng, monkeypatch):
    """The inner fit's data (transform included) do not depend on the inner held cells."""
    from coreval.lowrank import complete as complete_module

    _full, values = simulate(rng, n_rows=20, n_cols=8)
    held = inner_split(~np.isnan(values), fraction=1 / 3, seed=0)
    calls = []
    real = complete_module._bayes_posterior

    def spy(z, observed, **kw):
        calls.append((z.copy(), observed.copy()))
        return real(z, observed, **kw)

    monkeypatch.setattr(complete_module, "_bayes_posterior", spy)
    opts = dict(rank=1, inference="svi", n_steps=50, num_samples=20, calibration="conformal",
                inner_fraction=1 / 3, seed=0)
    complete_bayes(values, **opts)
    shifted = values.copy()
    shifted[held] = np.where(shifted[held] > 50, shifted[held] - 40, shifted[held] + 40)
    complete_bayes(shifted, **opts)
    (_, _), (z_a, obs_a), (_, _), (z_b, obs_b) = calls
    np.testing.assert_array_equal(obs_a, obs_b)
    assert not obs_a[held].any()
    np.testing.assert_allclose(z_a[obs_a], z_b[obs_b])


# --- Bayesian model --------------------------------------------------------------------------

def test_bayes_intervals_cover_simulated_cells(rng):
    full, values = simulate(rng, n_rows=24, n_cols=12, rank=1, noise=0.1)
    comp = complete_bayes(values, rank=1, num_warmup=100, num_samples=100, max_tree_depth=5,
                          seed=0)
    hidden = np.isnan(values)
    inside = (full >= comp.lower) & (full <= comp.upper)
    assert comp.interval == "posterior"
    assert 0.6 <= inside[hidden].mean() <= 1.0
    assert (comp.lower <= comp.mean + 1e-9).all() and (comp.mean <= comp.upper + 1e-9).all()
    assert np.median(np.abs(comp.mean - full)[hidden]) < 5.0


@pytest.mark.parametrize("inner", [{"inner_fraction": 1 / 3}, {"n_inner_folds": 4}])
def test_bayes_conformal_calibration_widens_under_covering_intervals(inner):
    """``calibration="conformal"`` end to end: the nested factor scales the posterior widths.

    With one split-conformal inner fit and with cross-conformal over 4 inner folds.

    Half of the rows are 30 times noisier than the others, which the model's per-column
    noise cannot represent, so its posterior intervals under-cover hidden cells. The
    conformal factor, fitted on cells the inner fit did not see, must widen them towards
    nominal; the point prediction is untouched. Rating-scale columns (no clipping), so the
    width ratio is exactly the factor.
    """
    covered = {"posterior": [], "conformal": []}
    for seed in range(5):
        rng = np.random.default_rng(seed)
        n_rows, n_cols = 30, 12
        noise_sd = np.where(np.arange(n_rows) < n_rows // 2, 0.05, 1.5)[:, None]
        full = 1000 + 100 * (rng.normal(0, 1, (n_rows, 1)) + rng.normal(0, 1, n_cols)
                             + np.outer(rng.normal(0, 1, n_rows), rng.normal(0, 0.7, n_cols))
                             + noise_sd * rng.normal(size=(n_rows, n_cols)))
        observed = rng.random(full.shape) < 0.6
        observed[np.arange(n_rows), rng.integers(0, n_cols, n_rows)] = True
        values = np.where(observed, full, np.nan)
        opts = dict(transform="identity", rank=1, df=None, num_warmup=150, num_samples=150,
                    max_tree_depth=6, seed=0)
        posterior = complete_bayes(values, **opts)
        conformal = complete_bayes(values, calibration="conformal", **inner, **opts)
        factor = conformal.details["conformal_factor"]
        assert conformal.interval == "posterior+conformal" and np.isfinite(factor)
        np.testing.assert_allclose(conformal.mean, posterior.mean)
        np.testing.assert_allclose(conformal.upper - conformal.lower,
                                   factor * (posterior.upper - posterior.lower), rtol=1e-9)
        for name, comp in (("posterior", posterior), ("conformal", conformal)):
            inside = (full >= comp.lower) & (full <= comp.upper)
            covered[name].extend(inside[~observed])
    coverage = {name: np.mean(v) for name, v in covered.items()}
    assert coverage["conformal"] > coverage["posterior"] + 0.03
    assert 0.88 <= coverage["conformal"] <= 0.98


def test_bayes_row_features_inform_sparse_rows(rng):
    """A covariate that drives the rows' profile helps rows with one observed cell."""
    n_rows, n_cols = 40, 12
    x = rng.integers(0, 2, n_rows).astype(float)  # e.g. a reasoning flag
    slope = rng.normal(0, 1.5, n_cols)  # its effect differs by benchmark
    logit = (0.2 + rng.normal(0, 0.3, n_rows)[:, None] + rng.normal(0, 0.8, n_cols)
             + np.outer(x - 0.5, slope) + rng.normal(0, 0.2, (n_rows, n_cols)))
    full = 100 / (1 + np.exp(-logit))
    observed = rng.random(full.shape) < 0.8
    sparse = np.arange(30, 40)
    observed[sparse] = False
    observed[sparse[:, None], rng.permuted(np.tile(np.arange(n_cols), (10, 1)),
                                           axis=1)[:, :1]] = True
    err = _errors_with_and_without_features(full, observed, sparse, x, num_warmup=100,
                                            num_samples=100, max_tree_depth=5)
    assert err["informed"] < 0.7 * err["plain"]


def _errors_with_and_without_features(full, observed, rows, x, **opts):
    """Median |error| of ``rows``' hidden cells, completed without and with covariates."""
    values = np.where(observed, full, np.nan)
    hidden = ~observed[rows]
    return {name: np.median(np.abs(complete_bayes(values, rank=1, seed=0, **extra).mean[rows]
                                   - full[rows])[hidden])
            for name, extra in (("plain", opts), ("informed", {**opts, "row_features": x}))}


def test_bayes_nuts_compiles_once_per_padded_shape(rng):
    """Fits of new data of a similar size reuse one compiled sampler, and a seed repeats."""
    from coreval.lowrank import bayes

    opts = dict(rank=1, num_warmup=30, num_samples=20, max_tree_depth=4, seed=1)
    bayes._RUNNERS.clear()
    draws = []
    for n_rows in (17, 20, 20):  # all padded to 2 * ROW_BLOCK rows
        z = rng.normal(size=(n_rows, 6))
        observed = rng.random(z.shape) < 0.7
        post = bayes.fit_lowrank_nuts(z, observed, **opts)
        assert post["loc"].shape == (20, n_rows, 6)
        draws.append((z, observed, post["loc"]))
    (runner,) = bayes._RUNNERS.values()
    assert runner._cache_size() == 1
    z, observed, loc = draws[-1]
    np.testing.assert_array_equal(bayes.fit_lowrank_nuts(z, observed, **opts)["loc"], loc)
    with pytest.raises(ValidationError, match="miss the model's sites"):
        bayes._unconstrained_start((z, observed, 1, "column", 4.0, None), {"mu": 0.0}, 0)
    # an ALS start has per-column noise sites; with one shared noise they are not sampled
    start = bayes.start_values(fit_als(z, observed, rank=1, lam=0.1, seed=0), z, observed)
    shared = bayes._unconstrained_start((z, observed, 1, "shared", 4.0, None), start, 0)
    assert set(start) - set(shared) == {"tau", "e_sigma"}


def test_bayes_chooses_the_simulated_rank_by_psis_loo(rng):
    """Among ranks 0 and 2, PSIS-LOO of the training cells picks the true rank 2."""
    full, values = simulate(rng, n_rows=30, n_cols=14, rank=2, noise=0.05, observed=0.7)
    opts = dict(num_warmup=150, num_samples=100, max_tree_depth=6, seed=0)
    comp = complete_bayes(values, rank=(0, 2), **opts)
    assert comp.details["rank"] == 2
    assert set(comp.details["elpd"]) == {0, 2}
    gap = comp.details["elpd"][2] - comp.details["elpd"][0]
    assert gap > 4 * comp.details["elpd_se"][2]
    assert all(0.0 <= v <= 1.0 for v in comp.details["share_high_pareto_k"].values())
    single = complete_bayes(values, rank=2, **opts)  # same seed: the chosen fit itself
    np.testing.assert_allclose(comp.mean, single.mean)
    assert single.details is None
    hidden = np.isnan(values)
    flat = complete_bayes(values, rank=0, **opts)
    err = {name: np.median(np.abs(c.mean - full)[hidden]) for name, c in
           (("chosen", comp), ("rank 0", flat))}
    assert err["chosen"] < 0.5 * err["rank 0"]


def test_cell_log_likelihood_matches_numpyro(rng):
    """The pointwise log-likelihood agrees with numpyro's own densities (second implementation)."""
    import numpyro.distributions as dist

    from coreval.lowrank.bayes import cell_log_likelihood

    z = rng.normal(size=(5, 4))
    observed = rng.random(z.shape) < 0.6
    observed[0, 0] = True
    post = {"loc": rng.normal(size=(3, 5, 4)), "sigma": rng.uniform(0.2, 1.0, (3, 4))}
    rows, cols = np.nonzero(observed)
    for df, make in ((4.0, lambda loc, s: dist.StudentT(4.0, loc, s)),
                     (None, lambda loc, s: dist.Normal(loc, s))):
        ll = cell_log_likelihood(post, z, observed, df)
        ref = np.asarray(make(post["loc"][:, rows, cols], post["sigma"][:, cols])
                         .log_prob(z[rows, cols]))
        assert ll.shape == (3, observed.sum())
        np.testing.assert_allclose(ll, ref, rtol=1e-5, atol=1e-6)


def test_bayes_rejects_bad_rank_candidates():
    values = np.full((4, 3), 50.0)
    for bad, message in (((), "non-empty"), ((2, 2), "repeat"), ("auto", "non-negative"),
                         ((1, -1), "non-negative"), (True, "non-negative")):
        with pytest.raises(ValidationError, match=message):
            complete_bayes(values, rank=bad)
    with pytest.raises(ValidationError, match="nuts"):
        complete_bayes(values, rank=(1, 2), inference="svi")


def test_bayes_row_features_shift_new_rows_beyond_the_training_range(rng):
    """Rows newer than every training row (a release date past the range) that reveal a
    few cells: a covariate that lifts every benchmark moves their prior mean, so they are
    not pulled back to the training rows' level (Park, Kim & Choi 2013)."""
    n_train, n_new, n_cols = 40, 8, 40
    x = np.concatenate([np.linspace(0.0, 1.0, n_train), np.linspace(1.1, 1.4, n_new)])
    level = 2.5 * x + rng.normal(0, 0.2, x.size)  # the date lifts every benchmark
    logit = (level[:, None] - 1.2 + rng.normal(0, 0.6, n_cols)
             + np.outer(rng.normal(0, 0.5, x.size), rng.normal(0, 0.7, n_cols))
             + rng.normal(0, 0.15, (x.size, n_cols)))
    full = 100 / (1 + np.exp(-logit))
    observed = rng.random(full.shape) < 0.2  # sparse columns: per-benchmark slopes are weak
    new = np.arange(n_train, n_train + n_new)
    observed[new] = False
    for i in new:
        observed[i, rng.choice(n_cols, 3, replace=False)] = True
    err = _errors_with_and_without_features(full, observed, new, x, num_warmup=150,
                                            num_samples=150, max_tree_depth=6)
    # per-benchmark slopes alone (without the shared shift of the rows' prior) give 0.60
    assert err["informed"] < 0.56 * err["plain"], err


def test_bayes_rejects_bad_row_features():
    values = np.full((4, 3), 50.0)
    for bad, message in ((np.ones((3, 1)), "one row per model"),
                         (np.array([0.0, 1.0, np.nan, 1.0]), "NaN"),
                         (np.column_stack([[0, 1, 0, 1], [2, 2, 2, 2]]), "constant")):
        with pytest.raises(ValidationError, match=message):
            complete_bayes(values, row_features=bad)
    with pytest.raises(ValidationError, match="nuts"):
        complete_bayes(values, row_features=np.arange(4.0), inference="svi")
    from coreval.lowrank.bayes import fit_lowrank_nuts

    with pytest.raises(ValidationError, match="row_features"):
        fit_lowrank_nuts(np.zeros((4, 3)), np.ones((4, 3), dtype=bool),
                         row_features=np.ones((3, 1)))


def test_bayes_rejects_bad_options():
    with pytest.raises(ValidationError, match="calibration"):
        complete_bayes(np.ones((3, 3)), calibration="isotonic")
    with pytest.raises(ValidationError, match="inference"):
        complete_bayes(np.ones((3, 3)), inference="laplace")


# --- held-out-cell harness -------------------------------------------------------------------

def test_ranking_pairs_counts_by_hand():
    actual = np.array([90.0, 80.0, 70.0, 68.0])
    predicted = np.array([90.0, 65.0, 70.0, 69.0])
    heldout = np.array([False, True, False, False])
    # pairs with the held-out model 1: (0,1) gap 10 ok, (1,2) gap 10 wrong, (1,3) gap 12 wrong
    assert ranking_pairs(actual, predicted, heldout, margin=5.0) == (3, 1)
    assert ranking_pairs(actual, predicted, heldout, margin=11.0) == (1, 0)
    # predicted ties are wrong
    assert ranking_pairs(np.array([1.0, 9.0]), np.array([5.0, 5.0]),
                         np.array([True, True]), 0.0) == (1, 0)


def test_cell_folds_evaluate_end_to_end(tmp_path, rng):
    _full, values = simulate(rng)
    cells = np.argwhere(~np.isnan(values))
    folds = {"folds": [{"seed": 1, "fold": k, "test_cells": cells[k::3].tolist()}
                       for k in range(2)]}
    path = tmp_path / "folds.json"
    path.write_text(json.dumps(folds))
    read = read_cell_folds(path, values.shape)
    per_fold, summary, cell_frame = evaluate_cells(
        values, read, lambda tr: complete_bias_als(tr, n_ensemble=2))
    assert len(per_fold) == 2 and len(cell_frame) == sum(len(f.rows) for f in read)
    assert 0 < summary["medae"] < 10 and 0.5 < summary["rank_acc"] <= 1.0
    assert np.isnan(summary["coverage90"])
    # an unbounded interval is an interval: it covers every cell, with infinite width
    def unbounded(tr):
        comp = complete_bias_als(tr, n_ensemble=2)
        return comp._replace(lower=np.full_like(comp.mean, -np.inf),
                             upper=np.full_like(comp.mean, np.inf), interval="conformal")

    _, summary, _ = evaluate_cells(values, read, unbounded)
    assert summary["coverage90"] == 1.0 and summary["coverage90_pooled"] == 1.0
    assert summary["width90"] == np.inf


def test_cell_folds_reject_bad_files(tmp_path):
    path = tmp_path / "f.json"
    path.write_text(json.dumps({"folds": [{"test_cells": [[0, 9]]}]}))
    with pytest.raises(ValidationError, match="outside"):
        read_cell_folds(path, (3, 3))
    path.write_text("{")
    with pytest.raises(ValidationError, match="JSON"):
        read_cell_folds(path)
    with pytest.raises(ValidationError, match="does not exist"):
        read_cell_folds(tmp_path / "missing.json")
    path.write_text(json.dumps({"folds": [{"test_cells": [[0, 1]]}]}))
    values = np.array([[1.0, np.nan], [2.0, 3.0]])
    with pytest.raises(ValidationError, match="unobserved"):
        evaluate_cells(values, read_cell_folds(path), complete_bias_als)
    # negative indices would wrap to the matrix's end; a repeated cell would count twice
    path.write_text(json.dumps({"folds": [{"test_cells": [[0, -1]]}]}))
    with pytest.raises(ValidationError, match="negative"):
        read_cell_folds(path)
    path.write_text(json.dumps({"folds": [{"test_cells": [[0, 1], [1, 0], [0, 1]]}]}))
    with pytest.raises(ValidationError, match="more than once"):
        read_cell_folds(path)


def test_cell_folds_refuse_a_completion_that_leaves_held_cells_nan(tmp_path, rng):
    """A fold without predictions is an error, not a fold the medians quietly skip."""
    _full, values = simulate(rng)
    cells = np.argwhere(~np.isnan(values))
    path = tmp_path / "folds.json"
    path.write_text(json.dumps({"folds": [{"seed": 0, "fold": k, "test_cells":
                                           cells[k::2].tolist()} for k in range(2)]}))
    folds = read_cell_folds(path, values.shape)
    calls = []

    def one_fold_nan(tr):
        comp = complete_bias_als(tr, n_ensemble=2)
        calls.append(1)
        if len(calls) == 2:
            comp = comp._replace(mean=np.full_like(comp.mean, np.nan))
        return comp

    with pytest.raises(ValidationError, match=r"fold \(seed 0, fold 1\).*NaN"):
        evaluate_cells(values, folds, one_fold_nan)


def _three_folds(tmp_path, values):
    cells = np.argwhere(~np.isnan(values))
    path = tmp_path / "folds.json"
    path.write_text(json.dumps({"folds": [{"seed": 2, "fold": k, "test_cells":
                                           cells[k::3].tolist()} for k in range(3)]}))
    return read_cell_folds(path, values.shape)


def _counted(calls: list, *, interrupt_at: int | None = None, n_ensemble: int = 2):
    """A Bias-ALS completer that counts its calls and can stop the run at one of them."""
    def completer(tr):
        calls.append(1)
        if len(calls) == interrupt_at:
            raise KeyboardInterrupt
        return complete_bias_als(tr, n_ensemble=n_ensemble)

    return completer


def test_cell_folds_resume_from_a_checkpoint_after_an_interruption(tmp_path, rng):
    _full, values = simulate(rng)
    folds = _three_folds(tmp_path, values)
    calls = []
    ckpt = tmp_path / "ckpt"
    with pytest.raises(KeyboardInterrupt):
        evaluate_cells(values, folds, _counted(calls, interrupt_at=2), checkpoint=ckpt)
    assert sorted(f.name for f in ckpt.iterdir()) == ["seed2_fold0.npz"]  # no partial file
    calls.clear()
    counted = _counted(calls)
    _, summary, cells = evaluate_cells(values, folds, counted, checkpoint=ckpt)
    assert len(calls) == 2  # only the two unfinished folds ran
    _, fresh, fresh_cells = evaluate_cells(values, folds, counted)
    pd.testing.assert_frame_equal(cells, fresh_cells)
    np.testing.assert_equal({k: v for k, v in summary.items() if k != "seconds"},
                            {k: v for k, v in fresh.items() if k != "seconds"})
    # a finished evaluation is read back without running the completer
    calls.clear()
    evaluate_cells(values, folds, counted, checkpoint=ckpt)
    assert not calls
    # a checkpoint of another matrix is refused, not silently reused
    other = values.copy()
    other[folds[0].rows[0], folds[0].cols[0]] += 1.0
    with pytest.raises(ValidationError, match="other cells or other scores"):
        evaluate_cells(other, folds, counted, checkpoint=ckpt)


def test_cell_folds_keep_each_completions_choices_through_a_checkpoint(tmp_path, rng):
    _full, values = simulate(rng)
    folds = _three_folds(tmp_path, values)

    def with_details(tr):
        comp = complete_bias_als(tr, n_ensemble=2)
        return comp._replace(details={"rank": np.int64(3), "weights": {1: np.float64(0.25)},
                                      "elpd": np.array([1.5, 2.5])})

    expected = {"rank": 3, "weights": {"1": 0.25}, "elpd": [1.5, 2.5]}
    for _ in range(2):  # computed, then read back from the checkpoint
        per_fold, _, _ = evaluate_cells(values, folds, with_details, checkpoint=tmp_path / "c")
        assert [json.loads(d) for d in per_fold["details"]] == [expected] * 3
    per_fold, _, _ = evaluate_cells(values, folds, lambda tr: complete_bias_als(tr, n_ensemble=2))
    assert list(per_fold["details"]) == ["null"] * 3


def test_cell_folds_in_parallel_give_the_sequential_numbers(tmp_path, rng):
    _full, values = simulate(rng)
    folds = _three_folds(tmp_path, values)
    completer = lambda tr: complete_bias_als(tr, n_ensemble=2)  # noqa: E731 (pickled as is)
    _, seq, seq_cells = evaluate_cells(values, folds, completer)
    _, par, par_cells = evaluate_cells(values, folds, completer, n_jobs=2)
    pd.testing.assert_frame_equal(seq_cells, par_cells)
    assert seq["medae"] == par["medae"] and seq["rank_acc"] == par["rank_acc"]
    with pytest.raises(ValidationError, match="n_jobs"):
        evaluate_cells(values, folds, completer, n_jobs=0)


# --- real data -------------------------------------------------------------------------------

def test_logit_bias_als_matches_the_authors_on_benchpress(load_shared, shared_dir, anchors_dir):
    """Fold 0 of the authors' folds: our default matches their per-cell predictions."""
    pd = pytest.importorskip("pandas")
    parquet = anchors_dir / "benchpress" / "heldout_predictions_default.parquet"
    fold_file = shared_dir / "data" / "benchpress2026_info" / "folds_s10_f3_bs42_ms1.json"
    if not parquet.exists() or not fold_file.exists():
        pytest.skip(f"needs {parquet} and {fold_file}")
    values = load_shared("benchpress2026").values.astype(float)
    fold = read_cell_folds(fold_file, values.shape)[0]
    _, summary, cells = evaluate_cells(
        values, [fold], lambda tr: complete_bias_als(tr, legacy_rng=True))
    theirs = pd.read_parquet(parquet).query("fold_index == 0")
    merged = cells.merge(theirs, left_on=["row", "col"],
                         right_on=["model_index", "bench_index"])
    assert len(merged) == len(fold.rows)
    their_medae = float(np.median(np.abs(merged["predicted_y"] - merged["actual_y"])))
    assert summary["medae"] == pytest.approx(their_medae, abs=1e-3)
    # with the authors' random starts, the same predictions (float32 parquet, float rounding)
    np.testing.assert_allclose(merged["predicted_x"], merged["predicted_y"], atol=0.01)


# --- predictors and methods ------------------------------------------------------------------

@pytest.fixture
def bench_source(rng):
    from coreval.data.matrix import ScoreMatrix

    full, values = simulate(rng, n_rows=50, n_cols=20, noise=0.15, observed=0.8)
    return full, ScoreMatrix(values[:40], models=[f"m{i}" for i in range(40)],
                             items=[f"b{j}" for j in range(20)])


def test_low_rank_imputer_folds_in_new_models(bench_source):
    from coreval.base import Coreset
    from coreval.prediction.lowrank_imputer import LowRankImputer

    full, source = bench_source
    coreset = Coreset.from_indices(source, [1, 4, 7, 11, 15])
    imputer = LowRankImputer(n_ensemble=3).fit(source, coreset)
    x = full[40:, coreset.indices].copy()
    x[0, 1:] = np.nan  # one selected benchmark only
    x[1, :] = np.nan  # none: a NaN row
    pred = imputer.predict(x)
    assert pred.mean.shape == (10, 20) and pred.interval == "split-conformal"
    assert np.isnan(pred.mean[1]).all() and np.isfinite(pred.mean[[0, 2]]).all()
    assert pred.mean[2, 4] == x[2, 1] == pred.lower[2, 4]  # observed selected values kept
    rest = np.setdiff1d(np.arange(1, 20), coreset.indices)  # percentage columns
    rows = np.r_[0, 2:10]
    truth, mean = full[np.ix_(40 + rows, rest)], pred.mean[np.ix_(rows, rest)]
    column_means = np.nanmean(source.values, axis=0)[rest]
    assert np.median(np.abs(mean - truth)) < 0.7 * np.median(np.abs(truth - column_means))
    inside = ((truth >= pred.lower[np.ix_(rows, rest)])
              & (truth <= pred.upper[np.ix_(rows, rest)]))
    assert 0.75 < inside.mean() <= 1.0
    with pytest.raises(ValidationError, match="level"):
        LowRankImputer(level=1.5).fit(source, coreset)


def test_low_rank_imputer_calibration_folds_do_not_see_their_models(bench_source,
                                                                   monkeypatch):
    """Each calibration fold's fit (transform included) ignores the models it scores."""
    from coreval.base import Coreset
    from coreval.data.matrix import ScoreMatrix
    from coreval.prediction.lowrank_imputer import LowRankImputer

    _, source = bench_source
    coreset = Coreset.from_indices(source, [1, 4, 7, 11, 15])
    seen: list[np.ndarray] = []
    complete = LowRankImputer._complete

    def spy(self, z, observed, n_ensemble):
        seen.append(z.copy())
        return complete(self, z, observed, n_ensemble)

    monkeypatch.setattr(LowRankImputer, "_complete", spy)
    imputer = LowRankImputer(n_ensemble=2, calibration_folds=4, seed=3)
    imputer.fit(source, coreset)
    first = list(seen)
    fold = np.random.default_rng(3).permutation(40) % 4
    changed = source.values.copy()
    changed[fold == 0] = np.clip(changed[fold == 0] * 0.6 + 30.0, 0, None)
    seen.clear()
    LowRankImputer(n_ensemble=2, calibration_folds=4, seed=3).fit(
        ScoreMatrix(changed, models=source.models, items=source.items), coreset)
    assert len(first) == len(seen) == 5  # the full fit, then one per calibration fold
    assert not np.array_equal(first[0], seen[0])  # the full fit sees every model
    assert np.array_equal(first[1], seen[1])  # fold 0's fit does not see fold 0


def test_bayes_low_rank_imputer_does_not_depend_on_the_batch(bench_source):
    from coreval.base import Coreset
    from coreval.prediction.lowrank_imputer import BayesLowRankImputer

    full, source = bench_source
    coreset = Coreset.from_indices(source, [1, 4, 7, 11, 15])
    imputer = BayesLowRankImputer(rank=1, num_warmup=50, num_samples=50).fit(source, coreset)
    x = full[40:44, coreset.indices].copy()
    x[1, 2] = np.nan  # rows with other patterns of observed benchmarks
    together = imputer.predict(x)
    for j in range(4):
        alone = imputer.predict(x[j:j + 1])
        np.testing.assert_array_equal(alone.mean[0], together.mean[j])
        np.testing.assert_array_equal(alone.lower[0], together.lower[j])
        np.testing.assert_array_equal(alone.upper[0], together.upper[j])
    assert np.isfinite(together.mean).all()


def test_bayes_low_rank_imputer_chooses_its_rank(bench_source):
    """Given candidate ranks, the imputer keeps the PSIS-LOO choice (the simulated rank 2)."""
    from coreval.base import Coreset
    from coreval.prediction.lowrank_imputer import BayesLowRankImputer

    full, source = bench_source
    coreset = Coreset.from_indices(source, [1, 4, 7, 11, 15])
    imputer = BayesLowRankImputer(rank=(0, 2), num_warmup=100, num_samples=60)
    imputer.fit(source, coreset)
    assert imputer.rank_ == 2 and set(imputer.rank_choice_["elpd"]) == {0, 2}
    assert imputer.posterior_["V"].shape[-1] == 2
    assert np.isfinite(imputer.predict(full[40:44, coreset.indices]).mean).all()
    with pytest.raises(ValidationError, match="rank"):
        BayesLowRankImputer(rank=()).fit(source, coreset)


def test_low_rank_methods_are_declared():
    from coreval.methods.registry import get_method

    for name in ("bias-als-mi", "bias-als-entropy", "bias-als-random", "bias-als-variance",
                 "bayes-lowrank-mi", "bayes-lowrank-random", "bayes-lowrank-variance"):
        method = get_method(name)
        assert method.task == "impute"
    assert {"lam", "fold_in"} <= set(get_method("bias-als-mi").accepted_options())
    assert "df" in get_method("bayes-lowrank-mi").accepted_options()


def test_bayes_fold_in_matches_gaussian_conditioning(rng):
    """One draw, no factors' noise: the fold-in mean is the ridge solution with the prior."""
    from coreval.lowrank.foldin import bayes_fold_in

    n, r = 6, 2
    post = {"mu": np.array([0.3]), "s_a": np.array([0.7]), "c": rng.normal(size=(1, n)),
            "V": rng.normal(size=(1, n, r)), "sigma": np.full((1, n), 0.4)}
    cols = np.array([0, 2, 3])
    z_a = rng.normal(size=(1, 3))
    cond, draws = bayes_fold_in(z_a, cols, post, np.random.default_rng(0))
    X = np.hstack([np.ones((3, 1)), post["V"][0, cols]])
    prior = np.diag([1 / 0.7**2, 1.0, 1.0])
    beta = np.linalg.solve(X.T @ X / 0.16 + prior, X.T @ (z_a[0] - 0.3 - post["c"][0, cols]) / 0.16)
    expected = 0.3 + post["c"][0] + np.hstack([np.ones((n, 1)), post["V"][0]]) @ beta
    np.testing.assert_allclose(cond[0, 0], expected, rtol=1e-10)
    assert draws.shape == (1, 1, n)


def test_als_fold_in_with_a_row_prior_is_the_augmented_least_squares_solution(rng):
    """Empirical-Bayes fold-in = least squares with the prior as pseudo-observations."""
    from coreval.lowrank.als import ALSState
    from coreval.lowrank.foldin import als_fold_in, als_row_prior

    n_rows, n_cols, r = 30, 8, 2
    state = ALSState(0.2, rng.normal(0.5, 0.6, n_rows), rng.normal(size=n_cols),
                     rng.normal(1.0, 0.8, (n_rows, r)), rng.normal(size=(n_cols, r)))
    z = (state.mu + state.row_bias[:, None] + state.col_bias + state.U @ state.V.T
         + 0.3 * rng.normal(size=(n_rows, n_cols)))
    observed = rng.random((n_rows, n_cols)) < 0.7
    prior = als_row_prior(state, z, observed)
    beta_rows = np.column_stack([state.row_bias, state.U])
    np.testing.assert_allclose(prior.mean, beta_rows.mean(axis=0))
    fit = state.mu + state.row_bias[:, None] + state.col_bias + state.U @ state.V.T
    assert prior.noise_var == pytest.approx(np.mean((z - fit)[observed] ** 2))
    cols = np.array([1, 5])
    z_a = rng.normal(size=(3, 2))
    got = als_fold_in(z_a, cols, [state], 0.1, [prior])
    # second implementation: stack [X / s; L^T] beta = [r / s; L^T m] with P = L L^T
    chol = np.linalg.cholesky(prior.precision)
    s = np.sqrt(prior.noise_var)
    X = np.hstack([np.ones((2, 1)), state.V[cols]])
    for i in range(3):
        resid = z_a[i] - state.mu - state.col_bias[cols]
        A = np.vstack([X / s, chol.T])
        b = np.concatenate([resid / s, chol.T @ prior.mean])
        beta = np.linalg.lstsq(A, b, rcond=None)[0]
        want = state.mu + state.col_bias + beta[0] + state.V @ beta[1:]
        np.testing.assert_allclose(got[i], want, rtol=1e-8, atol=1e-10)


def test_row_prior_shrinks_a_sparse_row_and_fades_with_more_cells(rng):
    """One revealed cell: the prior keeps the row near the known models; many: it fades."""
    from coreval.lowrank.als import fit_als
    from coreval.lowrank.foldin import als_fold_in, als_row_prior

    full, _ = simulate(rng, n_rows=80, n_cols=30, noise=0.1, observed=1.0)
    z = (full - full.mean(axis=0)) / full.std(axis=0)
    observed = np.ones_like(z, dtype=bool)
    state = fit_als(z[:70], observed[:70], rank=2, lam=0.1, seed=0)
    prior = als_row_prior(state, z[:70], observed[:70])
    one = np.array([3])
    ridge = als_fold_in(z[70:, one], one, [state], 0.1)
    shrunk = als_fold_in(z[70:, one], one, [state], 0.1, [prior])
    typical = state.mu + state.col_bias + prior.mean[0] + state.V @ prior.mean[1:]
    assert np.abs(shrunk - typical).mean() < np.abs(ridge - typical).mean()
    assert np.abs(shrunk - z[70:]).mean() < np.abs(ridge - z[70:]).mean()
    many = np.arange(25)
    ridge = als_fold_in(z[70:, many], many, [state], 0.1)
    shrunk = als_fold_in(z[70:, many], many, [state], 0.1, [prior])
    np.testing.assert_allclose(shrunk, ridge, atol=0.1)


def test_low_rank_imputer_rejects_an_unknown_fold_in(bench_source):
    from coreval.base import Coreset
    from coreval.prediction.lowrank_imputer import LowRankImputer

    _, source = bench_source
    with pytest.raises(ValidationError, match="fold_in"):
        LowRankImputer(fold_in="lasso").fit(source, Coreset.from_indices(source, [1, 4]))


def test_greedy_posterior_variance_prefers_informative_observed_probes(rng):
    from coreval.gaussian.greedy import greedy_variance
    from coreval.lowrank.probes import completed_covariance

    def probes_of(cov, obs, k, **kw):
        return greedy_variance(cov, k, observed=obs, **kw).selected.tolist()

    _, values = simulate(rng, n_rows=40, n_cols=12, observed=0.9)
    values[5:, 3] = np.nan  # column 3 is almost never observed: a poor probe
    ct = fit_transform(values)
    obs = ~np.isnan(values)
    z = np.where(obs, forward(ct, np.where(obs, values, 0.0)), 0.0)
    completed, _ = complete_als(z, obs, n_ensemble=2)
    cov = completed_covariance(completed, z, obs)
    assert np.allclose(cov, cov.T) and (np.linalg.eigvalsh(cov) > 0).all()
    probes = probes_of(cov, obs, 3)
    assert len(set(probes)) == 3 and 3 not in probes
    assert probes_of(cov, obs, 2, candidates=[0, 3, 5]) in ([0, 5], [5, 0])
    with pytest.raises(ValidationError, match="k must"):
        probes_of(cov, obs, 0)


def test_evaluate_probes_counts_revealed_cells_at_zero_error(rng):
    from coreval.harness.cells import evaluate_probes

    _, values = simulate(rng, n_rows=20, n_cols=10)
    res = evaluate_probes(values, [1, 2], lambda tr: complete_bias_als(tr, n_ensemble=1),
                          group_size=5)
    obs = ~np.isnan(values)
    assert res["n_cells"] == obs.sum() and res["n_hidden"] == obs.sum() - obs[:, [1, 2]].sum()
    assert res["medae"] <= res["medae_hidden"]
    with pytest.raises(ValidationError, match="probes"):
        evaluate_probes(values, [10], complete_bias_als)

    def nan_rows(tr):
        comp = complete_bias_als(tr, n_ensemble=1)
        return comp._replace(mean=np.full_like(comp.mean, np.nan))

    with pytest.raises(ValidationError, match="without a prediction"):
        evaluate_probes(values, [1, 2], nan_rows, group_size=5)


def test_evaluate_probes_resumes_and_runs_in_parallel(tmp_path, rng):
    from coreval.harness.cells import evaluate_probes

    _, values = simulate(rng, n_rows=20, n_cols=10)
    calls = []
    ckpt = tmp_path / "probes"
    with pytest.raises(KeyboardInterrupt):
        evaluate_probes(values, [1, 2], _counted(calls, interrupt_at=3, n_ensemble=1),
                        group_size=5, checkpoint=ckpt)
    assert len(list(ckpt.glob("*.npz"))) == 2
    calls.clear()
    counted = _counted(calls, n_ensemble=1)
    resumed = evaluate_probes(values, [1, 2], counted, group_size=5, checkpoint=ckpt)
    assert len(calls) == 2  # the two groups that had not finished
    fresh = evaluate_probes(values, [1, 2], counted, group_size=5)
    parallel = evaluate_probes(values, [1, 2], lambda tr: complete_bias_als(tr, n_ensemble=1),
                               group_size=5, n_jobs=2)
    for key in ("medae", "medae_hidden", "rank_acc", "rank_acc_hidden"):
        assert resumed[key] == fresh[key] == parallel[key]
    with pytest.raises(ValidationError, match="other models, scores or probes"):
        evaluate_probes(values, [1, 3], counted, group_size=5, checkpoint=ckpt)


def test_evaluate_probes_ranking_counts_every_pair_of_the_completed_leaderboard(rng):
    """The authors' measure: all pairs >= margin apart, the revealed probe scores included;
    rank_acc_hidden keeps only the pairs with a hidden cell. Brute force over the leaderboard
    a column-mean completer gives."""
    from coreval.harness.cells import Completion, evaluate_probes

    _, values = simulate(rng, n_rows=12, n_cols=6)

    def column_means(tr):
        mean = np.broadcast_to(np.nanmean(tr, axis=0), tr.shape).copy()
        nan = np.full_like(mean, np.nan)
        return Completion(mean, nan, nan, "none")

    probes, margin = [0, 1, 3, 4], 5.0
    res = evaluate_probes(values, probes, column_means, margin=margin)
    observed = ~np.isnan(values)
    hidden = observed.copy()
    hidden[:, probes] = False
    completed = values.copy()
    for i in range(values.shape[0]):  # model i reveals only its probes
        train = values.copy()
        train[i] = np.where(hidden[i], np.nan, values[i])
        completed[i] = np.where(hidden[i], np.nanmean(train, axis=0), values[i])
    want = {"all": [], "hidden": []}
    for col in range(values.shape[1]):
        rows = np.flatnonzero(observed[:, col])
        ok = {"all": [0, 0], "hidden": [0, 0]}
        for a in range(len(rows)):
            for b in range(a + 1, len(rows)):
                i, j = rows[a], rows[b]
                gap = values[i, col] - values[j, col]
                if abs(gap) < margin:
                    continue
                right = np.sign(completed[i, col] - completed[j, col]) == np.sign(gap)
                for kind in ("all", "hidden") if hidden[i, col] or hidden[j, col] else ("all",):
                    ok[kind][0] += 1
                    ok[kind][1] += right
        for kind in want:
            if ok[kind][0]:
                want[kind].append(ok[kind][1] / ok[kind][0])
    assert res["rank_acc"] == pytest.approx(np.median(want["all"]))
    assert res["rank_acc_hidden"] == pytest.approx(np.median(want["hidden"]))
    # the probe columns are exact; a column's mean without the model ranks it backwards
    assert res["rank_acc"] == 1.0 and res["rank_acc_hidden"] == 0.0
