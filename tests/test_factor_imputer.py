"""Bayesian low-rank factor-model imputer (NumPyro SVI) for benchmark-level data.

All fits share one data shape and one option set, so the jitted SVI program compiles once.
"""

from __future__ import annotations

import numpy as np
import pytest

from coreval.base import Coreset, FitCache
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.gaussian.covariance import pairwise_covariance
from coreval.methods import get_method
from coreval.prediction.factor_imputer import (
    FactorImputer,
    factor_predictive,
    fit_factor_posterior,
)

N_COLS, RANK, N_SOURCE, N_TARGET = 12, 2, 320, 300
OPTS = {"rank": RANK, "n_steps": 2000, "n_draws": 200}


def _simulate(seed: int = 0) -> dict[str, np.ndarray]:
    """Source and target rows drawn from a known factor model, 30 % of source cells missing."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(N_COLS, RANK))
    psi = rng.uniform(0.1, 0.3, N_COLS)
    mu = rng.normal(size=N_COLS)
    n = N_SOURCE + N_TARGET
    x = mu + rng.normal(size=(n, RANK)) @ w.T + rng.normal(size=(n, N_COLS)) * np.sqrt(psi)
    source = x[:N_SOURCE].copy()
    observed = rng.random(source.shape) > 0.3
    source[~observed] = np.nan
    return {"w": w, "psi": psi, "mu": mu, "source": source, "target": x[N_SOURCE:],
            "observed": observed}


@pytest.fixture(scope="module")
def sim() -> dict[str, np.ndarray]:
    return _simulate()


@pytest.fixture(scope="module")
def fitted(sim) -> FactorImputer:
    source = ScoreMatrix(sim["source"], level="benchmark")
    coreset = Coreset(indices=np.array([0, 5, 9]), items=source.items[[0, 5, 9]])
    return FactorImputer(**OPTS, seed=1).fit(source, coreset)


def test_recovers_known_low_rank_covariance(sim, fitted):
    """Posterior-mean ``W W^T + Psi`` (in raw units) vs the true covariance."""
    post = fitted.posterior_
    cov_z = (np.einsum("dnr,dmr->nm", post["w"], post["w"]) / len(post["w"])
             + np.diag(post["psi"].mean(axis=0)))
    scale = fitted.scale_
    cov = cov_z * np.outer(scale, scale)
    truth = sim["w"] @ sim["w"].T + np.diag(sim["psi"])
    err = np.linalg.norm(cov - truth) / np.linalg.norm(truth)
    obs = sim["observed"]
    pw = pairwise_covariance(np.where(obs, sim["source"], 0.0), obs)
    err_pw = np.linalg.norm(pw - truth) / np.linalg.norm(truth)
    assert err < 0.15
    assert err < err_pw + 0.02  # the model does at least as well as the pairwise estimate
    mean = fitted.mean_ + scale * post["mu"].mean(axis=0)
    np.testing.assert_allclose(mean, sim["mu"], atol=0.25)


def test_predictive_intervals_cover_about_90_percent(sim, fitted):
    target = sim["target"]
    sel = fitted.coreset_.indices
    pred = fitted.predict(target[:, sel])
    assert pred.interval == "posterior" and pred.draws.shape == (200, N_TARGET, N_COLS)
    rest = np.setdiff1d(np.arange(N_COLS), sel)
    inside = (pred.lower[:, rest] <= target[:, rest]) & (target[:, rest] <= pred.upper[:, rest])
    assert 0.86 <= inside.mean() <= 0.94
    # selected benchmarks keep their observed value
    np.testing.assert_array_equal(pred.mean[:, sel], target[:, sel])
    # the point prediction beats the column mean (the oracle conditional mean's R² is high)
    resid = ((pred.mean[:, rest] - target[:, rest]) ** 2).sum()
    total = ((target[:, rest] - target[:, rest].mean(axis=0)) ** 2).sum()
    assert 1 - resid / total > 0.5


def test_closed_form_factor_posterior_matches_gaussian_conditioning():
    """With one parameter draw, the predictive of an unobserved column is the Gaussian
    conditional ``N(Sigma_ja Sigma_aa^-1 (z_a - mu_a) + mu_j, Schur complement)``."""
    rng = np.random.default_rng(4)
    w = rng.normal(size=(1, 6, 2))
    psi = rng.uniform(0.2, 0.5, size=(1, 6))
    mu = rng.normal(size=(1, 6))
    cols = np.array([1, 4])
    rest = np.array([0, 2, 3, 5])
    z_a = rng.normal(size=(3, 2))
    cond, _ = factor_predictive(z_a, cols, w, mu, psi, rng)
    sigma = w[0] @ w[0].T + np.diag(psi[0])
    gain = sigma[:, cols] @ np.linalg.inv(sigma[np.ix_(cols, cols)])
    expected = mu[0] + (z_a - mu[0, cols]) @ gain.T
    np.testing.assert_allclose(cond[0][:, rest], expected[:, rest], rtol=1e-10, atol=1e-12)
    big_w, big_mu, big_psi = (np.repeat(a, 20000, axis=0) for a in (w, mu, psi))
    _, d = factor_predictive(z_a[:1], cols, big_w, big_mu, big_psi, rng)
    schur = np.diag(sigma - gain @ sigma[cols])
    np.testing.assert_allclose(d[:, 0, rest].var(axis=0), schur[rest], rtol=0.05)
    np.testing.assert_allclose(d[:, 0, rest].mean(axis=0), expected[0, rest], atol=0.03)


def test_same_seed_same_numbers(sim):
    obs = sim["observed"]
    z = np.where(obs, (sim["source"] - np.nanmean(sim["source"], 0)), 0.0)
    a = fit_factor_posterior(z, obs, seed=3, **OPTS)
    b = fit_factor_posterior(z, obs, seed=3, **OPTS)
    for key in a:
        np.testing.assert_array_equal(a[key], b[key])


def test_posterior_is_shared_across_coresets_through_a_fit_cache(sim, fitted):
    """One SVI fit per source and options: a second budget's imputer reuses it."""
    source = ScoreMatrix(sim["source"], level="benchmark")
    cache = FitCache()
    small = Coreset(indices=np.array([0]), items=source.items[[0]])
    a = FactorImputer(**OPTS, seed=1).fit(source, small, cache=cache)
    b = FactorImputer(**OPTS, seed=1).fit(source, fitted.coreset_, cache=cache)
    assert cache.misses == 1 and cache.hits == 1 and a.posterior_ is b.posterior_
    for key in fitted.posterior_:  # equal to the fit made without a cache
        np.testing.assert_array_equal(b.posterior_[key], fitted.posterior_[key])


def test_missing_selected_scores_and_nan_rows(sim, fitted):
    x = sim["target"][:4, fitted.coreset_.indices].copy()
    x[1, 0] = np.nan
    x[2] = np.nan
    pred = fitted.predict(x)
    assert np.isfinite(pred.mean[[0, 1, 3]]).all()
    assert np.isnan(pred.mean[2]).all()


def test_validation_errors(sim):
    source = ScoreMatrix(sim["source"], level="benchmark")
    coreset = Coreset(indices=np.array([0]), items=source.items[[0]])
    with pytest.raises(ValidationError, match="rank"):
        FactorImputer(rank=N_COLS).fit(source, coreset)
    with pytest.raises(ValidationError, match="rank"):
        FactorImputer(rank=0).fit(source, coreset)
    with pytest.raises(ValidationError, match="level"):
        FactorImputer(level=1.5).fit(source, coreset)
    with pytest.raises(ValidationError, match="n_steps"):
        FactorImputer(n_steps=0).fit(source, coreset)
    with pytest.raises(ValidationError, match="not fitted"):
        FactorImputer().predict(np.zeros((1, 1)))
    with pytest.raises(ValidationError, match="models"):
        FactorImputer().fit(ScoreMatrix(sim["source"][:1], level="benchmark"), coreset)


def test_registered_methods_are_impute_methods():
    for name in ("factor-mi", "factor-random", "factor-entropy"):
        method = get_method(name)
        assert method.task == "impute"
        pred = method.make_predictor(seed=2, rank=4)
        assert isinstance(pred, FactorImputer) and pred.rank == 4 and pred.seed == 2
