"""Bias-decomposed low-rank matrix completion by alternating ridge regressions (Bias-ALS).

The model of BenchPress (Zeng & Papailiopoulos 2026, section 4.2; ``complete_bias_als`` of
``benchpress/methods/completers.py``) on a standardised, transformed matrix ``Z`` with
observed cells ``Omega``:

    Z_ij ~ mu + a_i + c_j + U_i . V_j,

    minimise  sum_{(i,j) in Omega} (Z_ij - mu - a_i - c_j - U_i . V_j)^2
              + lam (||a||^2 + ||c||^2 + ||U||_F^2 + ||V||_F^2).

One sweep (:func:`als_step`) solves, in closed form, the ridge regression of each row's
``(a_i, U_i)`` on ``[1, V_j]`` over its observed columns, then of each column's ``(c_j, V_j)``
on ``[1, U_i]``, then sets ``mu`` to the mean residual (not penalised). The factors start at
``N(0, 0.01^2)``, the biases at 0 and ``mu`` at the mean of the observed entries
(:func:`als_init`); the completion averages ``n_ensemble`` runs from different starts
(:func:`complete_als`). Rows or columns without an observed entry keep their initial values.

The per-row solves are batched ``(r+1) x (r+1)`` systems (``numpy.linalg.solve`` over a
stack): scikit-learn's ``Ridge`` would fit one row at a time and cannot leave ``mu`` out of a
shared design, so the normal equations are written out here.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from coreval.base.checks import check_positive_int
from coreval.errors import ValidationError


class ALSState(NamedTuple):
    """Parameters of the bias-decomposed low-rank model.

    Attributes
    ----------
    mu : float
        Global mean.
    row_bias : ndarray of shape (n_rows,)
        Per-model bias ``a``.
    col_bias : ndarray of shape (n_cols,)
        Per-benchmark bias ``c``.
    U : ndarray of shape (n_rows, rank)
    V : ndarray of shape (n_cols, rank)
    """

    mu: float
    row_bias: np.ndarray
    col_bias: np.ndarray
    U: np.ndarray
    V: np.ndarray


def check_options(rank: int, lam: float, n_iter: int = 1, n_ensemble: int = 1) -> None:
    """Raise a :class:`ValidationError` naming a bad rank, ridge or iteration count."""
    check_positive_int("rank", rank, minimum=0)
    if not np.isfinite(lam) or lam < 0:
        raise ValidationError(f"lam (ridge penalty) must be finite and >= 0, got {lam!r}")
    check_positive_int("n_iter", n_iter)
    check_positive_int("n_ensemble", n_ensemble)


def als_init(z: np.ndarray, observed: np.ndarray, rank: int,
             rng: np.random.Generator | np.random.RandomState) -> ALSState:
    """Starting point: ``mu`` = mean of observed ``z``, zero biases, ``N(0, 0.01^2)`` factors.

    ``U`` is drawn before ``V`` from ``rng`` (a ``Generator``, or the legacy ``RandomState``
    the authors' code uses).
    """
    n_rows, n_cols = z.shape
    mu = float(z[observed].mean()) if observed.any() else 0.0
    U = rng.normal(0.0, 0.01, size=(n_rows, rank))
    V = rng.normal(0.0, 0.01, size=(n_cols, rank))
    return ALSState(mu, np.zeros(n_rows), np.zeros(n_cols), U, V)


def _ridge_block(resid: np.ndarray, weight: np.ndarray, design: np.ndarray, lam: float,
                 previous: np.ndarray) -> np.ndarray:
    """Solve ``(X^T W X + lam I) beta_i = X^T W r_i`` for every row ``i`` at once.

    ``resid`` and ``weight`` are (n, m) (weight 0/1 = observed), ``design`` is (m, p); rows
    with no observed entry keep ``previous`` (n, p).
    """
    p = design.shape[1]
    gram = np.einsum("nm,mk,ml->nkl", weight, design, design) + lam * np.eye(p)
    rhs = (weight * resid) @ design
    beta = np.linalg.solve(gram, rhs[..., None])[..., 0]
    has = weight.any(axis=1)
    return np.where(has[:, None], beta, previous)


def als_step(state: ALSState, z: np.ndarray, observed: np.ndarray, lam: float) -> ALSState:
    """One ALS sweep: rows' ``(a, U)``, then columns' ``(c, V)``, then ``mu``.

    Parameters
    ----------
    state : ALSState
    z : ndarray of shape (n_rows, n_cols)
        Standardised scores; any finite value where ``observed`` is false.
    observed : ndarray of bool, same shape
    lam : float
        Ridge penalty on the biases and factors.
    """
    w = observed.astype(np.float64)
    mu, a, c, U, V = state
    ones_c = np.ones((V.shape[0], 1))
    sol = _ridge_block(z - mu - c[None, :], w, np.hstack([ones_c, V]), lam,
                       np.column_stack([a, U]))
    a, U = sol[:, 0], sol[:, 1:]
    ones_r = np.ones((U.shape[0], 1))
    sol = _ridge_block((z - mu - a[:, None]).T, w.T, np.hstack([ones_r, U]), lam,
                       np.column_stack([c, V]))
    c, V = sol[:, 0], sol[:, 1:]
    fit = a[:, None] + c[None, :] + U @ V.T
    mu = float((z - fit)[observed].mean())
    return ALSState(mu, a, c, U, V)


def als_reconstruct(state: ALSState) -> np.ndarray:
    """The completed matrix ``mu + a_i + c_j + U_i . V_j``."""
    return state.mu + state.row_bias[:, None] + state.col_bias[None, :] + state.U @ state.V.T


def fit_als(z: np.ndarray, observed: np.ndarray, *, rank: int = 2, lam: float = 0.1,
            n_iter: int = 40, seed: int = 0, legacy_rng: bool = False) -> ALSState:
    """Run ``n_iter`` ALS sweeps from one random start.

    The start is drawn from ``numpy.random.default_rng(seed)``, or with ``legacy_rng`` from
    ``numpy.random.RandomState(seed)`` as in the authors' ``complete_bias_als`` (their
    predictions are then reproduced to float rounding).
    """
    check_options(rank, lam, n_iter)
    z = np.where(observed, z, 0.0)
    rng = np.random.RandomState(seed) if legacy_rng else np.random.default_rng(seed)
    state = als_init(z, observed, int(rank), rng)
    for _ in range(int(n_iter)):
        state = als_step(state, z, observed, float(lam))
    return state


def complete_als(z: np.ndarray, observed: np.ndarray, *, rank: int = 2, lam: float = 0.1,
                 n_iter: int = 40, n_ensemble: int = 10, seed: int = 42,
                 legacy_rng: bool = False) -> tuple[np.ndarray, list[ALSState]]:
    """Bias-ALS completion averaged over ``n_ensemble`` starts (seeds ``seed + s``).

    Parameters
    ----------
    z : ndarray of shape (n_rows, n_cols)
        Standardised (transformed) scores; entries where ``observed`` is false are ignored.
    observed : ndarray of bool, same shape
    rank : int
        Rank of ``U V^T`` (0 = biases only).
    lam : float
        Ridge penalty.
    n_iter : int
        Sweeps per start (the authors use 40).
    n_ensemble : int
        Random starts averaged (the authors use 10).
    seed : int
        Base seed: same seed, same numbers.
    legacy_rng : bool
        Draw the starts with ``numpy.random.RandomState`` (the authors' generator, see
        :func:`fit_als`) instead of ``numpy.random.default_rng``.

    Returns
    -------
    completed : ndarray of shape (n_rows, n_cols)
        Mean over starts of :func:`als_reconstruct` (every cell, observed ones included).
    states : list of ALSState
        The fitted parameters of each start.
    """
    check_options(rank, lam, n_iter, n_ensemble)
    z = np.asarray(z, dtype=np.float64)
    observed = np.asarray(observed, dtype=bool)
    if z.shape != observed.shape or z.ndim != 2:
        raise ValidationError(f"z and observed must be 2-D of one shape, got {z.shape} "
                              f"and {observed.shape}")
    states = [fit_als(z, observed, rank=rank, lam=lam, n_iter=n_iter, seed=seed + s,
                      legacy_rng=legacy_rng)
              for s in range(int(n_ensemble))]
    completed = np.mean([als_reconstruct(s) for s in states], axis=0)
    return completed, states
