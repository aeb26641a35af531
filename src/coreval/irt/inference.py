"""Fitting IRT models: MAP (+ Laplace), SVI, NUTS and MML, returning an :class:`IRTFit`.

All paths share the NumPyro models of :mod:`coreval.irt.models` and produce an
ArviZ ``InferenceData`` with the same groups, built with ``az.dict_to_dataset``
(rather than ``az.from_numpyro``, whose log-likelihood would count masked-out
entries as observations and whose observed data would show the filler values):

* ``posterior``: latent and deterministic sites (``a``, ``d``, ``b`` (D = 1),
  ``c``, ``theta``, ``sigma``/``k``, hyper-parameters), chain × draw;
* ``log_likelihood``: ``y`` pointwise over the observed entries (dim ``obs``)
  for LOO/WAIC; thinned to at most :data:`LOGLIK_CAP` numbers;
* ``observed_data``: ``y`` (model, item) with NaN where unobserved;
* ``constant_data``: ``obs_model``, ``obs_item`` (positions of each ``obs``);
* ``sample_stats``: ``loglik_total`` per draw; NUTS adds ``diverging`` and ``lp``.
"""

from __future__ import annotations

import datetime as _dt
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer import MCMC, NUTS, SVI
from numpyro.infer.autoguide import AutoDelta, AutoLowRankMultivariateNormal, AutoNormal
from numpyro.infer.initialization import init_to_uniform
from numpyro.infer.util import constrain_fn, potential_energy

from coreval._progress import progress_bar, progress_enabled
from coreval.errors import ValidationError
from coreval.irt import models as _models
from coreval.irt._data import IRTData, initial_values, prepare
from coreval.irt._device import JIT_OPTIONS, host_rng, prng_key, to_device, wrap_key
from coreval.irt.elbo import OrderedTraceELBO
from coreval.irt.priors import PRIORS
from coreval.irt.result import IRTFit
from coreval.irt.spec import get_spec, model_names

METHODS: tuple[str, ...] = ("map", "svi", "nuts", "mml")
GUIDES: tuple[str, ...] = ("normal", "lowrank")
#: Largest number of draws × observed entries stored in the pointwise log-likelihood.
LOGLIK_CAP = 25_000_000
#: MAP: largest number of unconstrained parameters for the (dense) Laplace approximation.
LAPLACE_MAX_PARAMS = 5000
#: Laplace: floor of the Hessian eigenvalues (an unconverged MAP can have flat or negative
#: curvature); 0.01 is the curvature of the weakest prior, mu ~ N(0, 10).
LAPLACE_MIN_PRECISION = 0.01
#: Optimisation steps run inside one compiled ``lax.scan`` between progress updates.
CHUNK = 100
RHAT_WARN = 1.01

_DIMS = {
    "theta": ("model", "dim"), "a": ("item", "dim"), "a_load": ("item", "dim"),
    "a_diag": ("dim",), "d": ("item",), "b": ("item",), "c": ("item",), "delta": ("item",),
    "theta01": ("model",), "sigma": ("model",), "k": ("model",), "mu_a": ("dim",),
    "u_a": ("dim",),
}


def fit(model: str | Callable[..., None] = "2pl", data=None, *, method: str = "map",
        dims: int = 1, priors: str = "weak", num_steps: int = 2000,
        learning_rate: float = 0.05, guide: str = "normal", batch_size: int | None = None,
        num_warmup: int = 500, num_samples: int = 500, num_chains: int = 2,
        num_draws: int = 200, seed: int = 0, show_progress: bool | None = None) -> IRTFit:
    """Fit an IRT model to a score matrix.

    Parameters
    ----------
    model : str or callable
        One of ``"1pl", "2pl", "3pl", "beta", "lego", "hetero", "beta3"`` (see
        :mod:`coreval.irt.models`), or a NumPyro model with the signature
        ``f(y, mask, *, n_models, n_items, dims, priors, batch_size)`` that defines
        sites ``theta`` (n_models, D), ``a`` (n_items, D) and ``d`` (n_items,). A
        custom model's response distribution for prediction/scoring is taken from
        its attribute ``irt_kind`` (default ``"2pl"``).
    data : ScoreMatrix or ndarray (n_models, n_items)
        Scores, NaN = unobserved (masked out of the likelihood).
    method : {"map", "svi", "nuts", "mml"}
        ``"map"``: posterior mode by Adam on the log density in unconstrained space,
        then ``num_draws`` draws from a Laplace approximation ``N(mode, H^-1)`` with the
        exact Hessian (built from a few Hessian-vector products, see
        ``_structured_hessian``) when there are at most 5000 parameters; else the point
        estimate only. With ``batch_size`` it is a minibatch ``AutoDelta`` fit (point
        estimate).
        ``"svi"``: stochastic variational inference with an ``AutoNormal`` (or
        ``AutoLowRankMultivariateNormal``) guide; ``num_draws`` guide draws.
        ``"nuts"``: NumPyro NUTS, ``num_chains`` chains run sequentially.
        ``"mml"``: marginal maximum likelihood (:func:`coreval.irt.mml.fit_mml`,
        1-D binary models only), the estimate as one draw and standard errors.
    dims : int
        Latent dimension D (rotation fixed as documented in :mod:`coreval.irt.priors`).
    priors : {"weak", "hierarchical"}
        Prior family (mRMR paper appendix G.2 for ``"hierarchical"``).
    num_steps, learning_rate : int, float
        Adam steps and learning rate (MAP and SVI).
    guide : {"normal", "lowrank"}
        SVI guide.
    batch_size : int, optional
        SVI/MAP minibatch size over models (rows), via ``numpyro.plate(subsample_size=)``.
    num_warmup, num_samples, num_chains : int
        NUTS settings.
    num_draws : int
        Posterior draws stored for MAP (Laplace) and SVI.
    seed : int
        Seed of every random choice (same seed, same numbers on the same JAX
        version and backend; the fit's random numbers come from JAX's
        ``unsafe_rbg`` keys, see :mod:`coreval.irt._device`).
    show_progress : bool, optional
        Progress bars (default: ``COREVAL_PROGRESS`` environment variable).

    Returns
    -------
    IRTFit
        For MAP and SVI its InferenceData also has a ``point_estimate`` group (the
        posterior mode, or the guide's median), which :meth:`IRTFit.item_point` returns.

    References
    ----------
    Hoffman & Gelman (2014), NUTS; Kingma & Welling (2014) / Hoffman et al. (2013), SVI;
    Bock & Aitkin (1981), MML; mRMR paper appendix G.2 (models and priors).
    """
    name, model_fn, link = _resolve_model(model)
    _check_options(name, link, method, dims, priors, guide, num_steps, num_draws, num_warmup,
                   num_samples, num_chains, learning_rate)
    irt_data = prepare(data, link)
    n_models, n_items = irt_data.shape
    if dims > n_items:
        raise ValidationError(f"dims={dims} exceeds the number of items ({n_items})")
    if batch_size is not None:
        if int(batch_size) < 1:
            raise ValidationError(f"batch_size must be a positive integer, got {batch_size}")
        if method in ("nuts", "mml"):
            raise ValidationError(f"batch_size (minibatching) is for 'svi'/'map', not {method!r}")
        if method == "svi" and guide == "lowrank":
            raise ValidationError("the 'lowrank' guide cannot be minibatched; use guide='normal'")
        batch_size = None if int(batch_size) >= n_models else int(batch_size)
    if method == "mml":
        return _fit_mml(irt_data, name, show_progress)

    spec = _Spec(name if name in model_names() else model_fn, n_models, n_items, dims, priors,
                 batch_size)
    y, mask = to_device(irt_data.y), to_device(irt_data.mask)
    init = initial_values(irt_data, link, dims) if name in model_names() else {}
    init = {k: to_device(v) for k, v in init.items()}
    rng = prng_key(seed)
    show = progress_enabled(show_progress)
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ee]xplicit.*")
        point, stats = None, {}
        if method == "nuts":
            samples, stats, diag = _run_nuts(spec.model_fn(batch=False), y, mask,
                                             _init_strategy(init), rng, num_warmup,
                                             num_samples, num_chains, show)
        elif method == "svi" or batch_size is not None:
            samples, point, diag = _run_svi(spec, y, mask, init, rng, method, guide, num_steps,
                                            float(learning_rate), num_draws, show)
        else:
            samples, point, diag = _run_map(spec, y, mask, init, rng, num_steps,
                                            float(learning_rate), num_draws, show)
    samples = _with_difficulty({k: np.asarray(v) for k, v in samples.items() if k != "y"}, dims)
    if point is not None:
        point = _with_difficulty({k: np.asarray(v) for k, v in point.items() if k in _DIMS},
                                 dims)
    diag["seconds"] = time.perf_counter() - start
    idata, ll_note = _to_idata(samples, stats, irt_data, link, dims, point=point)
    if ll_note:
        diag["log_likelihood"] = ll_note
    if method == "nuts":
        diag.update(_nuts_diagnostics(idata))
    card = _card(name, method, dims, priors, irt_data, diag, link,
                 dict(num_steps=num_steps, learning_rate=learning_rate, guide=guide,
                      batch_size=batch_size, num_warmup=num_warmup, num_samples=num_samples,
                      num_chains=num_chains, num_draws=num_draws, seed=seed))
    return IRTFit(model=name, method=method, dims=dims, priors=priors, idata=idata, card=card)


def _with_difficulty(values: dict[str, np.ndarray], dims: int) -> dict[str, np.ndarray]:
    """Add the difficulty ``b = -d / a`` (D = 1) to draws or a point estimate without it."""
    if "b" not in values and dims == 1 and "a" in values and "d" in values:
        values = dict(values, b=-values["d"] / values["a"][..., 0])
    return values


# ----------------------------------------------------------------------------- checks
def _resolve_model(model) -> tuple[str, Callable[..., None], str]:
    """``(name, NumPyro function, link)``; the link names the registered spec whose
    response distribution, checks and scoring the fit uses."""
    if callable(model):
        link = getattr(model, "irt_kind", "2pl")
        if link not in model_names():
            raise ValidationError(f"custom model's irt_kind {link!r} is not one of "
                                  f"{', '.join(model_names())}")
        return getattr(model, "__name__", "custom"), model, link
    spec = get_spec(model)
    return spec.name, spec.numpyro_fn, spec.name


def _check_options(name, link, method, dims, priors, guide, num_steps, num_draws, num_warmup,
                   num_samples, num_chains, learning_rate) -> None:
    if method not in METHODS:
        raise ValidationError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if priors not in PRIORS:
        raise ValidationError(f"unknown priors {priors!r}; choose one of {', '.join(PRIORS)}")
    if guide not in GUIDES:
        raise ValidationError(f"unknown guide {guide!r}; choose one of {', '.join(GUIDES)}")
    if not isinstance(dims, (int, np.integer)) or dims < 1:
        raise ValidationError(f"dims must be a positive integer, got {dims!r}")
    spec = get_spec(link)
    if spec.one_dim and dims != 1:
        raise ValidationError(f"model {name!r} has one latent dimension; got dims={dims}")
    if name == link and spec.fixed_priors and priors != "weak":
        raise ValidationError(f"the {name} model has fixed priors; use priors='weak'")
    for label, value in (("num_steps", num_steps), ("num_draws", num_draws),
                         ("num_samples", num_samples), ("num_chains", num_chains)):
        if int(value) < 1:
            raise ValidationError(f"{label} must be at least 1, got {value}")
    if int(num_warmup) < 0:
        raise ValidationError(f"num_warmup must be non-negative, got {num_warmup}")
    if not learning_rate > 0:
        raise ValidationError(f"learning_rate must be positive, got {learning_rate}")
    if method == "mml":
        if name != link or spec.mml is None:
            with_mml = [m for m in model_names() if get_spec(m).mml is not None]
            raise ValidationError(f"method 'mml' supports the 1-D binary models "
                                  f"{', '.join(with_mml)}, not {name!r}")
        if dims != 1:
            raise ValidationError(f"method 'mml' supports dims=1 only, got dims={dims}")


def _init_strategy(values: dict[str, np.ndarray], site=None, radius: float = 0.5):
    """Start at ``values`` where given, else uniform in (-0.5, 0.5) in unconstrained space.

    numpyro's ``init_to_value`` falls back to radius 2, which starts discriminations
    anywhere in (0.14, 7.4); the narrower radius starts them near 1.
    """
    if site is None:
        return partial(_init_strategy, values, radius=radius)
    if site["type"] == "sample" and not site["is_observed"] and site["name"] in values:
        return jnp.asarray(values[site["name"]])
    return init_to_uniform(site, radius=radius)


# ---------------------------------------------------------------------- optimisation
@dataclass(frozen=True)
class _Spec:
    """What shapes the compiled programs; hashable, so it is the key of JAX's jit cache.

    Compiling dominates small fits on CPU. Module-level jitted functions keyed by
    this spec let repeated fits of the same model and shape (e.g. one per seed or
    cross-validation fold) reuse the compiled programs.
    """

    model: str | Callable[..., None]
    n_models: int
    n_items: int
    dims: int
    priors: str
    batch_size: int | None

    def model_fn(self, batch: bool = True) -> Callable[..., None]:
        base = _models.get_model(self.model) if isinstance(self.model, str) else self.model
        return partial(base, n_models=self.n_models, n_items=self.n_items, dims=self.dims,
                       priors=self.priors, batch_size=self.batch_size if batch else None)


def _optimise(chunk: Callable, carry: Any, num_steps: int, show: bool,
              desc: str) -> tuple[Any, np.ndarray]:
    """Run ``num_steps`` optimisation steps as compiled chunks ``chunk(carry, length)``.

    Each chunk of up to :data:`CHUNK` steps is one compiled ``fori_loop`` whose trip
    count is a runtime value (so any ``num_steps`` compiles once); the progress bar
    advances between chunks. ``chunk(carry, length, done)`` is also told how many
    steps are done before it.
    """
    losses = []
    bar = progress_bar(total=num_steps, desc=desc, show=show)
    done = 0
    while done < num_steps:
        length = min(CHUNK, num_steps - done)
        carry, chunk_losses = chunk(carry, length, done)
        losses.append(np.asarray(chunk_losses)[:length])
        done += length
        bar.update(length)
    bar.close()
    loss = np.concatenate(losses)
    if not np.isfinite(loss[-1]):
        raise ValidationError(
            f"{desc} diverged (loss {loss[-1]}); lower learning_rate or check the data")
    return carry, loss


def _loss_summary(loss: np.ndarray) -> dict[str, Any]:
    tail = loss[-max(1, len(loss) // 10):]
    idx = np.unique(np.linspace(0, len(loss) - 1, min(len(loss), 200)).astype(int))
    return {"final_loss": float(np.mean(tail)), "steps": len(loss),
            "loss_trace": {"step": idx.tolist(), "loss": loss[idx].astype(float).tolist()}}


def _unconstrained_init(fn, init_strategy, key, y, mask) -> dict[str, jnp.ndarray]:
    """Initial values of the latent sites in unconstrained space (traced, so jittable)."""
    seeded = handlers.substitute(handlers.seed(fn, key), substitute_fn=init_strategy)
    tr = handlers.trace(seeded).get_trace(y, mask)
    return {name: biject_to(site["fn"].support).inv(site["value"])
            for name, site in tr.items()
            if site["type"] == "sample" and not site["is_observed"]}


# ------------------------------------------------------------------------------- MAP
@partial(jax.jit, static_argnums=(0, 1), **JIT_OPTIONS)
def _map_init(spec: _Spec, lr: float, rng, y, mask, init):
    """Initial unconstrained point, its Adam state and the (raw) key of the Laplace draws."""
    key_init, key_draw = jax.random.split(wrap_key(rng))
    z0 = _unconstrained_init(spec.model_fn(False), _init_strategy(init), key_init, y, mask)
    return (z0, optax.adam(lr).init(z0)), jax.random.key_data(key_draw)


@partial(jax.jit, static_argnums=(0, 1), **JIT_OPTIONS)
def _map_chunk(spec: _Spec, lr: float, carry, y, mask, length):
    """Up to CHUNK Adam steps on the potential energy (negative log joint, unconstrained)."""
    fn = spec.model_fn(False)
    opt = optax.adam(lr)

    def body(i, state):
        (z, opt_state), buf = state
        value, grad = jax.value_and_grad(
            lambda q: potential_energy(fn, (y, mask), {}, q))(z)
        updates, opt_state = opt.update(grad, opt_state, z)
        return (optax.apply_updates(z, updates), opt_state), buf.at[i].set(value)

    return jax.lax.fori_loop(0, length, body, (carry, jnp.zeros(CHUNK, jnp.float32)))


@partial(jax.jit, static_argnums=0, **JIT_OPTIONS)
def _map_constrain(spec: _Spec, z, draws, y, mask):
    """Constrained latent and deterministic sites for each flat unconstrained draw."""
    _, unravel = ravel_pytree(z)
    fn = spec.model_fn(False)
    return jax.lax.map(lambda f: constrain_fn(fn, (y, mask), {}, unravel(f),
                                              return_deterministic=True), draws, batch_size=8)


def _run_map(spec: _Spec, y, mask, init, rng, num_steps, lr, num_draws, show):
    """MAP in unconstrained space by Adam on the potential energy, then Laplace draws.

    The potential (negative log joint including the log-Jacobians of the
    constraining transforms) is that of NumPyro's HMC; the Laplace approximation
    is ``N(mode, H^-1)`` with the exact Hessian ``H`` at the mode.

    Returns the draws (with a leading chain axis), the mode (constrained, the
    fit's point estimate) and diagnostics.
    """
    carry, key_draw = _map_init(spec, lr, rng, y, mask, init)
    (z, _), loss = _optimise(lambda c, n, _done: _map_chunk(spec, lr, c, y, mask, n),
                             carry, num_steps, show, "IRT MAP")
    # ravel_pytree's order (dict leaves in key order), on the host: no compiled program.
    flat = np.concatenate([np.ravel(np.asarray(v)) for v in jax.tree_util.tree_leaves(z)])
    n_par = flat.size
    diag = _loss_summary(loss)
    diag["n_parameters"] = int(n_par)
    if num_draws > 1 and n_par <= LAPLACE_MAX_PARAMS:
        hess = _structured_hessian(spec, z, y, mask)
        evals, evecs = np.linalg.eigh(hess)
        if evals.min() <= 0:
            warnings.warn(f"Laplace approximation: Hessian not positive definite (smallest "
                          f"eigenvalue {evals.min():.3g}); eigenvalues below "
                          f"{LAPLACE_MIN_PRECISION} are raised to it. The MAP may not have "
                          "converged (raise num_steps).", stacklevel=3)
        evals = np.maximum(evals, LAPLACE_MIN_PRECISION)
        z_std = host_rng(key_draw).standard_normal((num_draws, n_par))
        draws = (flat[None, :] + (z_std / np.sqrt(evals)) @ evecs.T).astype(flat.dtype)
        diag["posterior"] = "laplace"
    else:
        draws = flat[None, :]
        diag["posterior"] = "point"
        if num_draws > 1:
            diag["note"] = (f"{n_par} parameters > {LAPLACE_MAX_PARAMS}: no Laplace draws, "
                            "point estimate only (use method='svi' for uncertainty)")
    # The mode is constrained together with the draws, as one more row (one program).
    rows = _map_constrain(spec, z, to_device(np.concatenate([draws, flat[None, :]])), y, mask)
    rows = {k: np.asarray(v) for k, v in rows.items()}
    return ({k: v[None, :-1] for k, v in rows.items()}, {k: v[-1] for k, v in rows.items()},
            diag)


ITEM_SITES = frozenset({"a", "a_load", "d", "c", "delta"})
MODEL_SITES = frozenset({"theta", "theta01", "sigma", "k"})


def _layout(z0: dict[str, jnp.ndarray], n_models: int, n_items: int):
    """Group (0 item, 1 model, 2 global), unit and slot of every flat parameter index.

    The order follows ``ravel_pytree`` (leaves of the dict in key order, C order
    within a leaf). A slot is one parameter position shared by every unit of a
    group (e.g. ``a[:, 0]``).
    """
    groups, units, slots = [], [], []
    n_slots = [0, 0]
    leaves = jax.tree_util.tree_flatten_with_path(z0)[0]
    for path, leaf in leaves:
        name = path[0].key
        size, shape = int(np.size(leaf)), np.shape(leaf)
        code = 2
        if name in ITEM_SITES and shape[:1] == (n_items,):
            code, n_units = 0, n_items
        elif name in MODEL_SITES and shape[:1] == (n_models,):
            code, n_units = 1, n_models
        groups.append(np.full(size, code))
        if code == 2:
            units.append(np.full(size, -1))
            slots.append(np.full(size, -1))
            continue
        per = size // n_units
        units.append(np.repeat(np.arange(n_units), per))
        slots.append(n_slots[code] + np.tile(np.arange(per), n_units))
        n_slots[code] += per
    return np.concatenate(groups), np.concatenate(units), np.concatenate(slots)


def _structured_hessian(spec: _Spec, z, y, mask) -> np.ndarray:
    """Exact dense Hessian of the IRT potential at ``z`` from few Hessian-vector products.

    Item parameters of different items never share a term of the log density, nor
    do abilities of different models (they interact only through each other and
    through global hyper-parameters). So the columns of the smaller side (say the
    abilities) and of the globals are computed one by one, and the block-diagonal
    part of the other side with one product per parameter slot (graph colouring;
    Curtis, Powell & Reid 1974). For ``arc_challenge`` that is ~220 instead of
    ~2560 products. The remaining entries follow from symmetry.
    """
    group, unit, slot = _layout(z, spec.n_models, spec.n_items)
    n_par = group.size
    colored = 0 if (group == 0).sum() >= (group == 1).sum() else 1
    dense_idx = np.flatnonzero(group != colored)
    col_idx = np.flatnonzero(group == colored)
    n_slot = int(slot[col_idx].max()) + 1 if col_idx.size else 0
    basis = np.zeros((dense_idx.size + n_slot, n_par), dtype=np.float32)
    basis[np.arange(dense_idx.size), dense_idx] = 1.0
    for s in range(n_slot):
        basis[dense_idx.size + s, col_idx[slot[col_idx] == s]] = 1.0
    products = np.asarray(_hvps(spec, z, y, mask, to_device(basis)), dtype=np.float64)
    hess = np.zeros((n_par, n_par))
    hess[dense_idx, :] = products[:dense_idx.size]
    hess[:, dense_idx] = products[:dense_idx.size].T
    if col_idx.size:
        n_units = int(unit[col_idx].max()) + 1
        table = np.full((n_units, n_slot), -1)
        table[unit[col_idx], slot[col_idx]] = col_idx
        for s in range(n_slot):
            partner = table[unit[col_idx], s]
            ok = partner >= 0
            hess[col_idx[ok], partner[ok]] = products[dense_idx.size + s, col_idx[ok]]
    return 0.5 * (hess + hess.T)


@partial(jax.jit, static_argnums=0, **JIT_OPTIONS)
def _hvps(spec: _Spec, z, y, mask, basis):
    """Hessian-vector products ``H @ v`` for the rows ``v`` of ``basis``, 16 at a time."""
    flat, unravel = ravel_pytree(z)
    fn = spec.model_fn(False)
    grad = jax.grad(lambda f: potential_energy(fn, (y, mask), {}, unravel(f)))

    def hvp(v):
        return jax.jvp(grad, (flat,), (v,))[1]

    return jax.lax.map(hvp, basis, batch_size=16)


# ------------------------------------------------------------------------------- SVI
def _make_svi(spec: _Spec, method: str, guide: str, lr: float, init) -> SVI:
    fn = spec.model_fn(True)
    init_fn = _init_strategy(init)
    if method == "map":
        auto = AutoDelta(fn, init_loc_fn=init_fn)
    elif guide == "lowrank":
        auto = AutoLowRankMultivariateNormal(fn, init_loc_fn=init_fn, init_scale=0.1)
    else:
        auto = AutoNormal(fn, init_loc_fn=init_fn, init_scale=0.1)
    return SVI(fn, auto, optax.adam(lr), OrderedTraceELBO())


def _latent_sites(auto) -> list[str]:
    """Names of the guide's latent sample sites, in trace order."""
    return [name for name, site in auto.prototype_trace.items()
            if site["type"] == "sample" and not site["is_observed"]]


def _svi_draw(svi: SVI, spec: _Spec, n_draws: int, state, key, noise, y, mask):
    """``n_draws`` guide draws and, appended as one more row, the guide's median.

    For ``AutoNormal`` the draws are ``T(loc + scale * noise)`` site by site, with
    ``T = biject_to(support)`` the site's constraining transform and ``noise``
    standard normal numbers made on the host: this is the guide's own definition
    (a mean-field Normal in unconstrained space, pushed through ``T``; numpyro's
    ``AutoNormal.sample_posterior`` draws the same distribution), and leaving the
    random numbers out of the compiled program saves about 0.4 s of compiling a
    first fit. Other guides draw with ``sample_posterior`` and ``key``. The
    median is each coordinate's median under the guide, ``T(loc)`` (the point
    itself for ``AutoDelta``). Deterministic sites (D > 1 loadings) are computed
    for draws and median alike.
    """
    auto = svi.guide
    params = svi.get_params(state)
    key_draw, key_det = jax.random.split(key)
    if noise:
        latent = {}
        for name in _latent_sites(auto):
            loc = params[f"{name}_{auto.prefix}_loc"]
            scale = params[f"{name}_{auto.prefix}_scale"]
            z = jnp.concatenate([loc + scale * noise[name], loc[None]], axis=0)
            latent[name] = biject_to(auto.prototype_trace[name]["fn"].support)(z)
    else:
        draws = auto.sample_posterior(key_draw, params, sample_shape=(n_draws,))
        median = auto.median(params)
        latent = {k: jnp.concatenate([draws[k], jnp.asarray(median[k])[None]], axis=0)
                  for k in _latent_sites(auto)}
    if not any(site["type"] == "deterministic" for site in auto.prototype_trace.values()):
        return latent
    return {**latent, **_deterministic_sites(spec.model_fn(False), latent, key_det, y, mask)}


def _deterministic_sites(fn, latent, key, y, mask):
    """The model's deterministic sites for each row of the latent draws ``latent``.

    ``Predictive`` would do this, but it passes its keys on as raw data, which
    only works for threefry keys (a fit's keys are ``unsafe_rbg``). Every latent
    site is substituted and ``y`` is observed, so nothing random is drawn and one
    key serves all rows.
    """
    def one(sample):
        model = handlers.substitute(handlers.seed(fn, key), data=sample)
        tr = handlers.trace(model).get_trace(y, mask)
        return {k: site["value"] for k, site in tr.items() if site["type"] == "deterministic"}

    return jax.vmap(one)(latent)


@partial(jax.jit, static_argnums=(0, 1, 2, 3, 4), **JIT_OPTIONS)
def _svi_program(spec: _Spec, method: str, guide: str, lr: float, n_draws: int, state, rng,
                 noise, y, mask, init, length, first, last):
    """One chunk of an SVI fit; the whole fit is this one compiled program, called per chunk.

    With ``first`` the chunk starts from ``SVI.init`` (``state`` is then only a
    placeholder of the right structure); it runs ``length`` (at most
    :data:`CHUNK`) Adam steps; with ``last`` it also returns the guide draws of
    :func:`_svi_draw` (from ``noise``, see there), else zeros of their shape.
    Initialisation, steps and draws share one program because compiling
    dominates a first fit on CPU: three separate programs took about 0.6 s
    longer to lower and compile than this one. The price is that ``SVI.init``
    (one likelihood and gradient evaluation) runs with every chunk; a compiled
    fit's time did not change measurably (A/B in
    benchmarks/results/irt_speed.md). ``rng`` and the state's key are raw key
    data (:func:`coreval.irt._device.prng_key`); the fit's key is split here, the
    first half for the init and the second for the draws.
    """
    svi = _make_svi(spec, method, guide, lr, init)
    key_init, key_draw = jax.random.split(wrap_key(rng))
    start = svi.init(key_init, y, mask)
    state = state._replace(rng_key=wrap_key(state.rng_key))
    state = jax.tree.map(lambda s0, s: jnp.where(first, s0, s), start, state)

    def body(i, carry):
        st, buf = carry
        st, loss = svi.update(st, y, mask)
        return st, buf.at[i].set(loss)

    state, losses = jax.lax.fori_loop(0, length, body, (state, jnp.zeros(CHUNK, jnp.float32)))

    def draw():
        return _svi_draw(svi, spec, n_draws, state, key_draw, noise, y, mask)

    shapes = jax.eval_shape(draw)
    draws = jax.lax.cond(last, draw, lambda: jax.tree.map(
        lambda sd: jnp.zeros(sd.shape, sd.dtype), shapes))
    return state._replace(rng_key=jax.random.key_data(state.rng_key)), losses, draws


@lru_cache(maxsize=64)
def _svi_state_template(spec: _Spec, method: str, guide: str, lr: float, treedef, shapes):
    """The first chunk's placeholder state and the shapes of the guide's locations.

    Returns zeros with the structure of the SVI state (its key as raw key data)
    and, for ``AutoNormal``, ``{site: shape}`` of the unconstrained locations
    (empty for other guides). ``treedef`` and ``shapes`` describe
    ``(key, y, mask, init)`` (shapes and dtypes only, so fits of the same shape
    share the template).
    """
    def init_state(key, y, mask, init):
        svi = _make_svi(spec, method, guide, lr, init)
        state = svi.init(wrap_key(key), y, mask)
        auto, params = svi.guide, svi.get_params(state)
        locs = ({name: params[f"{name}_{auto.prefix}_loc"] for name in _latent_sites(auto)}
                if isinstance(auto, AutoNormal) else {})
        return state._replace(rng_key=jax.random.key_data(state.rng_key)), locs

    state, locs = jax.eval_shape(init_state, *jax.tree.unflatten(treedef, shapes))
    return (jax.tree.map(lambda sd: np.zeros(sd.shape, sd.dtype), state),
            {name: sd.shape for name, sd in locs.items()})


def _run_svi(spec: _Spec, y, mask, init, rng, method, guide, num_steps, lr, num_draws, show):
    """SVI (AutoNormal / AutoLowRank) or minibatch MAP (AutoDelta) with Adam.

    Returns the guide draws (with a leading chain axis), the guide's median (the
    fit's point estimate) and diagnostics.
    """
    if spec.batch_size is not None:
        init = {k: v for k, v in init.items() if k not in ("theta", "theta01")}
    n_draws = num_draws if method == "svi" else 1
    leaves, treedef = jax.tree.flatten((rng, y, mask, init))
    template, loc_shapes = _svi_state_template(spec, method, guide, lr, treedef, tuple(
        jax.ShapeDtypeStruct(np.shape(v), v.dtype) for v in leaves))
    # The guide draws' standard normal numbers, made on the host (see _svi_draw).
    gen = host_rng(rng)
    noise = {name: to_device(gen.standard_normal((n_draws, *shape)))
             for name, shape in loc_shapes.items()}
    out = {}

    def chunk(state, length, done):
        first, last = done == 0, done + length >= num_steps
        state, losses, draws = _svi_program(spec, method, guide, lr, n_draws, state, rng,
                                            noise, y, mask, init, length, first, last)
        if last:
            out["draws"] = draws
        return state, losses

    _, loss = _optimise(chunk, template, num_steps, show,
                        "IRT SVI" if method == "svi" else "IRT MAP (minibatch)")
    diag = _loss_summary(loss)
    diag["posterior"] = "guide" if method == "svi" else "point"
    # Sliced on the host: eager slicing of device arrays compiles a program per shape.
    samples = {k: np.asarray(v) for k, v in out["draws"].items()}
    draws = {k: v[None, :-1] for k, v in samples.items()}
    median = {k: v[-1] for k, v in samples.items()}
    return draws, median, diag


def _run_nuts(fn, y, mask, init_strategy, rng, num_warmup, num_samples, num_chains, show):
    kernel = NUTS(fn, init_strategy=init_strategy)
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method="sequential", progress_bar=show)
    mcmc.run(wrap_key(rng), y, mask, extra_fields=("diverging", "potential_energy"))
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    stats = {"diverging": np.asarray(extra["diverging"]),
             "lp": -np.asarray(extra["potential_energy"])}
    return samples, stats, {"num_warmup": num_warmup, "num_samples": num_samples,
                            "num_chains": num_chains}


# ------------------------------------------------------------------------- InferenceData
@partial(jax.jit, static_argnums=(0,), **JIT_OPTIONS)
def _loglik_masked_total(link: str, params, y, mask):
    """Total log-likelihood of the observed entries per draw, one draw at a time."""
    def one(p):
        lp = _models.response_dist(link, p["theta"], p).log_prob(y)
        return jnp.sum(jnp.where(mask, lp, 0.0))
    return jax.lax.map(one, params)


@partial(jax.jit, static_argnums=(0, 1), **JIT_OPTIONS)
def _loglik(link: str, total_only: bool, params, y, rows, cols):
    """Pointwise log-likelihood of the observed entries (or its total) for each draw."""
    def one(p):
        lp = _models.response_dist(link, p["theta"], p).log_prob(y)[rows, cols]
        return jnp.sum(lp) if total_only else lp
    return jax.lax.map(one, params, batch_size=4)


def _to_idata(samples: dict[str, np.ndarray], stats: dict[str, np.ndarray], data: IRTData,
              link: str, dims: int, *, point: dict[str, np.ndarray] | None = None,
              ) -> tuple[az.InferenceData, str | None]:
    """Build the InferenceData; ``point`` (MAP mode / SVI guide median) becomes the
    extra group ``point_estimate`` (same variables and dims, no chain/draw)."""
    n_chains, n_draws = samples["theta"].shape[:2]
    n_obs = int(data.mask.sum())
    needed = [k for k in ("theta", "a", "d", "b", "c", "sigma", "k") if k in samples]
    flat = {k: to_device(samples[k].reshape((-1, *samples[k].shape[2:]))) for k in needed}
    yj = to_device(data.y)
    keep_per_chain = max(1, min(n_draws, LOGLIK_CAP // max(1, n_obs * n_chains)))
    note = None
    store = n_obs * n_chains <= LOGLIK_CAP
    if not store:
        note = f"omitted: {n_obs} observed entries × {n_chains} chains exceed {LOGLIK_CAP}"
        keep = np.zeros(0, dtype=int)
    else:
        keep = np.unique(np.linspace(0, n_draws - 1, keep_per_chain).astype(int))
        if keep.size < n_draws:
            note = f"thinned to {keep.size} of {n_draws} draws per chain"
    stats = dict(stats)
    ll = None
    if not store:
        # Leaderboard scale: neither the pointwise values nor the (obs -> model, item)
        # index arrays (16 bytes per observed entry) are kept; totals by a masked sum.
        rows = cols = np.zeros(0, dtype=np.int64)
        totals = np.asarray(_loglik_masked_total(link, flat, yj, to_device(data.mask)))
    else:
        rows, cols = np.nonzero(data.mask)
        rj, cj = to_device(rows), to_device(cols)
        if keep.size == n_draws:  # the common case: one pass gives pointwise values and totals
            ll = np.asarray(_loglik(link, False, flat, yj, rj, cj), dtype=np.float32)
            totals = ll.sum(axis=1, dtype=np.float64)
            ll = ll.reshape(n_chains, n_draws, n_obs)
        else:
            totals = np.asarray(_loglik(link, True, flat, yj, rj, cj))
            idx = (np.arange(n_chains)[:, None] * n_draws + keep[None, :]).ravel()
            sub = {k: v[idx] for k, v in flat.items()}
            ll = np.asarray(_loglik(link, False, sub, yj, rj, cj),
                            dtype=np.float32).reshape(n_chains, keep.size, n_obs)
    stats["loglik_total"] = np.asarray(totals).reshape(n_chains, n_draws)
    coords = {"model": data.model_ids.astype(str), "item": data.item_ids.astype(str),
              "dim": np.arange(dims)}
    if store:
        coords["obs"] = np.arange(n_obs)
    post_dims = {k: list(_DIMS[k]) for k in samples if k in _DIMS
                 and samples[k].ndim - 2 == len(_DIMS[k])}
    posterior = az.dict_to_dataset(samples, coords=coords, dims=post_dims)
    groups = {
        "posterior": posterior,
        "sample_stats": az.dict_to_dataset(stats, coords=coords),
        "observed_data": az.dict_to_dataset({"y": data.values}, coords=coords,
                                            dims={"y": ["model", "item"]}, default_dims=[]),
    }
    if store:  # maps the log_likelihood's "obs" dimension to (model, item)
        groups["constant_data"] = az.dict_to_dataset(
            {"obs_model": rows, "obs_item": cols}, coords=coords, default_dims=[],
            dims={"obs_model": ["obs"], "obs_item": ["obs"]})
    if point is not None:
        groups["point_estimate"] = az.dict_to_dataset(
            point, coords=coords, default_dims=[],
            dims={k: list(_DIMS[k]) for k, v in point.items() if np.ndim(v) == len(_DIMS[k])})
    if ll is not None:
        ll_coords = dict(coords, chain=np.arange(n_chains), draw=keep)
        groups["log_likelihood"] = az.dict_to_dataset({"y": ll}, coords=ll_coords,
                                                      dims={"y": ["obs"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = az.InferenceData(**groups)
    return idata, note


def _nuts_diagnostics(idata: az.InferenceData) -> dict[str, Any]:
    names = [v for v in ("theta", "a", "d", "c", "sigma", "k") if v in idata.posterior]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rhat = az.rhat(idata, var_names=names)
        ess = az.ess(idata, var_names=names)
    max_rhat = float(max(np.nanmax(rhat[v].values) for v in names))
    min_ess = float(min(np.nanmin(ess[v].values) for v in names))
    divergences = int(np.asarray(idata.sample_stats["diverging"]).sum())
    if max_rhat > RHAT_WARN or divergences > 0:
        warnings.warn(f"NUTS diagnostics: max R-hat {max_rhat:.3f} (want <= {RHAT_WARN}), "
                      f"{divergences} divergences, min bulk ESS {min_ess:.0f}; "
                      "run longer or reparameterise", stacklevel=3)
    return {"max_rhat": max_rhat, "min_ess_bulk": min_ess, "divergences": divergences}


def _card(name, method, dims, priors, data: IRTData, diag, link, settings) -> dict[str, Any]:
    from coreval._version import __version__

    return {
        "model": name, "method": method, "dims": dims, "priors": priors, "link": link,
        "settings": settings,
        "data": {"name": data.name, "shape": list(data.shape),
                 "observed_fraction": float(data.mask.mean()), "sha256": data.sha256},
        "diagnostics": diag,
        "coreval_version": __version__,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


# ------------------------------------------------------------------------------- MML
def _fit_mml(data: IRTData, name: str, show_progress: bool | None) -> IRTFit:
    """Wrap :func:`coreval.irt.mml.fit_mml` (H4a) into an :class:`IRTFit` with one draw."""
    from coreval.irt.mml import fit_mml

    start = time.perf_counter()
    values = np.where(data.mask, data.values, np.nan)
    res = fit_mml(values, model=get_spec(name).mml, show_progress=show_progress)
    theta, _ = res.eap_theta(values)
    # Standardise to theta ~ N(0, 1): a' = a s, theta' = theta / s (s² = latent variance).
    s = float(np.sqrt(res.latent_variance))
    a = np.asarray(res.a, dtype=float) * s
    samples = {"a": a[None, None, :, None], "d": np.asarray(res.d, float)[None, None],
               "b": np.asarray(res.b, float)[None, None],
               "theta": (np.asarray(theta, float) / s)[None, None, :, None]}
    if res.c is not None:
        samples["c"] = np.asarray(res.c, float)[None, None]
    diag = {"posterior": "point", "loglik": float(res.loglik), "n_iter": int(res.n_iter),
            "converged": bool(res.converged), "latent_variance": float(res.latent_variance),
            "seconds": time.perf_counter() - start}
    idata, note = _to_idata(samples, {}, data, name, 1)
    if note:
        diag["log_likelihood"] = note
    item_se = None
    if res.se_a is not None and res.se_d is not None:
        item_se = {"a": np.asarray(res.se_a, float) * s, "d": np.asarray(res.se_d, float)}
        if getattr(res, "se_c", None) is not None:
            item_se["c"] = np.asarray(res.se_c, float)
    card = _card(name, "mml", 1, "none", data, diag, name, {})
    return IRTFit(model=name, method="mml", dims=1, priors="none", idata=idata, card=card,
                  item_se=item_se)
