"""Scoring a new model: ability posteriors against closed forms and known abilities."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st
from scipy.optimize import minimize_scalar
from scipy.special import expit

from coreval.errors import ValidationError
from coreval.irt import IRTFit, score_new_model
from coreval.irt._data import prepare
from coreval.irt.inference.idata import _to_idata

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


def _known_fit(model: str, a: np.ndarray, d: np.ndarray, *, extra: dict | None = None,
               n_draws: int = 1, noise: float = 0.0, seed: int = 0,
               d_shift: np.ndarray | None = None) -> IRTFit:
    """An IRTFit holding given item parameters (optionally ``n_draws`` noisy draws, whose
    intercepts are moved by ``d_shift`` (n_draws,))."""
    rng = np.random.default_rng(seed)
    n_items, dims = a.shape
    n_models = 20
    values = (rng.random((n_models, n_items)) < 0.5).astype(float)
    data = prepare(values, "2pl")
    a_draws = a[None] * np.exp(noise * rng.normal(size=(n_draws, *a.shape)))
    d_draws = d[None] + noise * rng.normal(size=(n_draws, n_items))
    if n_draws == 1:
        a_draws, d_draws = a[None], d[None]
    if d_shift is not None:
        d_draws = d_draws + np.asarray(d_shift, dtype=float)[:, None]
    samples = {"a": a_draws[None], "d": d_draws[None],
               "theta": rng.normal(size=(1, n_draws, n_models, dims))}
    for name, value in (extra or {}).items():
        samples[name] = np.broadcast_to(value, (1, n_draws, *np.shape(value)[-1:])).copy() \
            if np.ndim(value) else np.full((1, n_draws, n_models), value)
    if model == "beta3":
        samples["b"] = -d_draws[None] / a_draws[None][..., 0]
    idata, _ = _to_idata(samples, {}, data, "2pl", dims)
    return IRTFit(model=model, method="map", dims=dims, priors="weak", idata=idata, card={})


def _items(n_items: int, dims: int = 1, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.lognormal(0.0, 0.3, size=(n_items, dims)), rng.normal(size=n_items)


def _log_post_2pl(t: np.ndarray, y: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray:
    p = expit(np.outer(t, a[:, 0]) + d)
    return st.norm.logpdf(t) + (y * np.log(p) + (1 - y) * np.log1p(-p)).sum(axis=1)


def test_eap_matches_numerical_integration() -> None:
    a, d = _items(40)
    rng = np.random.default_rng(2)
    y = (rng.random(40) < expit(0.7 * a[:, 0] + d)).astype(float)
    post = score_new_model(_known_fit("2pl", a, d), y, method="eap", propagate=False)
    grid = np.linspace(-8, 8, 20001)
    w = np.exp(_log_post_2pl(grid, y, a, d) - _log_post_2pl(grid, y, a, d).max())
    w /= w.sum()
    mean = w @ grid
    sd = np.sqrt(w @ (grid - mean) ** 2)
    assert post.mean[0] == pytest.approx(mean, abs=2e-3)
    assert post.sd[0] == pytest.approx(sd, rel=1e-2)
    assert post.draws.shape == (200, 1)
    assert np.all(post.item_draw_index == -1)
    assert post.draws.mean() == pytest.approx(mean, abs=4 * sd / np.sqrt(200))


def test_eap_grid_holds_the_long_tail_of_a_3pl_posterior() -> None:
    """A 3PL pattern whose posterior has a flat lower tail (guessing): the mode's ±6
    Laplace sds miss 0.8 % of its mass; EAP must still match a dense integration."""
    a = np.array([1.217, 11.326, 0.58, 5.208, 7.224, 1.422, 2.269, 1.985, 2.568, 2.375,
                  5.72, 2.673])[:, None]
    d = np.array([-0.097, 0.544, -0.233, -1.926, 2.855, 1.132, 0.806, 0.374, -1.101,
                  -2.376, -1.073, 0.904])
    c = np.array([0.17, 0.159, 0.213, 0.067, 0.099, 0.228, 0.166, 0.154, 0.129, 0.111,
                  0.186, 0.161])
    y = np.array([0.0, np.nan, 1.0, 0.0, 0.0, np.nan, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0])
    post = score_new_model(_known_fit("3pl", a, d, extra={"c": c}), y, method="eap",
                           propagate=False)
    seen = ~np.isnan(y)
    grid = np.linspace(-10, 10, 20001)
    p = c[seen] + (1 - c[seen]) * expit(np.outer(grid, a[seen, 0]) + d[seen])
    p = np.clip(p, 1e-15, 1 - 1e-15)
    log_post = st.norm.logpdf(grid) + (y[seen] * np.log(p)
                                       + (1 - y[seen]) * np.log1p(-p)).sum(axis=1)
    w = np.exp(log_post - log_post.max())
    w /= w.sum()
    mean = w @ grid
    sd = np.sqrt(w @ (grid - mean) ** 2)
    assert post.mean[0] == pytest.approx(mean, abs=5e-3)  # was 0.016 off
    assert post.sd[0] == pytest.approx(sd, rel=0.02)      # was 7 % low


def test_map_and_laplace_match_closed_form() -> None:
    a, d = _items(60)
    rng = np.random.default_rng(3)
    y = (rng.random(60) < expit(-0.4 * a[:, 0] + d)).astype(float)
    post = score_new_model(_known_fit("2pl", a, d), y, method="map", propagate=False)
    mode = minimize_scalar(lambda t: -_log_post_2pl(np.array([t]), y, a, d)[0]).x
    p = expit(a[:, 0] * mode + d)
    laplace_sd = 1.0 / np.sqrt(1.0 + np.sum(a[:, 0] ** 2 * p * (1 - p)))  # prior + Fisher info
    assert post.mean[0] == pytest.approx(mode, abs=1e-3)
    assert post.sd[0] == pytest.approx(laplace_sd, rel=1e-3)


def test_nuts_agrees_with_eap() -> None:
    a, d = _items(30)
    y = (np.random.default_rng(4).random(30) < expit(0.3 * a[:, 0] + d)).astype(float)
    fitted = _known_fit("2pl", a, d)
    eap = score_new_model(fitted, y, method="eap", propagate=False)
    nuts = score_new_model(fitted, y, method="nuts", propagate=False, num_draws=400)
    assert nuts.mean[0] == pytest.approx(eap.mean[0], abs=0.35 * eap.sd[0])
    assert nuts.sd[0] == pytest.approx(eap.sd[0], rel=0.25)


def _simulate_responses(model: str, theta: float, a: np.ndarray, d: np.ndarray,
                        rng: np.random.Generator, extra: dict) -> np.ndarray:
    z = theta * a[:, 0] + d
    if model in ("1pl", "2pl"):
        return (rng.random(z.size) < expit(z)).astype(float)
    if model == "3pl":
        return (rng.random(z.size) < extra["c"] + (1 - extra["c"]) * expit(z)).astype(float)
    if model == "beta":
        mu = np.exp(z / 2)
        return rng.beta(mu, 1 / mu)
    if model == "lego":
        return expit(z + extra["sigma"] * rng.normal(size=z.size))
    if model == "hetero":
        mu = expit(z)
        return rng.normal(mu, np.sqrt(extra["k"] * mu * (1 - mu)))
    if model == "beta3":
        b = -d / a[:, 0]
        t01, delta = expit(theta), expit(b)
        conc1 = np.exp(a[:, 0] * (np.log(t01) - np.log(delta)))
        conc0 = np.exp(a[:, 0] * (np.log(1 - t01) - np.log(1 - delta)))
        return rng.beta(conc1, conc0)
    raise AssertionError(model)


@pytest.mark.parametrize("model", ["1pl", "2pl", "3pl", "beta", "lego", "hetero", "beta3"])
def test_scoring_recovers_known_ability(model: str) -> None:
    a, d = _items(300, seed=5)
    if model == "1pl":
        a = np.ones_like(a)
    rng = np.random.default_rng(6)
    extra = {"c": np.full(300, 0.2), "sigma": 0.5, "k": 0.3}
    kept = {"3pl": {"c": extra["c"]}, "lego": {"sigma": 0.5}, "hetero": {"k": 0.3}}
    fitted = _known_fit(model, a, d, extra=kept.get(model))
    y = _simulate_responses(model, 0.8, a, d, rng, extra)
    post = score_new_model(fitted, y, method="eap", num_draws=50)
    assert abs(post.mean[0] - 0.8) < 4 * post.sd[0]
    assert post.sd[0] < 0.25


def test_two_and_three_dimensions() -> None:
    rng = np.random.default_rng(7)
    a, d = _items(500, dims=2, seed=8)
    a[:, 1] *= rng.choice([-1.0, 1.0], size=500)
    truth = np.array([0.5, -0.7])
    y = (rng.random(500) < expit(a @ truth + d)).astype(float)
    post = score_new_model(_known_fit("2pl", a, d), y, method="eap", propagate=False)
    assert post.draws.shape == (200, 2)
    assert np.all(np.abs(post.mean - truth) < 4 * post.sd)
    a3, d3 = _items(400, dims=3, seed=9)
    a3[:, 1:] *= rng.choice([-1.0, 1.0], size=(400, 2))
    y3 = (rng.random(400) < expit(a3 @ np.array([0.3, 0.0, -0.5]) + d3)).astype(float)
    fitted3 = _known_fit("2pl", a3, d3)
    eap = score_new_model(fitted3, y3, method="eap", propagate=False)  # importance sampling
    mode = score_new_model(fitted3, y3, method="map", propagate=False)
    assert np.all(np.abs(eap.mean - mode.mean) < 0.25 * eap.sd)
    assert np.allclose(eap.sd, mode.sd, rtol=0.15)


def test_propagation_over_item_draws_widens_the_posterior() -> None:
    a, d = _items(50, seed=10)
    y = (np.random.default_rng(11).random(50) < expit(a[:, 0] + d)).astype(float)
    fitted = _known_fit("2pl", a, d, n_draws=40, noise=0.3)
    with_draws = score_new_model(fitted, y, propagate=True, num_draws=100, seed=1)
    point = score_new_model(fitted, y, propagate=False)
    assert with_draws.item_draw_index.shape == (100,)
    assert with_draws.item_draw_index.min() >= 0 and with_draws.item_draw_index.max() < 40
    assert with_draws.sd[0] > point.sd[0]
    again = score_new_model(fitted, y, propagate=True, num_draws=100, seed=1)
    assert np.array_equal(again.draws, with_draws.draws)


def test_draw_index_pairs_each_ability_draw_with_its_item_draw() -> None:
    """Ability draw s is conditioned on item draw draw_index[s]: all-correct answers put
    the ability higher under the draws whose items are hard (intercept - 3)."""
    a, d = _items(30, seed=14)
    shift = np.tile([3.0, -3.0], 3)  # even draws easy, odd draws hard
    fitted = _known_fit("2pl", a, d, n_draws=6, d_shift=shift)
    index = np.tile([1, 0, 3, 2, 5, 4], 20)
    post = score_new_model(fitted, np.ones(30), draw_index=index, seed=2)
    np.testing.assert_array_equal(post.item_draw_index, index)
    theta = post.draws[:, 0]
    hard = index % 2 == 1
    assert theta[hard].mean() > theta[~hard].mean() + 1.0
    with pytest.raises(ValidationError, match="draw positions"):
        score_new_model(fitted, np.ones(30), draw_index=[0, 6])
    with pytest.raises(ValidationError, match="propagate"):
        score_new_model(fitted, np.ones(30), draw_index=[0], propagate=False)


def test_response_formats_and_subsets_agree() -> None:
    a, d = _items(20, seed=12)
    fitted = _known_fit("2pl", a, d)
    y = (np.random.default_rng(13).random(20) < 0.5).astype(float)
    ids = fitted.item_ids[:10]
    y_sub = y[:10]
    by_series = score_new_model(fitted, pd.Series(y_sub, index=ids), propagate=False)
    by_dict = score_new_model(fitted, dict(zip(ids, y_sub, strict=True)), propagate=False)
    by_array = score_new_model(fitted, y_sub, items=ids, propagate=False)
    with_nan = score_new_model(fitted, np.r_[y_sub, np.full(10, np.nan)], propagate=False)
    for other in (by_dict, by_array, with_nan):
        assert other.mean[0] == pytest.approx(by_series.mean[0], abs=1e-6)
    assert list(with_nan.items) == list(ids)


def test_scoring_errors() -> None:
    a, d = _items(5, seed=14)
    fitted = _known_fit("2pl", a, d)
    with pytest.raises(ValidationError, match=r"unknown item ids: nope1, nope2"):
        score_new_model(fitted, {"nope1": 1.0, "item0": 0.0, "nope2": 1.0})
    with pytest.raises(ValidationError, match=r"needs 0/1 responses but found values 0\.5"):
        score_new_model(fitted, [0.5, 1, 0, 1, 0])
    with pytest.raises(ValidationError, match=r"3 values but the fit has 5 items"):
        score_new_model(fitted, [1, 0, 1])
    with pytest.raises(ValidationError, match=r"unknown scoring method"):
        score_new_model(fitted, [1, 0, 1, 0, 1], method="mcmc")
    for answers in (pd.Series({"item0": 1.0, "item1": "correct"}),
                    {"item0": 1.0, "item1": "correct"}):  # not dropped as unanswered
        with pytest.raises(ValidationError, match=r"must be numeric; items item1 have 'correct'"):
            score_new_model(fitted, answers)


def test_3pl_eap_keeps_the_flat_lower_tail():
    # a 3PL posterior's lower tail tends to a constant likelihood: ±6 sd around the mean
    # left out 0.07 % of its mass and 2 % of its sd
    from coreval.data import simulate
    from coreval.irt import fit

    f = fit("3pl", simulate(150, 30, seed=1).matrix, method="map")
    ip = f.item_point()
    a, d, c = (np.asarray(ip[k], float).ravel() for k in ("a", "d", "c"))
    grid = np.linspace(-10, 10, 40001)
    p = np.clip(c + (1 - c) * expit(np.outer(grid, a) + d), 1e-15, 1 - 1e-15)
    rng = np.random.default_rng(0)
    for share in (0.3, 0.5):
        y = (rng.random(30) < share).astype(float)
        y[rng.random(30) < 0.3] = np.nan
        obs = ~np.isnan(y)
        yy = np.where(obs, y, 0.0)
        ll = (yy * np.log(p) + (obs * (1 - yy)) * np.log1p(-p)).sum(axis=1) - grid**2 / 2
        w = np.exp(ll - ll.max())
        w /= w.sum()
        mean = w @ grid
        post = score_new_model(f, y, method="eap", propagate=False)
        assert post.mean[0] == pytest.approx(mean, abs=1e-4)
        assert post.sd[0] == pytest.approx(np.sqrt(w @ grid**2 - mean**2), rel=2e-4)
