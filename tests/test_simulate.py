"""Tests of coreval.data.simulate against the generating model's known parameters."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from coreval.data import Simulation, simulate
from coreval.errors import ValidationError


def test_default_shape_metadata_and_determinism():
    sim = simulate()
    assert isinstance(sim, Simulation)
    matrix = sim.matrix
    assert matrix.shape == (200, 500) and matrix.kind == "binary" and matrix.fully_observed
    assert set(matrix.model_meta.columns) >= {"family", "release_date"}
    assert "group" in matrix.item_meta.columns
    assert len(np.unique(matrix.families)) == 5
    again = simulate()
    np.testing.assert_array_equal(again.matrix.values, matrix.values)
    for key, value in sim.params.items():
        np.testing.assert_array_equal(again.params[key], value)
    assert not np.array_equal(simulate(seed=1).matrix.values, matrix.values)


@pytest.mark.parametrize("dims", [1, 3])
def test_parameter_shapes_and_constraints(dims):
    sim = simulate(60, 40, dims=dims, n_families=4, n_groups=4, seed=2)
    p = sim.params
    assert p["theta"].shape == (60, dims) and p["a"].shape == (40, dims)
    assert p["d"].shape == (40,) and p["family_mean"].shape == (4, dims)
    assert (p["a"] > 0).all()
    np.testing.assert_allclose(p["p"], expit(p["theta"] @ p["a"].T + p["d"]))
    if dims == 1:
        np.testing.assert_allclose(p["b"], -p["d"] / p["a"][:, 0])
        # b is the ability of 50% success: P = sigmoid(a (theta - b))
        np.testing.assert_allclose(p["p"], expit(p["a"][:, 0] * (p["theta"] - p["b"])))
    else:
        assert "b" not in p
    sizes = np.bincount(p["family"])
    assert sizes.tolist() == [15, 15, 15, 15]
    assert sim.matrix.families.tolist() == [f"family{f}" for f in p["family"]]
    assert sim.matrix.groups.tolist() == [f"group{g}" for g in p["group"]]


def test_2pl_item_parameters_recovered_by_logistic_regression():
    """With the true abilities known, per-item logistic regression recovers a and d."""
    sim = simulate(6000, 4, dims=1, n_families=3, seed=11)
    theta, a, d = sim.params["theta"], sim.params["a"][:, 0], sim.params["d"]
    for j in range(4):
        fit = LogisticRegression(C=1e6, max_iter=1000).fit(theta, sim.matrix.values[:, j])
        assert fit.coef_[0, 0] == pytest.approx(a[j], abs=0.12)
        assert fit.intercept_[0] == pytest.approx(d[j], abs=0.12)


def test_abilities_follow_family_means_with_unit_covariance():
    sim = simulate(4000, 2, dims=2, n_families=8, family_sd=2.0, seed=5)
    p = sim.params
    resid = p["theta"] - p["family_mean"][p["family"]]
    np.testing.assert_allclose(resid.mean(axis=0), 0.0, atol=0.08)
    np.testing.assert_allclose(np.cov(resid.T), np.eye(2), atol=0.08)


def test_beta_model_moments():
    """Y ~ Beta(mu phi, (1 - mu) phi): mean mu, variance mu (1 - mu) / (phi + 1)."""
    phi = 15.0
    sim = simulate(300, 200, model="beta", phi=phi, seed=4)
    y, mu = sim.matrix.values, sim.params["p"]
    assert sim.matrix.kind == "continuous"
    assert ((y > 0) & (y < 1)).all()
    z = (y - mu) / np.sqrt(mu * (1 - mu) / (phi + 1))
    assert abs(z.mean()) < 0.02
    assert z.var() == pytest.approx(1.0, abs=0.03)
    assert float(sim.params["phi"]) == phi


def test_beta_model_with_saturated_probabilities():
    """Means that round to exactly 0 or 1 (|logit| > 37) still give Beta draws in (0, 1)."""
    sim = simulate(60, 40, model="beta", log_a_mean=3.0, family_sd=3.0, seed=0)
    assert (sim.params["p"] == 1.0).any()  # the case that used to fail
    y = sim.matrix.values
    assert ((y > 0) & (y < 1)).all()
    saturated = sim.params["p"] == 1.0
    assert y[saturated].min() > 0.99


def test_binary_rate_matches_probabilities():
    sim = simulate(400, 300, seed=9)
    y, p = sim.matrix.values, sim.params["p"]
    se = np.sqrt((p * (1 - p)).sum()) / p.size
    assert abs(y.mean() - p.mean()) < 4 * se
    np.testing.assert_allclose(sim.params["true_score"], p.mean(axis=1))


def test_true_score_weights_groups_equally():
    sim = simulate(50, 30, n_groups=4, seed=1)
    p, g = sim.params["p"], sim.params["group"]
    expected = np.mean([p[:, g == k].mean(axis=1) for k in range(4)], axis=0)
    np.testing.assert_allclose(sim.params["true_score"], expected)
    # the same convention as ScoreMatrix.summary_scores on the probabilities
    np.testing.assert_allclose(sim.matrix.with_values(p).summary_scores(), expected)


@pytest.mark.parametrize("missing", [0.3, 0.97])
def test_missing_entries_leave_no_empty_row_or_column(missing):
    sim = simulate(80, 60, missing=missing, seed=3)
    observed = sim.matrix.observed
    assert observed.any(axis=1).all() and observed.any(axis=0).all()
    np.testing.assert_array_equal(observed, sim.params["mask"])
    assert 1 - observed.mean() == pytest.approx(missing, abs=0.03)


def test_release_dates_and_trend():
    sim = simulate(2000, 5, trend=1.0, n_families=1, seed=6,
                   start_date="2023-01-01", end_date="2024-12-31")
    dates = sim.matrix.model_meta["release_date"]
    assert dates.min() >= np.datetime64("2023-01-01") and dates.max() <= np.datetime64(
        "2024-12-31")
    years = (dates - dates.min()).dt.days.to_numpy() / 365.25
    slope = np.polyfit(years, sim.params["theta"][:, 0], 1)[0]
    assert slope == pytest.approx(1.0, abs=0.1)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"n_models": 1}, "n_models must be at least 2"),
    ({"n_families": 500}, "n_families must be between"),
    ({"model": "3pl"}, "model must be '2pl' or 'beta'"),
    ({"missing": 1.0}, r"missing must be in \[0, 1\)"),
    ({"dims": 0}, "dims must be at least 1"),
    ({"phi": 0.0}, "phi must be positive"),
    ({"n_groups": 0}, "n_groups must be between"),
])
def test_invalid_arguments(kwargs, message):
    with pytest.raises(ValidationError, match=message):
        simulate(**kwargs)
