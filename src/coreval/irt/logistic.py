"""The logistic item response curve and ability estimation, shared by every IRT estimator.

``P(y = 1 | θ) = c + (1 - c) σ(θ·a + d)`` (slope-intercept 2PL / 3PL), with the
logit clipped to ``±LOGIT_CLIP``. Ability estimates by maximum likelihood (or MAP)
and by 1-D quadrature of the posterior, vectorised over models.

References
----------
Birnbaum, A. (1968). Some latent trait models. In Lord & Novick, *Statistical Theories
of Mental Test Scores*. Bock, R. D. & Mislevy, R. J. (1982). Adaptive EAP estimation of
ability in a microcomputer environment. *Applied Psychological Measurement* 6(4).
Polo, F. M. et al. (2024). tinyBenchmarks (the ability MLE of p-IRT).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from coreval.errors import ValidationError

#: Logits are clipped to this range, as in the tinyBenchmarks code (keeps the MLE finite).
LOGIT_CLIP = 30.0
_EPS = 1e-10
#: Quadrature grid of the 1-D ability posterior (spacing 0.04).
GRID_HALF_WIDTH = 8.0
GRID_NODES = 401
#: Quadrature grid of the 2-D ability posterior: this many nodes per axis on
#: ``[-GRID2_HALF_WIDTH, GRID2_HALF_WIDTH]`` (spacing 0.25; 1681 nodes).
GRID2_HALF_WIDTH = 5.0
GRID2_NODES = 41



def logistic_icc(theta: np.ndarray, a: np.ndarray, d: np.ndarray,
                 c: np.ndarray | None = None) -> np.ndarray:
    """Probability of a correct answer, ``c + (1 - c) σ(clip(θ·a + d))``.

    Parameters
    ----------
    theta : ndarray, shape (n, D)
    a : ndarray, shape (n_items, D)
    d : ndarray, shape (n_items,)
    c : ndarray, shape (n_items,), optional
        Guessing parameters (3PL).

    Returns
    -------
    ndarray, shape (n, n_items)
    """
    z = np.clip(np.atleast_2d(theta) @ np.atleast_2d(a).T + d, -LOGIT_CLIP, LOGIT_CLIP)
    p = expit(z)
    return p if c is None else c + (1.0 - c) * p


def estimate_abilities(y: np.ndarray, a: np.ndarray, d: np.ndarray, c: np.ndarray | None = None,
                       *, bounds: tuple[float, float] | None = None,
                       prior_sd: float | None = None) -> np.ndarray:
    """Maximum-likelihood (or MAP) abilities of models from their item responses.

    Maximises the Bernoulli log-likelihood ``Σ_i y_i log p_i + (1 - y_i) log(1 - p_i)``
    of each row, ``p = c + (1 - c) σ(clip(θ·a + d, ±30))``; NaN responses are
    skipped. The rows are independent, so all abilities are found in one
    L-BFGS-B run on the summed objective with its analytic gradient (the
    tinyBenchmarks code runs BFGS per model from θ = 0; this is the same
    optimum, computed once for all rows). Fractional scores in [0, 1] are used
    as soft labels (Bernoulli quasi-likelihood).

    Parameters
    ----------
    y : ndarray, shape (n_models, n_items)
        Responses on the items whose parameters are given.
    a, d, c : item parameters (see :func:`logistic_icc`).
    bounds : (low, high), optional
        Box bounds on each ability coordinate (metabench uses (-4, 4)). Without
        bounds and without a prior, an all-correct row stops where the clipped
        logits make the gradient vanish, like the reference.
    prior_sd : float, optional
        Standard deviation of an N(0, sd²) prior on each coordinate (MAP).

    Returns
    -------
    ndarray, shape (n_models, D)
    """
    y = np.atleast_2d(np.asarray(y, dtype=float))
    a = np.atleast_2d(np.asarray(a, dtype=float))
    d = np.asarray(d, dtype=float).reshape(-1)
    n_models, n_items = y.shape
    dims = a.shape[1]
    if a.shape[0] != n_items or d.shape[0] != n_items:
        raise ValidationError(
            f"responses on {n_items} items but parameters for {a.shape[0]} items"
        )
    observed = ~np.isnan(y)
    y0 = np.where(observed, y, 0.0)

    def objective(flat: np.ndarray) -> tuple[float, np.ndarray]:
        theta = flat.reshape(n_models, dims)
        z_raw = theta @ a.T + d
        inside = np.abs(z_raw) < LOGIT_CLIP
        s = expit(np.clip(z_raw, -LOGIT_CLIP, LOGIT_CLIP))
        if c is None:
            p = s
            dp_dz = s * (1.0 - s)
        else:
            p = c + (1.0 - c) * s
            dp_dz = (1.0 - c) * s * (1.0 - s)
        p = np.clip(p, _EPS, 1.0 - _EPS)
        nll = -np.sum(observed * (y0 * np.log(p) + (1.0 - y0) * np.log1p(-p)))
        dnll_dp = -(y0 / p - (1.0 - y0) / (1.0 - p))
        grad_z = observed * inside * dnll_dp * dp_dz
        grad = grad_z @ a
        if prior_sd is not None:
            nll += 0.5 * np.sum(theta**2) / prior_sd**2
            grad = grad + theta / prior_sd**2
        return float(nll), grad.ravel()

    box = None if bounds is None else [tuple(bounds)] * (n_models * dims)
    res = minimize(objective, np.zeros(n_models * dims), jac=True, method="L-BFGS-B",
                   bounds=box, options={"maxiter": 1000, "ftol": 1e-14, "gtol": 1e-7})
    return res.x.reshape(n_models, dims)


class AbilityGrid(NamedTuple):
    """Item-side tables of the 1-D ability quadrature (:func:`ability_grid`).

    ``logit[i, s·G + g] = logit p_i(θ_g)`` and ``log_q[i, s·G + g] = log(1 - p_i(θ_g))``
    under item-parameter draw ``s``: (k, S·G) layouts so that the log-likelihood of
    many models is one BLAS matrix product.
    """

    nodes: np.ndarray
    logit: np.ndarray
    log_q: np.ndarray
    n_draws: int


def ability_grid(a: np.ndarray, d: np.ndarray, c: np.ndarray | None = None, *,
                 half_width: float = GRID_HALF_WIDTH, n_nodes: int = GRID_NODES) -> AbilityGrid:
    """The quadrature tables of coreset items, made once and shared by every model scored.

    Parameters
    ----------
    a : ndarray, shape (S, k, 1); d, c : ndarray, shape (S, k)
        Item-parameter draws of the coreset items.
    half_width, n_nodes : grid ``linspace(-half_width, half_width, n_nodes)``.

    Returns
    -------
    AbilityGrid
    """
    nodes = np.linspace(-half_width, half_width, n_nodes)
    z = np.clip(a[:, :, 0, None] * nodes + d[:, :, None], -LOGIT_CLIP, LOGIT_CLIP)  # (S, k, G)
    p = expit(z)
    if c is not None:
        p = c[:, :, None] + (1.0 - c[:, :, None]) * p
    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    log_q = np.log1p(-p)
    logit = np.log(p) - log_q
    n_draws, k = d.shape
    return AbilityGrid(nodes=nodes, logit=logit.transpose(1, 0, 2).reshape(k, -1),
                       log_q=log_q.transpose(1, 0, 2).reshape(k, -1), n_draws=n_draws)


def grid_ability_draws(x: np.ndarray, a: np.ndarray | None = None, d: np.ndarray | None = None,
                       c: np.ndarray | None = None, *, rng: np.random.Generator,
                       half_width: float = GRID_HALF_WIDTH, n_nodes: int = GRID_NODES,
                       grid: AbilityGrid | None = None) -> np.ndarray:
    """1-D ability draws by quadrature, for many models and item-parameter draws at once.

    For item-parameter draw ``s`` the posterior of a model's ability on a regular
    grid is ``p(θ_g | y) ∝ N(θ_g; 0, 1) Π_i p_sig^{y_i} (1 - p_sig)^{1 - y_i}``
    (the N(0, 1) ability prior of :mod:`coreval.irt.scoring`); its log-likelihood
    is linear in ``y``, ``y · logit(p_s) + Σ_i log(1 - p_si)``, so all models come
    from two matrix products per draw. One ability is drawn per (model, draw)
    (grid node by its posterior weight, jittered uniformly within the cell).
    Written here rather than calling :func:`coreval.irt.score_new_model` per model
    because that takes seconds per model; this is the same EAP quadrature,
    vectorised over models (Bock & Mislevy 1982).

    Parameters
    ----------
    x : ndarray, shape (n_models, k)
        Responses on the coreset items (NaN = not answered, skipped).
    a : ndarray, shape (S, k, 1); d, c : ndarray, shape (S, k)
        Item-parameter draws of the coreset items (not needed with ``grid``).
    rng : numpy Generator
    half_width, n_nodes : grid ``linspace(-half_width, half_width, n_nodes)``.
    grid : AbilityGrid, optional
        The tables of :func:`ability_grid`, made once where models are scored one at a
        time (they cost more than a model's draws: S·k·G logistic evaluations).

    Returns
    -------
    ndarray, shape (n_models, S)
    """
    if grid is None:
        if a is None or d is None:
            raise ValidationError("grid_ability_draws needs item parameters a and d, or grid")
        grid = ability_grid(a, d, c, half_width=half_width, n_nodes=n_nodes)
    nodes, n_draws = grid.nodes, grid.n_draws
    n_nodes = len(nodes)
    if grid.logit.shape[0] != x.shape[1]:
        raise ValidationError(f"grid_ability_draws: responses have {x.shape[1]} items, the "
                              f"grid {grid.logit.shape[0]}")
    mask = ~np.isnan(x)
    y = np.where(mask, x, 0.0)
    step = nodes[1] - nodes[0]
    out = np.empty((x.shape[0], n_draws))
    chunk = max(1, 4_000_000 // (n_draws * n_nodes))
    for lo in range(0, x.shape[0], chunk):  # chunks bound the (models, S, G) arrays
        sl = slice(lo, lo + chunk)
        # Σ_i y_i logit(p_sig) + Σ_i m_i log(1 - p_sig), then the N(0, 1) prior
        loglik = y[sl] @ grid.logit + mask[sl].astype(float) @ grid.log_q
        logpost = loglik.reshape(-1, n_draws, n_nodes) - 0.5 * nodes**2
        logpost -= logpost.max(axis=2, keepdims=True)
        cdf = np.cumsum(np.exp(logpost), axis=2)
        cdf /= cdf[:, :, -1:]
        u = rng.random(cdf.shape[:2])
        pick = np.minimum((cdf < u[..., None]).sum(axis=2), n_nodes - 1)
        out[sl] = nodes[pick] + (rng.random(pick.shape) - 0.5) * step
    return out


def grid_ability_draws_2d(x: np.ndarray, a: np.ndarray, d: np.ndarray,
                          c: np.ndarray | None = None, *,
                          rng: np.random.Generator | Sequence[np.random.Generator],
                          half_width: float = GRID2_HALF_WIDTH,
                          n_nodes: int = GRID2_NODES) -> np.ndarray:
    """2-D ability draws by quadrature on a product grid (:func:`grid_ability_draws` for D = 2).

    For item-parameter draw ``s`` the ability posterior on the grid is
    ``p(θ_g | y) ∝ N(θ_g; 0, I) Π_i p^{y_i} (1 - p)^{1 - y_i}``,
    ``p = c + (1 - c) σ(θ_g · a_i + d_i)``; one node is drawn per (model, draw) by
    its posterior weight and jittered uniformly within its cell (Bock & Mislevy
    1982, on a tensor-product grid). The grid is shared by all models so that each
    log-likelihood is one matrix product; its spacing (0.25) bounds the resolution:
    where a posterior sd is below it (hundreds of informative items), the draws'
    spread is too wide, by up to the jitter's ``0.25/√12 ≈ 0.07`` per axis (a 600-item
    test: sd 0.126 instead of 0.083 on one axis).

    Parameters
    ----------
    x : ndarray, shape (n_models, k)
        Responses on the coreset items (NaN = not answered, skipped).
    a : ndarray, shape (S, k, 2); d, c : ndarray, shape (S, k)
        Item-parameter draws of the coreset items.
    rng : numpy Generator, or one per model
        With one generator per model, each model's draws come from its own stream
        (``3 S`` uniforms, taken first), so they do not depend on the other models.
    half_width, n_nodes : each axis is ``linspace(-half_width, half_width, n_nodes)``.

    Returns
    -------
    ndarray, shape (n_models, S, 2)
    """
    if a.shape[2] != 2:
        raise ValidationError(f"grid_ability_draws_2d needs 2-D loadings, got D={a.shape[2]}")
    axis = np.linspace(-half_width, half_width, n_nodes)
    nodes = np.stack(np.meshgrid(axis, axis, indexing="ij"), axis=-1).reshape(-1, 2)  # (G, 2)
    n_grid = len(nodes)
    step = axis[1] - axis[0]
    n_draws = d.shape[0]
    mask = ~np.isnan(x)
    y = np.where(mask, x, 0.0)
    log_prior = -0.5 * np.sum(nodes ** 2, axis=1)
    if isinstance(rng, np.random.Generator):
        uniforms = rng.random((len(x), n_draws, 3))
    else:
        if len(rng) != len(x):
            raise ValidationError(f"grid_ability_draws_2d: {len(rng)} generators for "
                                  f"{len(x)} models")
        uniforms = np.stack([g.random((n_draws, 3)) for g in rng]) if len(x) else (
            np.empty((0, n_draws, 3)))
    out = np.empty((x.shape[0], n_draws, 2))
    for s in range(n_draws):  # one item-parameter draw at a time bounds the (k, G) arrays
        z = np.clip(a[s] @ nodes.T + d[s][:, None], -LOGIT_CLIP, LOGIT_CLIP)     # (k, G)
        p = expit(z)
        if c is not None:
            p = c[s][:, None] + (1.0 - c[s][:, None]) * p
        p = np.clip(p, 1e-12, 1.0 - 1e-12)
        log_q = np.log1p(-p)
        logpost = y @ (np.log(p) - log_q) + mask.astype(float) @ log_q + log_prior  # (n, G)
        logpost -= logpost.max(axis=1, keepdims=True)
        cdf = np.cumsum(np.exp(logpost), axis=1)
        cdf /= cdf[:, -1:]
        pick = np.minimum((cdf < uniforms[:, s, :1]).sum(axis=1), n_grid - 1)
        out[:, s] = nodes[pick] + (uniforms[:, s, 1:] - 0.5) * step
    return out
