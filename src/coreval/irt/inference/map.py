"""MAP by Adam in unconstrained space, then a Laplace approximation ``N(mode, H^-1)``.

References
----------
MacKay, D. J. C. (2003). *Information Theory, Inference and Learning Algorithms*, ch. 27
(Laplace's method)."""

from __future__ import annotations

import warnings
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree
from numpyro.infer.util import constrain_fn, potential_energy

from coreval.irt._device import JIT_OPTIONS, host_rng, to_device, wrap_key
from coreval.irt.inference.programs import (
    CHUNK,
    _init_strategy,
    _loss_summary,
    _optimise,
    _Spec,
    _unconstrained_init,
)

#: MAP: largest number of unconstrained parameters for the (dense) Laplace approximation.
LAPLACE_MAX_PARAMS = 5000
#: MAP: an ability sd at the mode below this is reported as a collapsed scale (the 2PL's
#: joint mode keeps about 0.45 on simulated unit-scale data, the 1PL's about 0.12).
MAP_MIN_ABILITY_SD = 0.25
#: Laplace: floor of the Hessian eigenvalues (an unconverged MAP can have flat or negative
#: curvature); 0.01 is the curvature of the weakest prior, mu ~ N(0, 10).
LAPLACE_MIN_PRECISION = 0.01


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
    _warn_shrunk_abilities(rows.get("theta"), diag)
    return ({k: v[None, :-1] for k, v in rows.items()}, {k: v[-1] for k, v in rows.items()},
            diag)


def _warn_shrunk_abilities(theta: np.ndarray | None, diag: dict) -> None:
    """Warn when the joint mode has collapsed the abilities' scale.

    ``a θ`` is unchanged along ``θ → θ/s, a → a s``, so at the joint mode the N(0, 1)
    ability priors pull the abilities' scale down until the slope priors resist: the
    stationarity condition is ``Σ_m θ_m² ≈ Σ_j log a_j``. With one shared slope (1PL)
    only one prior term resists: a simulated 1PL with true slope 1 gave a = 9.98 and
    sd(θ) = 0.12 (marginal ML: a = 1.09). Predictions, which depend on ``a θ + d``, are
    unaffected; the parameters' scale is not.
    """
    if theta is None or theta.ndim < 2 or theta.shape[1] < 2:
        return
    sd = float(np.min(np.std(theta[-1], axis=0)))
    if sd < MAP_MIN_ABILITY_SD:
        diag["note"] = (diag.get("note", "") + " " if diag.get("note") else "") + (
            f"abilities shrunk at the joint mode (sd {sd:.2g})")
        warnings.warn(f"the joint MAP has shrunk the abilities (sd {sd:.2g}) and inflated the "
                      "slopes: the scale of a, b and theta is not identified at the mode "
                      "(predictions a·theta + d are); use method='mml', 'svi' or 'nuts' for "
                      "calibrated item parameters", UserWarning, stacklevel=4)


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
