"""IRT models as plain NumPyro functions (slope-intercept parameterisation).

Every model shares one linear predictor ``z[m, i] = theta[m] . a[i] + d[i]``
(ability ``theta_m ~ N(0, I)``, discrimination ``a_i``, intercept ``d_i``;
difficulty ``b_i = -d_i / a_i`` for D = 1) and differs in the response
distribution (see ``irt_models.md``, the mRMR paper appendix G.2):

========  =====================================================================
``1pl``   Bernoulli(sigmoid(z)), one shared discrimination (Rasch + latent variance)
``2pl``   Bernoulli(sigmoid(z))
``3pl``   Bernoulli(c + (1 - c) sigmoid(z)), guessing ``c_i ~ Beta(1, 4)``
``beta``  Beta-IRT (Noel & Dauvier 2007): ``mu = exp(z / 2)``,
          ``Y ~ Beta(mu + 1e-6, 1/mu + 1e-6)``, so ``E[Y] = sigmoid(z)``
``lego``  LEGO-IRT (Liao et al. 2025): ``logit(Y) ~ N(z, sigma_m)``,
          ``sigma_m ~ HalfNormal(1)`` per model
``hetero`` heteroskedastic Gaussian IRT (Balkır et al. 2026): ``mu = sigmoid(z)``,
          ``Y ~ N(mu, sqrt(k_m mu (1 - mu) + 1e-8))``, ``k_m ~ Gamma(2, 2)``
``beta3`` β³-IRT (Chen et al. 2019): ability ``θ01_m ~ Beta(1, 1)``, difficulty
          ``δ_i ~ Beta(1, 1)``, discrimination ``a_i ~ N(1, 1)``;
          ``log A = a (ln θ01 - ln δ)``, ``log B = a (ln(1-θ01) - ln(1-δ))``,
          ``Y ~ Beta(exp(clip(log A)) + 1e-6, exp(clip(log B)) + 1e-6)``.
          coreval reports ``theta = logit(θ01)``, ``b = logit(δ)``,
          ``d = -a b`` so that ``E[Y] ≈ sigmoid(a theta + d)`` as for the others.
========  =====================================================================

The paper indexes the β³ ability/difficulty the other way round (its ``θ_i`` is
the item); coreval keeps the ability on models and the difficulty on items.

Missing responses: every model takes the filled response matrix ``y`` and a
boolean ``mask`` (True = observed); the likelihood is
``dist.mask(mask)``-ed, so unobserved entries contribute nothing. The items
axis is an event dimension of the per-model likelihood, which lets the
``models`` plate be subsampled (``batch_size``) for minibatch SVI.

Continuous models need scores strictly inside (0, 1) (Beta, LEGO, β³):
:func:`coreval.irt.inference.fit` clips to ``[eps, 1 - eps]`` (``eps = 1e-3``).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
from numpyro.distributions.transforms import SigmoidTransform

from coreval.irt import priors as _priors
from coreval.irt.spec import IRTModel, get_spec, register_model

BETA_EPS = 1e-6
HETERO_EPS = 1e-8
BETA3_CLIP = 15.0


def linear_predictor(theta: jnp.ndarray, a: jnp.ndarray, d: jnp.ndarray) -> jnp.ndarray:
    """``z = theta @ a.T + d``: (n_models, D) × (n_items, D) → (n_models, n_items)."""
    return theta @ a.T + d


def response_dist(model: str, theta: jnp.ndarray, params: dict[str, jnp.ndarray]
                  ) -> dist.Distribution:
    """Distribution of the responses of models ``theta`` (n, D) to items ``params``.

    Parameters
    ----------
    model : str
        A registered model (:func:`coreval.irt.spec.get_spec`).
    theta : array (n, D)
        Abilities.
    params : dict
        ``a`` (n_items, D), ``d`` (n_items,), plus ``c`` (3PL), ``b`` (β³, logit of
        the difficulty δ), ``sigma`` (LEGO) or ``k`` (hetero), the last two of shape (n,).

    Returns
    -------
    numpyro Distribution with batch shape (n, n_items).
    """
    return get_spec(model).response(theta, params)


def mean_response(model: str, theta: jnp.ndarray, params: dict[str, jnp.ndarray]) -> jnp.ndarray:
    """Expected score ``E[Y]`` (n, n_items) at abilities ``theta`` (n, D) under ``model``."""
    return get_spec(model).mean(jnp.asarray(theta), params)


# ------------------------------------------------------------ response distributions
def bernoulli_logit(theta, params) -> dist.Distribution:
    """1PL / 2PL: ``Bernoulli(sigmoid(theta·a + d))``."""
    return dist.Bernoulli(logits=linear_predictor(theta, params["a"], params["d"]))


def bernoulli_guessing(theta, params) -> dist.Distribution:
    """3PL: ``Bernoulli(c + (1 - c) sigmoid(theta·a + d))``."""
    z = linear_predictor(theta, params["a"], params["d"])
    c = params["c"]
    return dist.Bernoulli(probs=jnp.clip(c + (1.0 - c) * jax.nn.sigmoid(z), 1e-7, 1 - 1e-7))


def beta_response(theta, params) -> dist.Distribution:
    """Beta-IRT (Noel & Dauvier 2007): ``mu = exp(z/2)``, ``Beta(mu, 1/mu)`` has mean sigmoid(z)."""
    z = linear_predictor(theta, params["a"], params["d"])
    mu = jnp.exp(jnp.clip(z, -30.0, 30.0) / 2.0)
    return dist.Beta(mu + BETA_EPS, 1.0 / mu + BETA_EPS)


def lego_response(theta, params) -> dist.Distribution:
    """LEGO-IRT: ``logit(Y) ~ N(z, sigma_m)`` (logit-normal ``Y``)."""
    z = linear_predictor(theta, params["a"], params["d"])
    sigma = params["sigma"][:, None]
    return dist.TransformedDistribution(dist.Normal(z, sigma), SigmoidTransform())


def hetero_response(theta, params) -> dist.Distribution:
    """Heteroskedastic Gaussian IRT: ``Y ~ N(mu, sqrt(k_m mu (1 - mu) + 1e-8))``."""
    mu = jax.nn.sigmoid(linear_predictor(theta, params["a"], params["d"]))
    k = params["k"][:, None]
    return dist.Normal(mu, jnp.sqrt(k * mu * (1.0 - mu) + HETERO_EPS))


def beta3_response(theta, params) -> dist.Distribution:
    """β³-IRT, Chen et al. (2019) eq. (2)-(3) with ln θ01 = log_sigmoid(theta), ln δ = log_sigmoid(b)."""
    b = params["b"]
    slope = params["a"][:, 0]
    log_a = slope * (jax.nn.log_sigmoid(theta) - jax.nn.log_sigmoid(b))
    log_b = slope * (jax.nn.log_sigmoid(-theta) - jax.nn.log_sigmoid(-b))
    conc1 = jnp.exp(jnp.clip(log_a, -BETA3_CLIP, BETA3_CLIP)) + BETA_EPS
    conc0 = jnp.exp(jnp.clip(log_b, -BETA3_CLIP, BETA3_CLIP)) + BETA_EPS
    return dist.Beta(conc1, conc0)


# ----------------------------------------------------------------------- mean functions
_GH_NODES, _GH_WEIGHTS = np.polynomial.hermite_e.hermegauss(32)
_GH_WEIGHTS = _GH_WEIGHTS / _GH_WEIGHTS.sum()


def sigmoid_mean(theta, params) -> jnp.ndarray:
    """``sigmoid(theta·a + d)`` (1PL, 2PL, Beta, hetero)."""
    return jax.nn.sigmoid(linear_predictor(theta, jnp.asarray(params["a"]),
                                           jnp.asarray(params["d"])))


def guessing_mean(theta, params) -> jnp.ndarray:
    """``c + (1 - c) sigmoid(theta·a + d)`` (3PL)."""
    c = jnp.asarray(params["c"])
    return c + (1.0 - c) * sigmoid_mean(theta, params)


def lego_mean(theta, params) -> jnp.ndarray:
    """The logit-normal mean ``E[sigmoid(N(z, sigma))]`` by 32-point Gauss–Hermite quadrature."""
    z = linear_predictor(theta, jnp.asarray(params["a"]), jnp.asarray(params["d"]))
    sigma = jnp.asarray(params["sigma"]).reshape(-1, 1, 1) * jnp.ones((theta.shape[0], 1, 1))
    nodes = jnp.asarray(_GH_NODES, dtype=z.dtype)
    vals = jax.nn.sigmoid(z[..., None] + sigma * nodes)
    return vals @ jnp.asarray(_GH_WEIGHTS, dtype=z.dtype)


def beta3_mean(theta, params) -> jnp.ndarray:
    """``sigmoid(a (theta - b))`` (β³ exactly when no clipping is active)."""
    a = jnp.asarray(params["a"])
    return jax.nn.sigmoid(a[:, 0] * (theta - jnp.asarray(params["b"])))


# ----------------------------------------------------------------------------- models
def _likelihood(model: str, y, mask, theta, params, idx, batch_size) -> None:
    if batch_size is not None:
        y, mask = y[idx], mask[idx]
    numpyro.sample("y", response_dist(model, theta, params).mask(mask).to_event(1), obs=y)


def _item_block(model: str, n_items: int, dims: int, priors: str) -> dict[str, jnp.ndarray]:
    a = _priors.discrimination(n_items, dims, priors, shared=model == "1pl")
    d = _priors.intercept(n_items, priors)
    params = {"a": a, "d": d}
    if model == "3pl":
        params["c"] = _priors.guessing(n_items, priors)
    return params


def _ability() -> Callable[[int], jnp.ndarray]:
    return lambda dims: numpyro.sample("theta", dist.Normal(0.0, 1.0).expand([dims]).to_event(1))


def twopl(y: jnp.ndarray, mask: jnp.ndarray, *, n_models: int, n_items: int, dims: int = 1,
          priors: str = "weak", guessing: bool = False, one_pl: bool = False,
          batch_size: int | None = None) -> None:
    """Binary (multidimensional) 2PL; ``guessing=True`` gives the 3PL, ``one_pl`` the 1PL.

    Parameters
    ----------
    y : array (n_models, n_items)
        0/1 responses (any filler value where ``mask`` is False).
    mask : bool array (n_models, n_items)
        True where observed.
    n_models, n_items, dims : int
        Sizes; ``dims`` is the latent dimension D.
    priors : {"weak", "hierarchical", "signed"}
        See :mod:`coreval.irt.priors`.
    guessing, one_pl : bool
        3PL lower asymptote; single shared discrimination (D = 1).
    batch_size : int, optional
        Subsample this many models per step (minibatch SVI).

    References
    ----------
    Birnbaum (1968); Reckase (2009) *Multidimensional Item Response Theory*;
    mRMR paper appendix G.2 (hierarchical priors).
    """
    name = "1pl" if one_pl else ("3pl" if guessing else "2pl")
    params = _item_block(name, n_items, dims, priors)
    with numpyro.plate("models", n_models, subsample_size=batch_size) as idx:
        theta = _ability()(dims)
        _likelihood(name, y, mask, theta, params, idx, batch_size)


def _continuous(name: str, y, mask, *, n_models: int, n_items: int, dims: int, priors: str,
                batch_size: int | None) -> None:
    params = _item_block(name, n_items, dims, priors)
    with numpyro.plate("models", n_models, subsample_size=batch_size) as idx:
        theta = _ability()(dims)
        if name == "lego":
            params["sigma"] = numpyro.sample("sigma", dist.HalfNormal(1.0))
        elif name == "hetero":
            params["k"] = numpyro.sample("k", dist.Gamma(2.0, 2.0))
        _likelihood(name, y, mask, theta, params, idx, batch_size)


def beta_irt(y: jnp.ndarray, mask: jnp.ndarray, *, n_models: int, n_items: int, dims: int = 1,
             priors: str = "weak", batch_size: int | None = None) -> None:
    """Beta-IRT for scores in (0, 1): ``Y ~ Beta(exp(z/2) + 1e-6, exp(-z/2) + 1e-6)``.

    References
    ----------
    Noel, Y. & Dauvier, B. (2007). A beta item response model for continuous bounded
    responses. *Applied Psychological Measurement* 31(1). mRMR paper appendix G.2.
    """
    _continuous("beta", y, mask, n_models=n_models, n_items=n_items, dims=dims, priors=priors,
                batch_size=batch_size)


def lego_irt(y: jnp.ndarray, mask: jnp.ndarray, *, n_models: int, n_items: int, dims: int = 1,
             priors: str = "weak", batch_size: int | None = None) -> None:
    """LEGO-IRT: ``logit(Y) ~ N(z, sigma_m)``, ``sigma_m ~ HalfNormal(1)`` (logit-normal Y).

    The likelihood is that of ``Y`` (it includes the Jacobian of the logit), so
    log-likelihoods are comparable with the other continuous models.

    References
    ----------
    Liao et al. (2025), LEGO-IRT; mRMR paper appendix G.2.
    """
    _continuous("lego", y, mask, n_models=n_models, n_items=n_items, dims=dims, priors=priors,
                batch_size=batch_size)


def hetero_gaussian_irt(y: jnp.ndarray, mask: jnp.ndarray, *, n_models: int, n_items: int,
                        dims: int = 1, priors: str = "weak", batch_size: int | None = None) -> None:
    """Heteroskedastic Gaussian IRT: ``Y ~ N(mu, sqrt(k_m mu (1 - mu) + 1e-8))``.

    ``mu = sigmoid(z)``.

    ``k_m ~ Gamma(2, 2)`` per model. The paper's ``sigmoid(theta_i - beta_m)`` is
    generalised to the shared slope-intercept predictor ``z = a theta + d``.

    References
    ----------
    Balkır et al. (2026); mRMR paper appendix G.2.
    """
    _continuous("hetero", y, mask, n_models=n_models, n_items=n_items, dims=dims, priors=priors,
                batch_size=batch_size)


def beta3_irt(y: jnp.ndarray, mask: jnp.ndarray, *, n_models: int, n_items: int, dims: int = 1,
              priors: str = "weak", batch_size: int | None = None) -> None:
    """β³-IRT (D = 1): Beta responses with Beta(1, 1) ability and difficulty.

    Its priors are fixed by the paper (``priors`` is ignored apart from validation
    in :func:`coreval.irt.fit`). Sites: ``theta01`` (ability in (0, 1)), ``delta``
    (difficulty in (0, 1)), ``a`` (discrimination ~ N(1, 1)); deterministic
    ``theta = logit(theta01)``, ``b = logit(delta)``, ``d = -a b``.

    References
    ----------
    Chen, Silva Filho, Prudêncio, Diethe & Flach (2019). β³-IRT: A New Item Response
    Model and its Applications. AISTATS. mRMR paper appendix G.2.
    """
    with numpyro.plate("items", n_items):
        a = numpyro.sample("a", dist.Normal(1.0, 1.0).expand([1]).to_event(1))
        delta = numpyro.sample("delta", dist.Beta(1.0, 1.0))
    b = numpyro.deterministic("b", jax.scipy.special.logit(delta))
    d = numpyro.deterministic("d", -a[:, 0] * b)
    with numpyro.plate("models", n_models, subsample_size=batch_size) as idx:
        theta01 = numpyro.sample("theta01", dist.Beta(1.0, 1.0))
        theta = numpyro.deterministic("theta", jax.scipy.special.logit(theta01)[:, None])
        _likelihood("beta3", y, mask, theta, {"a": a, "d": d, "b": b}, idx, batch_size)


def get_model(name: str) -> Callable[..., None]:
    """The NumPyro model function of a registered model."""
    return get_spec(name).numpyro_fn


def log_prior_theta(model: str, theta: jnp.ndarray) -> jnp.ndarray:
    """Log prior density of abilities ``theta`` (..., D) under ``model``'s ability prior."""
    return get_spec(model).log_prior_theta(theta)


def normal_log_prior(theta: jnp.ndarray) -> jnp.ndarray:
    """N(0, I) abilities."""
    return jnp.sum(dist.Normal(0.0, 1.0).log_prob(theta), axis=-1)


def logistic_log_prior(theta: jnp.ndarray) -> jnp.ndarray:
    """``theta = logit(theta01)`` with ``theta01 ~ Beta(1, 1)``: the standard logistic density."""
    return jnp.sum(jax.nn.log_sigmoid(theta) + jax.nn.log_sigmoid(-theta), axis=-1)


def beta3_init(theta0: np.ndarray, col: np.ndarray, dims: int) -> dict[str, np.ndarray]:
    """β³ starting values: ``theta01 = sigmoid(theta0)``, ``delta = 1 - column mean``."""
    theta01 = np.clip(1 / (1 + np.exp(-theta0)), 0.05, 0.95)
    return {"theta01": theta01.astype(np.float32),
            "delta": np.clip(1.0 - col, 0.05, 0.95).astype(np.float32)}


# ------------------------------------------------------------------------ the registry
def _normal() -> dist.Distribution:
    return dist.Normal(0.0, 1.0)


def _logistic() -> dist.Distribution:
    return dist.Logistic(0.0, 1.0)


_COMMON = {"log_prior_theta": normal_log_prior, "ability_prior": _normal}
for _spec in (
    IRTModel("1pl", partial(twopl, one_pl=True), bernoulli_logit, sigmoid_mean, "binary",
             logistic=True, one_dim=True, mml="1pl", **_COMMON),
    IRTModel("2pl", twopl, bernoulli_logit, sigmoid_mean, "binary", logistic=True, mml="2pl",
             **_COMMON),
    IRTModel("3pl", partial(twopl, guessing=True), bernoulli_guessing, guessing_mean, "binary",
             logistic=True, mml="3pl", **_COMMON),
    IRTModel("beta", beta_irt, beta_response, sigmoid_mean, "unit", clip=True, **_COMMON),
    IRTModel("lego", lego_irt, lego_response, lego_mean, "unit", clip=True, nuisance="sigma",
             **_COMMON),
    IRTModel("hetero", hetero_gaussian_irt, hetero_response, sigmoid_mean, "real",
             nuisance="k", **_COMMON),
    IRTModel("beta3", beta3_irt, beta3_response, beta3_mean, "unit", clip=True, one_dim=True,
             fixed_priors=True, log_prior_theta=logistic_log_prior, ability_prior=_logistic,
             init=beta3_init),
):
    register_model(_spec, replace=True)

#: The built-in models (:func:`coreval.irt.spec.model_names` lists every registered one).
MODELS: tuple[str, ...] = ("1pl", "2pl", "3pl", "beta", "lego", "hetero", "beta3")
#: The built-in models for 0/1 responses.
BINARY_MODELS: frozenset[str] = frozenset({"1pl", "2pl", "3pl"})
