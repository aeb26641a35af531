"""The item bank of an adaptive test: item-parameter draws, summary-score weights, groups.

A bank comes from a fitted IRT model (:meth:`ItemBank.from_fit`, any logistic engine
model with D = 1) or from a model saved by ``coreval fit`` (:meth:`ItemBank.load`). It
keeps ``S`` posterior draws of every item's ``(a, d, c)`` so that the test propagates
item-parameter uncertainty, and precomputes the response probabilities on the ability
grid, ``p[s, g, i] = c + (1 - c) σ(a θ_g + d)``, which every later step reuses.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.logistic import LOGIT_CLIP

#: Ability grid of the quadrature: ``linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, GRID_NODES)``.
GRID_HALF_WIDTH = 5.0
GRID_NODES = 61
#: Item-parameter draws kept by default (a subsample of the fit's draws).
MAX_DRAWS = 50


@dataclass(frozen=True, eq=False)
class ItemBank:
    """Items with posterior draws of their 2PL/3PL parameters, for adaptive testing.

    Parameters
    ----------
    items : ndarray of str, shape (N,)
    a, d : ndarray, shape (S, N)
        Draws of discriminations and intercepts (``logit p = a θ + d``).
    c : ndarray, shape (S, N), optional
        Draws of the guessing floors (3PL).
    weights : ndarray, shape (N,), optional
        Summary-score weights (the full score is ``Σ_i w_i y_i``); ``1/N`` by default.
    groups : ndarray of str, shape (N,), optional
        Item groups (subtasks), for content balancing.
    tau : float
        Misfit standard deviation of a full score predicted from no answers; a test
        adds ``τ ρ`` with ``ρ`` the share of the score still unanswered
        (:mod:`coreval.adaptive.estimate`; 0 for the pure posterior predictive).
    grid : ndarray, shape (G,)
        Ability quadrature nodes.
    """

    items: np.ndarray
    a: np.ndarray
    d: np.ndarray
    c: np.ndarray | None = None
    weights: np.ndarray | None = None
    groups: np.ndarray | None = None
    tau: float = 0.0
    grid: np.ndarray = field(
        default_factory=lambda: np.linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, GRID_NODES))

    def __post_init__(self) -> None:
        items = np.asarray(self.items).astype(str)
        a = np.atleast_2d(np.asarray(self.a, dtype=float))
        d = np.atleast_2d(np.asarray(self.d, dtype=float))
        n = len(items)
        if a.shape != d.shape or a.shape[1] != n:
            raise ValidationError(f"item bank: a {a.shape} and d {d.shape} must both be "
                                  f"(draws, {n} items)")
        if len(set(items)) != n:
            raise ValidationError("item bank: duplicate item ids")
        c = None if self.c is None else np.broadcast_to(
            np.asarray(self.c, dtype=float), a.shape).copy()
        params = [a, d] + ([] if c is None else [c])
        if not all(np.isfinite(v).all() for v in params):
            raise ValidationError("item bank: item parameters must be finite")
        w = np.full(n, 1.0 / n) if self.weights is None else np.asarray(self.weights, float)
        if w.shape != (n,) or not np.isfinite(w).all() or (w < 0).any():
            raise ValidationError(f"item bank: weights must be {n} non-negative numbers")
        groups = None if self.groups is None else np.asarray(self.groups).astype(str)
        if groups is not None and groups.shape != (n,):
            raise ValidationError(f"item bank: groups must have {n} entries")
        if not np.isfinite(self.tau) or self.tau < 0:
            raise ValidationError(f"item bank: tau must be >= 0, got {self.tau}")
        for name, value in (("items", items), ("a", a), ("d", d), ("c", c), ("weights", w),
                            ("groups", groups), ("grid", np.asarray(self.grid, float))):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "probs", self.probs_at(self.grid))  # (S, G, N)
        # Criteria of the named rules before any answer: the same for every test of the
        # bank, so computed once (next_items fills it).
        object.__setattr__(self, "prior_criteria", {})

    def probs_at(self, theta: np.ndarray | float) -> np.ndarray:
        """``P(correct)`` of every item under every draw at abilities ``theta``.

        ``c + (1 - c) σ(a θ + d)`` (2PL without ``c``), clipped to ``[1e-9, 1 - 1e-9]``
        as the node probabilities are; shape ``(S, len(theta), N)``, or ``(S, N)`` for a
        scalar ``theta``.
        """
        t = np.asarray(theta, dtype=float)
        z = np.clip(self.a[:, None, :] * np.atleast_1d(t)[None, :, None]
                    + self.d[:, None, :], -LOGIT_CLIP, LOGIT_CLIP)
        p = expit(z)
        if self.c is not None:
            p = self.c[:, None, :] + (1.0 - self.c[:, None, :]) * p
        p = np.clip(p, 1e-9, 1.0 - 1e-9)
        return p[:, 0, :] if t.ndim == 0 else p

    @property
    def log_probs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(log p, log(1 - p))`` on the nodes, computed on first use and kept.

        The KL rule reads them at every step; most rules never need them, so they are
        not made with ``probs``.
        """
        cached = self.__dict__.get("_log_probs")
        if cached is None:
            cached = (np.log(self.probs), np.log1p(-self.probs))
            object.__setattr__(self, "_log_probs", cached)
        return cached

    @property
    def n_items(self) -> int:
        return len(self.items)

    @property
    def n_draws(self) -> int:
        return self.a.shape[0]

    def positions(self, ids) -> np.ndarray:
        """Positions of item ids; unknown ids raise naming them."""
        lookup = {v: i for i, v in enumerate(self.items)}
        ids = np.atleast_1d(np.asarray(ids)).astype(str)
        unknown = [v for v in ids if v not in lookup]
        if unknown:
            raise ValidationError(f"items not in the bank: {', '.join(unknown[:5])}")
        return np.array([lookup[v] for v in ids], dtype=np.intp)

    @classmethod
    def from_fit(cls, irt_fit, matrix: ScoreMatrix | None = None, *,
                 max_draws: int = MAX_DRAWS, tau: float = 0.0) -> ItemBank:
        """A bank from a fitted 1-D logistic IRT model (:class:`coreval.irt.IRTFit`).

        Parameters
        ----------
        irt_fit : IRTFit
        matrix : ScoreMatrix, optional
            The source matrix: its item weights (summary score) and groups are used.
        max_draws : int
            Item-parameter draws kept (evenly spaced over the fit's draws).
        tau : float
            Misfit standard deviation of the full score (see :class:`ItemBank`).
        """
        from coreval.irt.spec import get_spec

        spec = get_spec(irt_fit.link)
        if not spec.logistic:
            raise ValidationError(f"adaptive testing needs a logistic IRT model (1pl, 2pl, 3pl); "
                                  f"the fit is {irt_fit.link!r}")
        if irt_fit.dims != 1:
            raise ValidationError(f"adaptive testing by quadrature needs a 1-D model; the fit "
                                  f"has {irt_fit.dims} dimensions")
        draws = irt_fit.item_draws()
        d = np.asarray(draws["d"], dtype=float)
        a = draws.get("a")
        a = np.ones_like(d) if a is None else np.asarray(a, dtype=float).reshape(d.shape)
        c = spec.guessing(draws)
        c = None if c is None else np.broadcast_to(np.asarray(c, dtype=float), d.shape)
        keep = np.unique(np.linspace(0, d.shape[0] - 1, min(max_draws, d.shape[0])).round()
                         .astype(int))
        items = np.asarray(irt_fit.items["item"]).astype(str)
        weights = groups = None
        if matrix is not None:
            if list(matrix.items.astype(str)) != list(items):
                raise ValidationError("the matrix's items are not those of the IRT fit")
            weights, groups = matrix.item_weights(), matrix.groups
        return cls(items=items, a=a[keep], d=d[keep], c=None if c is None else c[keep],
                   weights=weights, groups=groups, tau=tau)

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs) -> ItemBank:
        """A bank from a model saved by ``coreval fit`` (``models/NAME``)."""
        from coreval.irt.result import IRTFit

        return cls.from_fit(IRTFit.load(path), **kwargs)
