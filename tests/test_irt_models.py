"""IRT model definitions: response densities against scipy, expected scores, masking, priors."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
import scipy.stats as st
from numpy.testing import assert_allclose
from numpyro import handlers
from scipy.integrate import quad
from scipy.special import expit, logit

from coreval.irt import models
from coreval.irt.priors import lower_triangular_mask


def _params(rng: np.random.Generator, n_models: int = 4, n_items: int = 5) -> dict:
    return {
        "theta": rng.normal(size=(n_models, 1)),
        "a": rng.lognormal(0.0, 0.3, size=(n_items, 1)),
        "d": rng.normal(size=n_items),
        "c": rng.uniform(0.1, 0.3, size=n_items),
        "b": rng.normal(size=n_items),
        "sigma": rng.uniform(0.3, 1.0, size=n_models),
        "k": rng.uniform(0.2, 1.0, size=n_models),
    }


def _scipy_logpdf(model: str, y: np.ndarray, p: dict) -> np.ndarray:
    theta, a, d = p["theta"], p["a"], p["d"]
    z = theta @ a.T + d
    if model in ("1pl", "2pl"):
        return st.bernoulli.logpmf(y, expit(z))
    if model == "3pl":
        return st.bernoulli.logpmf(y, p["c"] + (1 - p["c"]) * expit(z))
    if model == "beta":  # Noel & Dauvier: mu = exp(z/2), Beta(mu, 1/mu)
        mu = np.exp(z / 2)
        return st.beta.logpdf(y, mu + 1e-6, 1 / mu + 1e-6)
    if model == "lego":  # logit-normal density of Y
        s = p["sigma"][:, None]
        return st.norm.logpdf(logit(y), z, s) - np.log(y * (1 - y))
    if model == "hetero":
        mu = expit(z)
        return st.norm.logpdf(y, mu, np.sqrt(p["k"][:, None] * mu * (1 - mu) + 1e-8))
    if model == "beta3":  # Chen et al. 2019 with theta01 = expit(theta), delta = expit(b)
        t01, delta = expit(theta), expit(p["b"])
        log_a = a[:, 0] * (np.log(t01) - np.log(delta))
        log_b = a[:, 0] * (np.log(1 - t01) - np.log(1 - delta))
        conc1 = np.exp(np.clip(log_a, -15, 15)) + 1e-6
        conc0 = np.exp(np.clip(log_b, -15, 15)) + 1e-6
        return st.beta.logpdf(y, conc1, conc0)
    raise AssertionError(model)


@pytest.mark.parametrize("model", models.MODELS)
def test_response_log_density_matches_scipy(model: str) -> None:
    rng = np.random.default_rng(0)
    p = _params(rng)
    if model in models.BINARY_MODELS:
        y = (rng.random((4, 5)) < 0.5).astype(float)
    else:
        y = rng.uniform(0.05, 0.95, size=(4, 5))
    jp = {k: jnp.asarray(v, dtype=jnp.float32) for k, v in p.items()}
    got = np.asarray(models.response_dist(model, jp["theta"], jp).log_prob(jnp.asarray(y)))
    assert_allclose(got, _scipy_logpdf(model, y, p), rtol=2e-4, atol=2e-4)


def test_expected_scores_match_closed_forms() -> None:
    rng = np.random.default_rng(1)
    p = _params(rng, n_models=3, n_items=4)
    theta, a, d = p["theta"], p["a"], p["d"]
    z = theta @ a.T + d
    jp = {k: jnp.asarray(v) for k, v in p.items()}
    # 2PL / Beta: sigmoid(z); Beta's mean mu^2 / (mu^2 + 1) is sigmoid(z) (up to the 1e-6).
    assert_allclose(models.mean_response("2pl", theta, jp), expit(z), rtol=1e-5)
    mu = np.exp(z / 2)
    assert_allclose(models.mean_response("beta", theta, jp), st.beta.mean(mu, 1 / mu),
                    rtol=1e-5)
    assert_allclose(models.mean_response("3pl", theta, jp),
                    p["c"] + (1 - p["c"]) * expit(z), rtol=1e-5)
    # LEGO: logit-normal mean by numerical integration.
    s = float(np.median(p["sigma"]))
    lego = np.asarray(models.mean_response("lego", theta, dict(jp, sigma=jnp.asarray([s]))))
    expected = np.vectorize(lambda m: quad(lambda x: expit(x) * st.norm.pdf(x, m, s),
                                           -np.inf, np.inf)[0])(z)
    assert_allclose(lego, expected, atol=1e-5)
    # beta3: mean A / (A + B) of the Beta equals sigmoid(a (theta - b)) without clipping.
    t01, delta = expit(theta), expit(p["b"])
    conc1 = np.exp(a[:, 0] * (np.log(t01) - np.log(delta)))
    conc0 = np.exp(a[:, 0] * (np.log(1 - t01) - np.log(1 - delta)))
    assert_allclose(models.mean_response("beta3", theta, jp), conc1 / (conc1 + conc0),
                    rtol=1e-4)


@pytest.mark.parametrize("model", ["2pl", "lego", "beta3"])
def test_masked_entries_do_not_contribute(model: str) -> None:
    rng = np.random.default_rng(2)
    n_models, n_items = 6, 5
    binary = model in models.BINARY_MODELS
    y = (rng.random((n_models, n_items)) < 0.5).astype(np.float32) if binary else \
        rng.uniform(0.1, 0.9, size=(n_models, n_items)).astype(np.float32)
    mask = rng.random((n_models, n_items)) < 0.7
    fn = models.get_model(model)
    kw = dict(n_models=n_models, n_items=n_items, dims=1, priors="weak", batch_size=None)

    def loglik(values: np.ndarray) -> tuple[float, dict]:
        tr = handlers.trace(handlers.seed(fn, 0)).get_trace(jnp.asarray(values),
                                                           jnp.asarray(mask), **kw)
        site = tr["y"]
        return float(site["fn"].log_prob(site["value"]).sum()), tr

    base, tr = loglik(y)
    other = np.where(mask, y, 1.0 - y if binary else 0.5 * y)
    assert loglik(other)[0] == pytest.approx(base, rel=1e-6)
    # ... and equals scipy's log density summed over the observed entries only.
    p = {k: np.asarray(tr[k]["value"], dtype=float) for k in ("a", "d", "theta", "sigma")
         if k in tr}
    if model == "beta3":
        p["b"] = np.asarray(tr["b"]["value"], dtype=float)
    expected = _scipy_logpdf(model, y.astype(float), p)[mask].sum()
    assert base == pytest.approx(expected, rel=1e-4)


def test_lower_triangular_rotation_constraint() -> None:
    mask = lower_triangular_mask(5, 3)
    assert mask[0].tolist() == [True, False, False]
    assert mask[1].tolist() == [True, True, False]
    assert mask[2:].all()
    tr = handlers.trace(handlers.seed(models.twopl, 3)).get_trace(
        jnp.zeros((4, 6)), jnp.ones((4, 6), bool), n_models=4, n_items=6, dims=3)
    a = np.asarray(tr["a"]["value"])
    assert a.shape == (6, 3)
    assert np.all(a[np.triu_indices(3, 1)] == 0.0)
    assert np.all(np.diag(a[:3]) > 0)


def test_hierarchical_priors_define_hyperparameters() -> None:
    tr = handlers.trace(handlers.seed(models.twopl, 0)).get_trace(
        jnp.zeros((3, 4)), jnp.ones((3, 4), bool), n_models=3, n_items=4, priors="hierarchical")
    for site in ("mu_a", "u_a", "mu_d", "u_d"):
        assert site in tr
    # mu ~ N(0, 10), u ~ Gamma(1, 1) (appendix G.2)
    assert float(tr["mu_d"]["fn"].scale) == 10.0
    assert float(tr["u_d"]["fn"].concentration) == 1.0
    assert float(tr["u_d"]["fn"].rate) == 1.0
