"""A new IRT model is one spec entry: register it here, and the engine and the methods use it.

The toy model is a 2PL with a fixed guessing floor of 0.25 (a four-option multiple-choice
test answered at random by a model that does not know the item). It is defined and
registered in this file only; fitting, scoring a new model, irt-bayes and gp-irt take it
without any other module knowing of it.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest

import coreval
from coreval.data import ScoreMatrix
from coreval.irt import fit, score_new_model
from coreval.irt import priors as irt_priors
from coreval.irt.models import linear_predictor, normal_log_prior
from coreval.irt.spec import IRTModel, get_spec, model_names, register_model

FLOOR = 0.25


def floor_response(theta, params) -> dist.Distribution:
    """``Bernoulli(0.25 + 0.75 sigmoid(theta·a + d))``."""
    z = linear_predictor(theta, params["a"], params["d"])
    return dist.Bernoulli(probs=FLOOR + (1.0 - FLOOR) * jax.nn.sigmoid(z))


def floor_mean(theta, params):
    z = linear_predictor(theta, jnp.asarray(params["a"]), jnp.asarray(params["d"]))
    return FLOOR + (1.0 - FLOOR) * jax.nn.sigmoid(z)


def floor_model(y, mask, *, n_models, n_items, dims=1, priors="weak", batch_size=None):
    """The NumPyro model: the engine's item priors, N(0, I) abilities, the floor likelihood."""
    params = {"a": irt_priors.discrimination(n_items, dims, priors),
              "d": irt_priors.intercept(n_items, priors)}
    with numpyro.plate("models", n_models, subsample_size=batch_size) as idx:
        theta = numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([dims]).to_event(1))
        if batch_size is not None:
            y, mask = y[idx], mask[idx]
        numpyro.sample("y", floor_response(theta, params).mask(mask).to_event(1), obs=y)


register_model(IRTModel(
    "2pl-floor", floor_model, floor_response, floor_mean, "binary", logistic=True,
    guessing=lambda params: np.full(np.shape(params["d"]), FLOOR),
    log_prior_theta=normal_log_prior, ability_prior=lambda: dist.Normal(0.0, 1.0),
), replace=True)


@pytest.fixture(scope="module")
def floor_data():
    """140 models × 240 items drawn from the floor model; the first 60 are the source."""
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(140, 1))
    a = np.exp(rng.normal(0.2, 0.3, size=(240, 1)))
    d = rng.normal(0.0, 1.2, size=240)
    p = FLOOR + (1 - FLOOR) / (1 + np.exp(-(theta @ a.T + d)))
    y = (rng.random(p.shape) < p).astype(float)
    return ScoreMatrix(y[:60]), y[60:], p[60:].mean(axis=1), a[:, 0], d


def test_the_toy_model_is_registered_here_only():
    assert "2pl-floor" in model_names() and get_spec("2pl-floor").logistic
    with pytest.raises(coreval.ValidationError, match="2pl-floor"):
        get_spec("2pl-flor")


def test_fit_and_score_a_new_model(floor_data):
    source, target, _, a_true, d_true = floor_data
    result = fit("2pl-floor", source, method="map", seed=0, settings={"num_steps": 800, "num_draws": 20})
    assert result.link == "2pl-floor"
    point = result.item_point()
    assert np.corrcoef(point["d"], d_true)[0, 1] > 0.85
    assert np.corrcoef(np.asarray(point["a"])[:, 0], a_true)[0, 1] > 0.3
    # scoring a new model: its ability posterior from 60 of its answers
    answers = dict(zip(source.items[:60].astype(str), target[0, :60], strict=True))
    posterior = score_new_model(result, answers)
    assert np.isfinite(posterior.mean).all() and posterior.sd[0] > 0


def test_irt_bayes_and_gp_irt_take_the_toy_model(floor_data):
    source, target, truth, _, _ = floor_data
    fast = {"model": "2pl-floor", "fit_method": "map", "num_steps": 800, "priors": "weak",
            "learning_rate": 0.05, "num_draws": 50}
    out = {}
    for method, options in (("irt-bayes", {**fast, "misfit": "none"}), ("gp-irt", fast)):
        fitted = coreval.select(source, method, 30, seed=0, **options)
        pred = fitted.predict_array(target[:, fitted.coreset.indices])
        assert np.all(pred.mean >= FLOOR - 1e-9) and np.all(pred.mean <= 1.0)
        out[method] = float(np.sqrt(np.mean((pred.mean - truth) ** 2)))
    # both beat the plain mean of a random coreset of the same size
    cols = np.random.default_rng(0).permutation(source.n_items)[:30]
    baseline = float(np.sqrt(np.mean((target[:, cols].mean(axis=1) - truth) ** 2)))
    assert out["irt-bayes"] < baseline and out["gp-irt"] < baseline, (out, baseline)
