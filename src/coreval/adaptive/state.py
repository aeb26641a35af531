"""The state of an adaptive test and its two pure transitions, :func:`init` and :func:`update`.

The posterior of a new model is kept on the nodes ``(s, g)`` of item-parameter draw ``s``
and ability grid node ``θ_g``:

    π(s, g) ∝ (1/S) N(θ_g; 0, 1) Π_{i asked} p_{s,g,i}^{y_i} (1 - p_{s,g,i})^{1 - y_i},

the joint posterior of (item parameters, ability) given the source fit and the new
model's answers, by quadrature over θ (Bock & Mislevy 1982) and the fit's draws over
the item parameters. Item-parameter uncertainty is therefore propagated, and answers
that some draws explain better shift the weight towards those draws.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from coreval.adaptive.bank import ItemBank
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
    """

    bank: ItemBank
    asked: np.ndarray
    responses: np.ndarray
    log_weight: np.ndarray
    exposure_draw: np.ndarray

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

    def theta_moments(self) -> tuple[float, float]:
        """Posterior mean and standard deviation of the ability."""
        marginal = self.weights().sum(axis=0)
        grid = self.bank.grid
        mean = float(marginal @ grid)
        return mean, float(np.sqrt(max(0.0, marginal @ (grid - mean) ** 2)))


def init(bank: ItemBank, *, seed: int = 0) -> AdaptiveState:
    """The state before any answer: the N(0, 1) ability prior times uniform draw weights.

    ``seed`` fixes the test's Sympson-Hetter draws (``AdaptiveState.exposure_draw``);
    give each test its own seed when exposure control is on.
    """
    prior = -0.5 * bank.grid**2
    log_weight = np.broadcast_to(prior, (bank.n_draws, len(bank.grid))).copy()
    return AdaptiveState(bank=bank, asked=np.empty(0, dtype=np.intp),
                         responses=np.empty(0), log_weight=log_weight,
                         exposure_draw=np.random.default_rng(seed).random(bank.n_items))


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
    p = bank.probs[:, :, positions]                              # (S, G, b)
    loglik = np.log(np.where(y == 1.0, p, 1.0 - p)).sum(axis=2)   # (S, G)
    return replace(state, asked=np.concatenate([state.asked, positions]),
                   responses=np.concatenate([state.responses, y]),
                   log_weight=state.log_weight + loglik)
