"""Ability nodes for D ≥ 2: adaptive Gauss-Hermite quadrature around the Laplace approximation.

A fixed product grid over D dimensions, fine enough for the narrow posterior of a long
test, would need ``G^D`` nodes for every item-parameter draw. Instead each test places
``n^D`` nodes where its posterior is (Liu & Pierce 1994; Naylor & Smith 1982; the
"adaptive quadrature" of mirt and GLLAMM):

1. the Laplace approximation ``N(θ̂, Σ)`` of the ability posterior under the draws' mean
   item parameters: ``θ̂`` its mode, found by Fisher scoring from the previous mode, and
   ``Σ`` the inverse of the prior precision plus the expected information at ``θ̂``;
2. the nodes ``θ_k = θ̂ + L z_k``, ``L L' = Σ``, with ``z_k`` the product Gauss-Hermite
   rule for ``N(0, I)`` and weights ``w_k``;
3. on node ``k`` and draw ``s`` the unnormalised log posterior weight
   ``log w_k + |z_k|²/2 + log N(θ_k; 0, I) + Σ_{i asked} log p(y_i | θ_k, s)``, which
   divides the exact posterior by the Gaussian the nodes were placed with (importance
   correction), so the quadrature stays exact for the draws that the mean parameters
   approximate less well, and the joint posterior over (draw, node) is that of the
   fixed grid.

Hand-written: the mode and information of a logistic model with D abilities are a few
matrix products, and no library offers adaptive quadrature over a caller's likelihood.
"""

from __future__ import annotations

import functools
import itertools

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit

from coreval.irt.logistic import LOGIT_CLIP


@functools.cache
def gauss_hermite_nodes(dims: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Product Gauss-Hermite rule for ``N(0, I_dims)``: nodes ``(n^dims, dims)``, log weights.

    The weights sum to 1, so ``Σ_k w_k f(z_k) ≈ E f(Z)``, exact for polynomials of degree
    ``2n - 1`` in each coordinate. Made once per ``(dims, n)`` (every update of every
    test reuses it); the arrays are read-only.
    """
    z, w = hermegauss(n)
    log_w = np.log(w / w.sum())
    nodes = np.array(list(itertools.product(z, repeat=dims)), dtype=float)
    log_weights = np.array([sum(c) for c in itertools.product(log_w, repeat=dims)])
    nodes.flags.writeable = log_weights.flags.writeable = False
    return nodes, log_weights


def laplace_approximation(a: np.ndarray, d: np.ndarray, c: np.ndarray | None, y: np.ndarray,
                          start: np.ndarray, *, max_iter: int = 100,
                          tol: float = 1e-8) -> tuple[np.ndarray, np.ndarray]:
    """Mode and covariance of the Gaussian approximating ``p(θ | y)`` under one item set.

    Prior ``θ ~ N(0, I)``; ``P(y_i = 1) = c_i + (1 - c_i) σ(a_i · θ + d_i)``. Fisher
    scoring: ``θ ← θ + (I + J(θ))⁻¹ ∇ log p(θ | y)``, with the expected information
    ``J(θ) = Σ_i a_i a_i' ((1 - c_i) σ_i (1 - σ_i))² / (p_i (1 - p_i))`` (Newton's method
    for the 2PL, whose log posterior is concave); the covariance is ``(I + J(θ̂))⁻¹``.

    Parameters
    ----------
    a : ndarray, shape (n, D)
    d, c : ndarray, shape (n,)
    y : ndarray, shape (n,)
        0/1 answers.
    start : ndarray, shape (D,)

    Returns
    -------
    mode : ndarray, shape (D,)
    cov : ndarray, shape (D, D)
    """
    dims = a.shape[1]
    theta = np.asarray(start, dtype=float).copy()
    eye = np.eye(dims)
    precision = eye
    for _ in range(max_iter):
        s = expit(np.clip(a @ theta + d, -LOGIT_CLIP, LOGIT_CLIP))
        slope = s * (1.0 - s) if c is None else (1.0 - c) * s * (1.0 - s)   # dp/dz
        p = s if c is None else c + (1.0 - c) * s
        p = np.clip(p, 1e-9, 1.0 - 1e-9)
        gradient = a.T @ ((y - p) / (p * (1.0 - p)) * slope) - theta
        precision = eye + a.T @ ((slope**2 / (p * (1.0 - p)))[:, None] * a)
        step = np.linalg.solve(precision, gradient)
        # halve a step that would lower the log posterior (3PL: not concave)
        current = _log_posterior(a, d, c, y, theta)
        for _ in range(30):
            if _log_posterior(a, d, c, y, theta + step) >= current - 1e-12:
                break
            step = step / 2.0
        theta = theta + step
        if np.max(np.abs(step)) < tol:
            break
    return theta, np.linalg.inv(precision)


def _log_posterior(a, d, c, y, theta) -> float:
    s = expit(np.clip(a @ theta + d, -LOGIT_CLIP, LOGIT_CLIP))
    p = np.clip(s if c is None else c + (1.0 - c) * s, 1e-9, 1.0 - 1e-9)
    return float(y @ np.log(p) + (1.0 - y) @ np.log1p(-p) - 0.5 * theta @ theta)


def adaptive_nodes(bank, asked: np.ndarray, responses: np.ndarray, start: np.ndarray,
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes, their probabilities and the log posterior weights of one test's state.

    Parameters
    ----------
    bank : ItemBank
        A bank with D ≥ 2.
    asked, responses : ndarray
        Positions of the answered items and the 0/1 answers.
    start : ndarray, shape (D,)
        Where Fisher scoring starts (the previous mode).

    Returns
    -------
    nodes : ndarray, shape (G, D)
    probs : ndarray, shape (S, G, N)
    log_weight : ndarray, shape (S, G)
        Unnormalised log posterior on the (draw, node) pairs (module docstring).
    """
    from coreval.adaptive.bank import laplace_nodes

    z, log_w = gauss_hermite_nodes(bank.dims, laplace_nodes(bank.dims))
    if len(asked):
        a = bank.a[:, asked].mean(axis=0)
        d = bank.d[:, asked].mean(axis=0)
        c = None if bank.c is None else bank.c[:, asked].mean(axis=0)
        mode, cov = laplace_approximation(a, d, c, np.asarray(responses, float), start)
    else:
        mode, cov = np.zeros(bank.dims), np.eye(bank.dims)
    nodes = mode + z @ np.linalg.cholesky(cov).T
    probs = bank.probs_at(nodes)                                   # (S, G, N)
    log_weight = np.broadcast_to(log_w + 0.5 * (z**2).sum(axis=1)
                                 - 0.5 * (nodes**2).sum(axis=1), probs.shape[:2]).copy()
    if len(asked):
        p = probs[:, :, asked]
        y = np.asarray(responses, dtype=float)
        log_weight += np.log(np.where(y == 1.0, p, 1.0 - p)).sum(axis=2)
    return nodes, probs, log_weight
