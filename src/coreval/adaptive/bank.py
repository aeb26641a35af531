"""The item bank of an adaptive test: item-parameter draws, summary-score weights, groups.

A bank comes from a fitted IRT model (:meth:`ItemBank.from_fit`, any logistic engine
model, D ≥ 1) or from a model saved by ``coreval fit`` (:meth:`ItemBank.load`). It
keeps ``S`` posterior draws of every item's ``(a, d, c)`` so that the test propagates
item-parameter uncertainty. With D = 1 it precomputes the response probabilities on a
fixed ability grid, ``p[s, g, i] = c + (1 - c) σ(a θ_g + d)``, which every later step
reuses; with D ≥ 2 the nodes follow each test's posterior (adaptive Gauss-Hermite
quadrature around the Laplace approximation, :mod:`coreval.adaptive.laplace`), since a
fixed product grid fine enough for a long test would hold ``S × G^D × N`` probabilities.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from coreval.adaptive.misfit import MISFIT_SHAPES
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.logistic import LOGIT_CLIP

#: Ability grid of the quadrature: ``linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, GRID_NODES)``.
GRID_HALF_WIDTH = 5.0
GRID_NODES = 61
#: Item-parameter draws kept by default (a subsample of the fit's draws).
MAX_DRAWS = 50
#: Gauss-Hermite nodes per dimension of the adaptive quadrature used when D ≥ 2: at most
#: ``LAPLACE_NODES``, and fewer where ``LAPLACE_NODES ** D`` would pass
#: ``LAPLACE_NODE_BUDGET`` nodes per item-parameter draw, but never under
#: ``LAPLACE_MIN_NODES`` (:func:`laplace_nodes`).
LAPLACE_NODES = 7
LAPLACE_NODE_BUDGET = 64
LAPLACE_MIN_NODES = 3


def laplace_nodes(dims: int) -> int:
    """Gauss-Hermite nodes per dimension of the adaptive quadrature for ``dims`` abilities.

    ``max(LAPLACE_MIN_NODES, min(LAPLACE_NODES, ⌊LAPLACE_NODE_BUDGET^(1/D)⌋))``: 7 for
    D = 2 (49 nodes), 4 for D = 3 (64), 3 from D = 4 (81, 243, ...). The nodes are placed
    around the Laplace approximation of each test's posterior and importance-corrected
    (:mod:`coreval.adaptive.laplace`), so few per dimension suffice once the posterior is
    close to Gaussian: ``n`` nodes integrate polynomials of degree ``2n − 1`` exactly
    (Liu & Pierce 1994). The budget keeps a step's cost, which grows with the nodes,
    within a few times that of D = 2.
    """
    if dims < 1:
        raise ValidationError(f"dims must be at least 1, got {dims}")
    per_axis = int(np.floor(LAPLACE_NODE_BUDGET ** (1.0 / dims) + 1e-9))
    return max(LAPLACE_MIN_NODES, min(LAPLACE_NODES, per_axis))


@dataclass(frozen=True, eq=False)
class ItemBank:
    """Items with posterior draws of their 2PL/3PL parameters, for adaptive testing.

    Parameters
    ----------
    items : ndarray of str, shape (N,)
    a : ndarray, shape (S, N), or (S, N, D) for D ≥ 2 latent dimensions
        Draws of the discriminations (loadings).
    d : ndarray, shape (S, N)
        Draws of the intercepts (``logit p = a · θ + d``).
    c : ndarray, shape (S, N), optional
        Draws of the guessing floors (3PL).
    weights : ndarray, shape (N,), optional
        Summary-score weights (the full score is ``Σ_i w_i y_i``); ``1/N`` by default.
    groups : ndarray of str, shape (N,), optional
        Item groups (subtasks), for content balancing.
    tau : float
        Misfit standard deviation of a full score predicted from no answers; a test
        adds ``τ g`` with ``g`` the misfit shape's factor, by default ``ρ``, the share of
        the score still unanswered (:mod:`coreval.adaptive.estimate`; 0 for the pure
        posterior predictive).
    misfit_shape : {"share", "bernoulli-sd", "bernoulli-var"}
        How the misfit scales with the test's state
        (:func:`coreval.adaptive.misfit.misfit_factor`).
    grid : ndarray, shape (G,)
        Ability quadrature nodes (D = 1; with D ≥ 2 each test places its own).
    """

    items: np.ndarray
    a: np.ndarray
    d: np.ndarray
    c: np.ndarray | None = None
    weights: np.ndarray | None = None
    groups: np.ndarray | None = None
    tau: float = 0.0
    misfit_shape: str = "share"
    grid: np.ndarray = field(
        default_factory=lambda: np.linspace(-GRID_HALF_WIDTH, GRID_HALF_WIDTH, GRID_NODES))

    def __post_init__(self) -> None:
        items = np.asarray(self.items).astype(str)
        a = np.asarray(self.a, dtype=float)
        a = a[None] if a.ndim == 1 else a
        if a.ndim == 3 and a.shape[2] == 1:
            a = a[:, :, 0]
        d = np.atleast_2d(np.asarray(self.d, dtype=float))
        n = len(items)
        if a.ndim not in (2, 3) or a.shape[:2] != d.shape or d.shape[1] != n:
            raise ValidationError(f"item bank: a {a.shape} must be (draws, {n} items) or "
                                  f"(draws, {n} items, dims), and d {d.shape} (draws, {n} "
                                  f"items)")
        if len(set(items)) != n:
            raise ValidationError("item bank: duplicate item ids")
        c = None if self.c is None else np.broadcast_to(
            np.asarray(self.c, dtype=float), d.shape).copy()
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
        if self.misfit_shape not in MISFIT_SHAPES:
            raise ValidationError(f"item bank: misfit_shape must be one of "
                                  f"{', '.join(MISFIT_SHAPES)}, got {self.misfit_shape!r}")
        for name, value in (("items", items), ("a", a), ("d", d), ("c", c), ("weights", w),
                            ("groups", groups), ("grid", np.asarray(self.grid, float))):
            object.__setattr__(self, name, value)
        # (S, G, N) on the fixed grid (D = 1); None with D >= 2 (nodes per test)
        object.__setattr__(self, "probs",
                           self.probs_at(self.grid) if self.dims == 1 else None)
        # Criteria of the named rules before any answer: the same for every test of the
        # bank, so computed once (next_items fills it).
        object.__setattr__(self, "prior_criteria", {})

    @property
    def dims(self) -> int:
        """Latent dimensions D of the bank's model."""
        return 1 if self.a.ndim == 2 else self.a.shape[2]

    def probs_at(self, theta: np.ndarray | float) -> np.ndarray:
        """``P(correct)`` of every item under every draw at abilities ``theta``.

        ``c + (1 - c) σ(a · θ + d)`` (2PL without ``c``), clipped to ``[1e-9, 1 - 1e-9]``
        as the node probabilities are. D = 1: ``theta`` a scalar (result ``(S, N)``) or
        ``(G,)`` (``(S, G, N)``); D ≥ 2: ``(D,)`` or ``(G, D)``, the same shapes.
        """
        t = np.asarray(theta, dtype=float)
        single = t.ndim == (0 if self.dims == 1 else 1)
        if self.dims == 1:
            z = self.a[:, None, :] * np.atleast_1d(t)[None, :, None] + self.d[:, None, :]
        else:
            nodes = np.atleast_2d(t)
            if nodes.ndim != 2 or nodes.shape[1] != self.dims:
                raise ValidationError(f"abilities must have {self.dims} coordinates, got "
                                      f"shape {t.shape}")
            z = np.matmul(nodes, self.a.transpose(0, 2, 1)) + self.d[:, None, :]
        p = expit(np.clip(z, -LOGIT_CLIP, LOGIT_CLIP))
        if self.c is not None:
            p = self.c[:, None, :] + (1.0 - self.c[:, None, :]) * p
        p = np.clip(p, 1e-9, 1.0 - 1e-9)
        return p[:, 0, :] if single else p

    @property
    def log_probs(self) -> tuple[np.ndarray, np.ndarray]:
        """``(log p, log(1 - p))`` on the fixed grid (D = 1), computed on first use and kept.

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
                 max_draws: int = MAX_DRAWS, tau: float = 0.0,
                 misfit_shape: str = "share") -> ItemBank:
        """A bank from a fitted logistic IRT model (:class:`coreval.irt.IRTFit`), D ≥ 1.

        Parameters
        ----------
        irt_fit : IRTFit
        matrix : ScoreMatrix, optional
            The source matrix: its item weights (summary score) and groups are used.
        max_draws : int
            Item-parameter draws kept (evenly spaced over the fit's draws).
        tau : float
            Misfit standard deviation of the full score (see :class:`ItemBank`).
        misfit_shape : str
            How the misfit scales with the test's state (see :class:`ItemBank`).
        """
        from coreval.irt.spec import get_spec

        spec = get_spec(irt_fit.link)
        if not spec.logistic:
            raise ValidationError(f"adaptive testing needs a logistic IRT model (1pl, 2pl, 3pl); "
                                  f"the fit is {irt_fit.link!r}")
        draws = irt_fit.item_draws()
        d = np.asarray(draws["d"], dtype=float)
        a = draws.get("a")
        if a is None:
            a = np.ones_like(d)
        elif irt_fit.dims == 1:
            a = np.asarray(a, dtype=float).reshape(d.shape)
        else:
            a = np.asarray(a, dtype=float).reshape(*d.shape, irt_fit.dims)
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
                   weights=weights, groups=groups, tau=tau, misfit_shape=misfit_shape)

    @classmethod
    def load(cls, path: str | os.PathLike, **kwargs) -> ItemBank:
        """A bank from a model saved by ``coreval fit`` (``models/NAME``)."""
        from coreval.irt.result import IRTFit

        return cls.from_fit(IRTFit.load(path), **kwargs)
