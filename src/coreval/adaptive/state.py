"""The state of an adaptive test and its two pure transitions, :func:`init` and :func:`update`.

The posterior of a new model is kept on the nodes ``(s, g)`` of item-parameter draw ``s``
and ability grid node ``θ_g``:

    π(s, g) ∝ (1/S) N(θ_g; 0, 1) Π_{i asked} p_{s,g,i}^{y_i} (1 - p_{s,g,i})^{1 - y_i},

the joint posterior of (item parameters, ability) given the source fit and the new
model's answers, by quadrature over θ (Bock & Mislevy 1982) and the fit's draws over
the item parameters. Item-parameter uncertainty is therefore propagated, and answers
that some draws explain better shift the weight towards those draws.

With D = 1 the nodes are the bank's fixed grid and :func:`update` adds the answers'
log-likelihood to the weights. With D ≥ 2 abilities are vectors and each update moves
the nodes to where the posterior now is (:mod:`coreval.adaptive.laplace`: adaptive
Gauss-Hermite quadrature around the Laplace approximation, with the same joint
posterior over draws and nodes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from coreval.adaptive.bank import ItemBank
from coreval.adaptive.laplace import adaptive_nodes
from coreval.errors import ValidationError


@dataclass(frozen=True, eq=False)
class AdaptiveState:
    """An adaptive test in progress (immutable; :func:`update` returns a new one).

    Attributes
    ----------
    bank : ItemBank
    asked : ndarray of int
        Positions of the items answered so far, in order.
    responses : ndarray of float
        The answers (0/1), aligned with ``asked``.
    log_weight : ndarray, shape (S, G)
        Unnormalised log posterior on the nodes.
    exposure_draw : ndarray, shape (N,)
        This test's Sympson-Hetter draws ``u_i ~ U(0, 1)``, one per item, made once by
        :func:`init`: under exposure control an item is administered only when
        ``u_i < k_i`` (:func:`coreval.adaptive.next_items`), so an item passed over
        once stays passed over for the rest of the test (Sympson & Hetter 1985).
    nodes : ndarray, shape (G, D)
        The ability nodes (the bank's grid when D = 1).
    probs : ndarray, shape (S, G, N)
        ``P(correct)`` of every item on every (draw, node) (the bank's table when D = 1).
    """

    bank: ItemBank
    asked: np.ndarray
    responses: np.ndarray
    log_weight: np.ndarray
    exposure_draw: np.ndarray
    nodes: np.ndarray
    probs: np.ndarray

    @property
    def n_asked(self) -> int:
        return len(self.asked)

    @property
    def unasked(self) -> np.ndarray:
        """Positions of the items not answered yet."""
        mask = np.ones(self.bank.n_items, dtype=bool)
        mask[self.asked] = False
        return np.flatnonzero(mask)

    def administrable(self, exposure: np.ndarray | None = None) -> np.ndarray:
        """Positions of the unasked items this test may still administer.

        With Sympson-Hetter parameters ``exposure`` (``k_i``), item ``i`` is allowed when
        the test's draw ``exposure_draw[i] < k_i``; without, every unasked item is.
        """
        rest = self.unasked
        if exposure is None:
            return rest
        return rest[self.exposure_draw[rest] < np.asarray(exposure, dtype=float)[rest]]

    def weights(self) -> np.ndarray:
        """The normalised posterior ``π`` (S, G)."""
        w = np.exp(self.log_weight - self.log_weight.max())
        return w / w.sum()

    @property
    def log_probs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(log p, log(1 - p))`` on the nodes (the bank's cached pair when D = 1)."""
        if self.bank.dims == 1:
            return self.bank.log_probs
        return np.log(self.probs), np.log1p(-self.probs)

    def theta_moments(self) -> tuple[float, float] | tuple[np.ndarray, np.ndarray]:
        """Posterior mean and standard deviation of the ability.

        Floats when D = 1; arrays of the D coordinates' means and SDs otherwise.
        """
        marginal = self.weights().sum(axis=0)
        if self.bank.dims == 1:  # on the grid vector, so D = 1 keeps its exact numbers
            grid = self.bank.grid
            mean = float(marginal @ grid)
            return mean, float(np.sqrt(max(0.0, marginal @ (grid - mean) ** 2)))
        mean = marginal @ self.nodes
        return mean, np.sqrt(np.maximum(0.0, marginal @ (self.nodes - mean) ** 2))

    def theta_covariance(self) -> np.ndarray:
        """Posterior covariance ``(D, D)`` of the ability."""
        marginal = self.weights().sum(axis=0)
        centred = self.nodes - marginal @ self.nodes
        return (marginal[:, None] * centred).T @ centred


def init(bank: ItemBank, *, seed: int = 0) -> AdaptiveState:
    """The state before any answer: the N(0, 1) ability prior times uniform draw weights.

    ``seed`` fixes the test's Sympson-Hetter draws (``AdaptiveState.exposure_draw``);
    give each test its own seed when exposure control is on.
    """
    asked, responses = np.empty(0, dtype=np.intp), np.empty(0)
    if bank.dims == 1:
        nodes, probs = bank.grid[:, None], bank.probs
        log_weight = np.broadcast_to(-0.5 * bank.grid**2, (bank.n_draws, len(bank.grid))).copy()
    else:
        nodes, probs, log_weight = adaptive_nodes(bank, asked, responses, np.zeros(bank.dims))
    return AdaptiveState(bank=bank, asked=asked, responses=responses, log_weight=log_weight,
                         exposure_draw=np.random.default_rng(seed).random(bank.n_items),
                         nodes=nodes, probs=probs)


def update(state: AdaptiveState, items, responses) -> AdaptiveState:
    """The state after answers ``responses`` (0/1) to ``items`` (ids or positions).

    Raises
    ------
    ValidationError
        Unknown items, items already answered (or repeated), answers that are not 0/1,
        or lengths that differ.
    """
    bank = state.bank
    items = np.atleast_1d(np.asarray(items))
    positions = (items.astype(np.intp) if np.issubdtype(items.dtype, np.integer)
                 else bank.positions(items))
    if ((positions < 0) | (positions >= bank.n_items)).any():
        raise ValidationError(f"item positions must be in [0, {bank.n_items})")
    y = np.atleast_1d(np.asarray(responses, dtype=float))
    if y.shape != positions.shape:
        raise ValidationError(f"{len(positions)} items but {len(y)} responses")
    if not np.isin(y, (0.0, 1.0)).all():
        bad = [f"{bank.items[i]}={v:g}" for i, v in zip(positions, y, strict=True)
               if v not in (0.0, 1.0)]
        raise ValidationError(f"adaptive responses must be 0 or 1; got {', '.join(bad[:5])}")
    repeated = set(positions.tolist()) & set(state.asked.tolist())
    if repeated or len(set(positions.tolist())) != len(positions):
        names = sorted(bank.items[list(repeated)] if repeated else bank.items[positions])
        raise ValidationError(f"items answered twice: {', '.join(names[:5])}")
    asked = np.concatenate([state.asked, positions])
    answers = np.concatenate([state.responses, y])
    if bank.dims > 1:
        mean, _ = state.theta_moments()
        nodes, probs, log_weight = adaptive_nodes(bank, asked, answers, mean)
        return replace(state, asked=asked, responses=answers, log_weight=log_weight,
                       nodes=nodes, probs=probs)
    p = bank.probs[:, :, positions]                              # (S, G, b)
    loglik = np.log(np.where(y == 1.0, p, 1.0 - p)).sum(axis=2)   # (S, G)
    return replace(state, asked=asked, responses=answers, log_weight=state.log_weight + loglik)
