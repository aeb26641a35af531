"""IRT inference: parameter recovery (MAP/SVI), every model × path with missing data, errors."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.linalg import orthogonal_procrustes
from scipy.special import expit

from coreval.data.simulate import simulate
from coreval.errors import ValidationError
from coreval.irt import fit
from coreval.irt.models import MODELS

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


def _continuous_sim(model: str, n_models: int, n_items: int, seed: int):
    """Responses from the fitted model's own generative process (known item locations)."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_models, 1))
    a = rng.lognormal(0.0, 0.3, size=(n_items, 1))
    d = rng.normal(0.0, 1.0, size=n_items)
    z = theta @ a.T + d
    if model == "lego":
        y = expit(z + rng.uniform(0.2, 0.6, size=(n_models, 1)) * rng.normal(size=z.shape))
    elif model == "hetero":
        mu = expit(z)
        k = rng.gamma(2.0, 0.5, size=(n_models, 1)) * 0.2
        y = rng.normal(mu, np.sqrt(k * mu * (1 - mu)))
    else:  # beta: Noel & Dauvier, mu = exp(z/2)
        mu = np.exp(z / 2)
        y = rng.beta(mu, 1 / mu)
    return y, d


def _with_nan(y: np.ndarray, frac: float, seed: int) -> np.ndarray:
    y = np.array(y, dtype=float)
    rng = np.random.default_rng(seed)
    y[rng.random(y.shape) < frac] = np.nan
    y[0, 0] = np.nan
    return y


def test_2pl_recovery_map() -> None:
    sim = simulate(300, 1000, n_families=1, family_sd=0.0, log_a_sd=0.5, seed=3)
    result = fit("2pl", sim.matrix, method="map", show_progress=False, settings={"num_steps": 600, "num_draws": 1})
    assert np.corrcoef(result.items["a"], sim.params["a"][:, 0])[0, 1] >= 0.9
    assert np.corrcoef(result.items["d"], sim.params["d"])[0, 1] >= 0.97
    assert np.corrcoef(result.abilities()[:, 0], sim.params["theta"][:, 0])[0, 1] >= 0.97


def test_2pl_two_dimensions_recovery_up_to_rotation() -> None:
    sim = simulate(500, 300, dims=2, n_families=1, family_sd=0.0, log_a_sd=0.8, seed=4)
    result = fit("2pl", sim.matrix, method="map", dims=2, show_progress=False, settings={"num_steps": 600, "num_draws": 1})
    a_hat, a_true = result.item_point()["a"], sim.params["a"]
    # Documented convention: a[0, 1] = 0 and positive diagonal on the first D items.
    assert a_hat[0, 1] == 0.0 and a_hat[0, 0] > 0 and a_hat[1, 1] > 0
    # a a^T is rotation invariant; compare it, and the loadings after Procrustes.
    iu = np.triu_indices(len(a_true))
    assert np.corrcoef((a_hat @ a_hat.T)[iu], (a_true @ a_true.T)[iu])[0, 1] >= 0.9
    rot, _ = orthogonal_procrustes(a_hat, a_true)
    assert np.corrcoef((a_hat @ rot).ravel(), a_true.ravel())[0, 1] >= 0.85
    assert np.corrcoef(result.items["d"], sim.params["d"])[0, 1] >= 0.95


@pytest.mark.parametrize("model", ["beta", "lego", "hetero"])
def test_continuous_models_recover_item_location(model: str) -> None:
    y, d = _continuous_sim(model, 150, 200, seed=5)
    result = fit(model, y, method="map", show_progress=False, settings={"num_steps": 500, "num_draws": 1})
    assert np.corrcoef(result.items["d"], d)[0, 1] >= 0.9


def test_minibatch_svi_recovers_intercepts() -> None:
    sim = simulate(200, 150, n_families=1, family_sd=0.0, seed=6)
    result = fit("2pl", sim.matrix, method="svi", show_progress=False, settings={"batch_size": 50, "num_steps": 800, "num_draws": 20})
    assert result.card["settings"]["batch_size"] == 50
    assert result.abilities().shape == (200, 1)
    assert np.corrcoef(result.items["d"], sim.params["d"])[0, 1] >= 0.9


# Each model once and each inference path at least once (fast); the full cross product is slow.
FAST_PAIRS = [("1pl", "svi", {}), ("3pl", "map", {"num_draws": 1}),
              ("beta", "svi", {}), ("lego", "map", {"priors": "hierarchical"}),
              ("hetero", "svi", {"guide": "lowrank"}), ("beta3", "map", {"num_draws": 1}),
              ("2pl", "mml", {})]
SLOW_PAIRS = [(m, k, {}) for m in MODELS for k in ("map", "svi", "nuts")
              if (m, k) not in {(m2, k2) for m2, k2, _ in FAST_PAIRS} | {("2pl", "nuts")}]


def _data_with_missing(model: str) -> np.ndarray:
    rng = np.random.default_rng(7)
    n_models, n_items = 24, 12
    theta = rng.normal(size=(n_models, 1))
    z = theta @ rng.lognormal(0, 0.3, (n_items, 1)).T + rng.normal(size=n_items)
    y = (rng.random(z.shape) < expit(z)).astype(float) if model in ("1pl", "2pl", "3pl") \
        else np.clip(expit(z + 0.3 * rng.normal(size=z.shape)), 0.0, 1.0)
    return _with_nan(y, 0.15, seed=8)


def _check_fit_with_missing(model: str, method: str, options: dict) -> None:
    y = _data_with_missing(model)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fast = {"map": {"num_steps": 150, "num_draws": 10},
                "svi": {"num_steps": 150, "num_draws": 10},
                "nuts": {"num_warmup": 60, "num_samples": 30, "num_chains": 2}}.get(method, {})
        priors = options.get("priors", "weak")
        settings = {**fast, **{k: v for k, v in options.items() if k != "priors"}}
        result = fit(model, y, method=method, priors=priors, settings=settings,
                     show_progress=False)
    _check_result(result, y, method)


def _check_result(result, y: np.ndarray, method: str) -> None:
    n_items = y.shape[1]
    n_obs = int((~np.isnan(y)).sum())
    assert result.items.shape[0] == n_items
    assert np.isfinite(result.items[["a", "d", "b"]].to_numpy()).all()
    assert np.isfinite(result.abilities()).all()
    assert result.item_draws()["a"].shape[1:] == (n_items, 1)
    ll = result.idata.log_likelihood["y"]
    assert ll.sizes["obs"] == n_obs and np.isfinite(ll.values).all()
    observed = result.idata.observed_data["y"].values
    assert np.array_equal(np.isnan(observed), np.isnan(y))
    if method == "nuts":
        diag = result.card["diagnostics"]
        assert {"max_rhat", "min_ess_bulk", "divergences"} <= set(diag)
        assert "diverging" in result.idata.sample_stats
    if method == "mml":
        assert {"a_sd", "d_sd"} <= set(result.items.columns)


@pytest.mark.parametrize(("model", "method", "options"), FAST_PAIRS)
def test_every_model_and_path_with_missing_entries(model, method, options) -> None:
    _check_fit_with_missing(model, method, options)


@pytest.mark.slow
@pytest.mark.parametrize(("model", "method", "options"), SLOW_PAIRS)
def test_every_model_and_path_full_cross_product(model, method, options) -> None:
    _check_fit_with_missing(model, method, options)


def test_nuts_with_missing_entries_warns_with_rhat_numbers() -> None:
    y = _data_with_missing("2pl")
    with pytest.warns(UserWarning, match=r"R-hat \d"):
        result = fit("2pl", y, method="nuts", show_progress=False, settings={"num_warmup": 3, "num_samples": 4, "num_chains": 2})
    _check_result(result, y, "nuts")


def test_same_seed_same_numbers() -> None:
    y = (np.random.default_rng(10).random((15, 8)) < 0.5).astype(float)
    runs = [fit("2pl", y, method="map", seed=1,
                show_progress=False, settings={"num_steps": 50, "num_draws": 5}) for _ in range(2)]
    assert np.array_equal(runs[0].item_draws()["a"], runs[1].item_draws()["a"])


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"model": "2pl", "data": np.array([[0.0, 0.5], [1.0, 0.2]])},
     r"needs 0/1 responses but found values 0\.2, 0\.5.*continuous model"),
    ({"model": "beta", "data": np.array([[0.0, 50.0], [1.0, 0.2]])},
     r"needs scores in \[0, 1\] but found 50"),
    ({"model": "irt9", "data": np.zeros((2, 2))}, r"unknown IRT model 'irt9'"),
    ({"model": "beta3", "data": np.full((2, 3), 0.5), "dims": 2}, r"one latent dimension"),
    ({"model": "beta", "data": np.full((2, 3), 0.5), "method": "mml"},
     r"'mml' supports the 1-D binary models"),
    ({"model": "2pl", "data": np.zeros((2, 3)), "method": "nuts",
      "settings": {"batch_size": 1}}, r"method 'nuts' has no settings \['batch_size'\]"),
    ({"model": "2pl", "data": np.zeros((2, 3)), "method": "svi",
      "settings": {"guide": "lowrank", "batch_size": 1}}, r"'lowrank' guide cannot be minibatched"),
    ({"model": "2pl", "data": np.zeros((2, 3)), "method": "map",
      "settings": {"num_steps": 0}}, r"num_steps must be a positive integer"),
    ({"model": "2pl", "data": np.zeros((2, 3)), "dims": 4}, r"dims=4 exceeds"),
    ({"model": "2pl", "data": np.zeros((2, 3)), "method": "bfgs"}, r"unknown method 'bfgs'"),
    ({"model": "2pl", "data": np.zeros((1, 3))}, r"at least 2 models"),
    ({"model": "2pl", "data": np.zeros(3)}, r"must be 2-D"),
])
def test_bad_input_raises_one_line(kwargs, message) -> None:
    with pytest.raises(ValidationError, match=message) as info:
        fit(show_progress=False, **kwargs)
    assert "\n" not in str(info.value)


def test_items_without_variation_warn_once_listing_them() -> None:
    y = (np.random.default_rng(11).random((12, 5)) < 0.5).astype(float)
    y[:, 1] = 1.0
    y[:, 3] = 0.0
    with pytest.warns(UserWarning, match=r"2 items .*item1, item3") as record:
        fit("2pl", y, method="map", show_progress=False, settings={"num_steps": 20, "num_draws": 1})
    assert sum("every model" in str(w.message) for w in record) == 1


@pytest.mark.parametrize(("model", "dims", "priors", "shape"), [
    ("2pl", 2, "hierarchical", (6, 9)), ("lego", 1, "weak", (5, 8)),
    pytest.param("beta3", 1, "weak", (6, 4), marks=pytest.mark.slow),
    pytest.param("3pl", 1, "weak", (9, 3), marks=pytest.mark.slow),
])
def test_structured_laplace_hessian_equals_dense_hessian(model, dims, priors, shape) -> None:

    import jax
    import jax.numpy as jnp
    from jax.flatten_util import ravel_pytree
    from numpyro.infer.util import potential_energy

    from coreval.irt.inference.map import _structured_hessian
    from coreval.irt.inference.programs import _init_strategy, _Spec, _unconstrained_init

    rng = np.random.default_rng(12)
    binary = model in ("2pl", "3pl")
    values = (rng.random(shape) < 0.5).astype(np.float32)
    y = jnp.asarray(values if binary else 0.05 + 0.9 * values)
    mask = jnp.asarray(rng.random(shape) < 0.8)
    spec = _Spec(model, shape[0], shape[1], dims, priors, None)
    fn = spec.model_fn(batch=False)
    z0 = _unconstrained_init(fn, _init_strategy({}), jax.random.PRNGKey(1), y, mask)
    flat, unravel = ravel_pytree(z0)

    def loss(f):
        return potential_energy(fn, (y, mask), {}, unravel(f))

    dense = np.asarray(jax.jit(jax.hessian(loss))(flat))
    structured = _structured_hessian(spec, z0, y, mask)
    np.testing.assert_allclose(structured, dense, atol=1e-4 * np.abs(dense).max())


def test_custom_numpyro_model_is_accepted() -> None:
    from coreval.irt.models import twopl

    def my_2pl(y, mask, *, n_models, n_items, dims, priors, batch_size):
        twopl(y, mask, n_models=n_models, n_items=n_items, dims=dims, priors=priors,
              batch_size=batch_size)

    my_2pl.irt_kind = "2pl"
    y = _data_with_missing("2pl")
    result = fit(my_2pl, y, method="map", show_progress=False, settings={"num_steps": 100, "num_draws": 1})
    assert result.model == "my_2pl" and result.link == "2pl"
    _check_result(result, y, "map")
    assert result.predict_mean(np.zeros((1, 1))).shape == (1, y.shape[1])


def test_map_reports_abilities_collapsed_at_the_joint_mode():
    # one shared slope: the N(0, 1) ability priors pull the scale down (a 9.98, sd 0.12),
    # which marginal ML does not (a 1.09); the 2PL's mode keeps sd ~0.44
    m = simulate(150, 30, seed=1).matrix
    with pytest.warns(UserWarning, match="shrunk the abilities"):
        one = fit("1pl", m, method="map")
    assert np.std(one.abilities()) < 0.25
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        two = fit("2pl", m, method="map")
    assert np.std(two.abilities()) > 0.25
