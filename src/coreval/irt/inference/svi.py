"""Stochastic variational inference (``AutoNormal`` / ``AutoLowRankMultivariateNormal``) and
minibatch MAP (``AutoDelta``), one compiled program per chunk of steps.

References
----------
Hoffman, M. D., Blei, D. M., Wang, C. & Paisley, J. (2013). Stochastic variational
inference. *JMLR* 14."""

from __future__ import annotations

from functools import lru_cache, partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer import SVI
from numpyro.infer.autoguide import AutoDelta, AutoLowRankMultivariateNormal, AutoNormal

from coreval.irt._device import JIT_OPTIONS, host_rng, to_device, wrap_key
from coreval.irt.elbo import OrderedTraceELBO
from coreval.irt.inference.programs import CHUNK, _init_strategy, _loss_summary, _optimise, _Spec


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
