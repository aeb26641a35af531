"""Source/target splits of the models (rows) of a score matrix.

A :class:`Split` holds row positions: *source* models are those whose full
scores are known (selectors and predictors are fitted on them), *target* models
are the "new" models whose full score is predicted from their coreset scores.

Four kinds are provided:

``"binned"``
    The accuracy-stratified split of Bowyer et al.'s mrmr_eval
    (``binned_interpolation``), reproduced index-for-index including order.
``"random"``
    A seeded uniformly random source set; every other model is a target.
``"kfold"``
    The 10-fold cross-validation of Smola's benchmark-selection code
    (``cv_split.py``), reproduced index-for-index including order.
``"lofo"``
    Leave-one-family-out: each model family in turn is the target set.

References
----------
Bowyer, S. et al. "Efficient Benchmarking Is Just Feature Selection and Multiple
Regression" — code ``sambowyer/mrmr_eval``, ``MethodRunner._compute_split``.
Smola, A. "Submodular Benchmark Selection" (2026) — code
``smolix/benchmark-selection``, ``code/cv_split.py``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError, preview

SplitKind = Literal["binned", "random", "kfold", "lofo"]
KINDS: tuple[str, ...] = ("binned", "random", "kfold", "lofo")

#: Default number of source models of the ``binned`` split (the mrmr_eval paper setting).
DEFAULT_BINNED_SOURCE = 30
#: Number of equal-width accuracy bins of the ``binned`` split.
N_BINS = 10


@dataclass(frozen=True, eq=False)
class Split:
    """Row positions of source and target models.

    Attributes
    ----------
    source : ndarray of int
        Row positions of the source (training) models, in the order the
        protocol produces them (the order matters for reference reproductions).
    target : ndarray of int
        Row positions of the target (held-out) models.
    kind : str
        The split kind that made it (``binned``, ``random``, ``kfold``, ``lofo``).
    seed : int
        The random seed (for ``kfold``: the fold index).
    fold : int or None
        Fold index (``kfold``) or family index in sorted label order (``lofo``).
    label : str or None
        The held-out family (``lofo``); ``None`` otherwise.
    """

    source: np.ndarray
    target: np.ndarray
    kind: str
    seed: int
    fold: int | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        for name in ("source", "target"):
            arr = np.asarray(getattr(self, name), dtype=np.intp).ravel()
            arr.setflags(write=False)
            object.__setattr__(self, name, arr)
        if np.intersect1d(self.source, self.target).size:
            raise ValidationError("split source and target models overlap")

    @property
    def n_source(self) -> int:
        return len(self.source)

    @property
    def n_target(self) -> int:
        return len(self.target)

    def apply(self, matrix: ScoreMatrix) -> tuple[ScoreMatrix, ScoreMatrix]:
        """The (source, target) sub-matrices of ``matrix`` (rows in split order)."""
        return matrix.take(self.source), matrix.take(self.target)

    def __repr__(self) -> str:
        extra = f", fold={self.fold}" if self.fold is not None else ""
        extra += f", label={self.label!r}" if self.label is not None else ""
        return (f"Split(kind={self.kind!r}, seed={self.seed}{extra}, "
                f"{self.n_source} source, {self.n_target} target)")


# ---------------------------------------------------------------------------- binned
def _binned_accuracy(matrix: ScoreMatrix) -> np.ndarray:
    """Per-model accuracy used for binning.

    mrmr_eval casts the score matrix to float32 and takes the row mean with
    numpy's float32 pairwise summation; the bin edges are built from these
    float32 values, so we compute them the same way to reproduce the splits
    bit-for-bit. With missing entries the float32 ``nanmean`` is used; with item
    groups the (float64) group-weighted summary score.
    """
    if matrix.groups is not None and len(np.unique(matrix.groups)) > 1:
        return matrix.summary_scores()
    y32 = matrix.values.astype(np.float32)
    if matrix.fully_observed:
        return y32.mean(axis=1)
    return np.nanmean(y32, axis=1)


def _binned(matrix: ScoreMatrix, seed: int, n_source: int) -> Split:
    """The ``binned_interpolation`` split of mrmr_eval (its PROTOCOL.md §4a).

    Notes
    -----
    Hand-written rather than via a library because the reference draws from the
    legacy global ``np.random`` state in a specific order (one shuffle per bin,
    including empty ones, then ``choice`` draws for bonus slots); we use a
    private ``RandomState(seed)``, which produces the identical stream, so the
    exact reference index lists (and their order) are reproduced.
    """
    acc = _binned_accuracy(matrix)
    if np.isnan(acc).any():
        raise ValidationError("binned split needs at least one observed score per model")
    rs = np.random.RandomState(seed)  # legacy RNG: exact reproduction of np.random.seed(s)
    edges = np.linspace(float(acc.min()), float(acc.max()) + 1e-10, N_BINS + 1)
    bin_id = np.clip(np.digitize(acc, edges) - 1, 0, N_BINS - 1)
    bins: list[list[int]] = [np.flatnonzero(bin_id == b).tolist() for b in range(N_BINS)]
    for b in range(N_BINS):
        rs.shuffle(bins[b])  # shuffles every bin, empty ones included (consumes no draws)
    non_empty = [b for b in range(N_BINS) if bins[b]]
    per_bin, rem = divmod(n_source, len(non_empty))
    bonus = set(rs.choice(len(non_empty), size=rem, replace=False).tolist()) if rem else set()
    quota = {b: min(per_bin + (j in bonus), len(bins[b])) for j, b in enumerate(non_empty)}
    while sum(quota.values()) < n_source:
        expandable = [b for b in non_empty if quota[b] < len(bins[b])]
        if not expandable:
            break
        deficit = n_source - sum(quota.values())
        extra_per, extra_rem = divmod(deficit, len(expandable))
        bonus_exp = (set(rs.choice(len(expandable), size=extra_rem, replace=False).tolist())
                     if extra_rem else set())
        for j, b in enumerate(expandable):
            quota[b] += min(extra_per + (j in bonus_exp), len(bins[b]) - quota[b])
    source = [m for b in non_empty for m in bins[b][: quota[b]]]
    target = np.setdiff1d(np.arange(matrix.n_models), source)
    return Split(np.array(source, dtype=np.intp), target, "binned", int(seed))


# ---------------------------------------------------------------------------- others
def _random(matrix: ScoreMatrix, seed: int, n_source: int) -> Split:
    """A seeded random source set of ``n_source`` models (ascending); the rest are targets."""
    perm = np.random.default_rng(seed).permutation(matrix.n_models)
    return Split(np.sort(perm[:n_source]), np.sort(perm[n_source:]), "random", int(seed))


def _kfold(matrix: ScoreMatrix, folds: int, holdout: float, split_seed: int) -> list[Split]:
    """All folds of benchmark-selection's ``cv_split.py`` (its PROTOCOL.md §2).

    ``perm = default_rng(split_seed).permutation(M)``, ``array_split`` into
    ``folds``; the source of fold ``f`` is the other folds concatenated in fold
    order, subsampled to ``min(round((1 - holdout) M), len(pool))`` models with
    ``default_rng((split_seed, f, int(holdout * 10000))).permutation(pool)``
    when the pool is larger. Target = fold ``f`` in permutation order.
    """
    m = matrix.n_models
    if not 2 <= folds <= m:
        raise ValidationError(f"folds must be between 2 and the number of models ({m}), "
                              f"got {folds}")
    perm = np.random.default_rng(split_seed).permutation(m)
    parts = np.array_split(perm, folds)
    n_train = round((1 - holdout) * m)  # Python round (banker's), as in the reference
    out = []
    for f in range(folds):
        pool = np.concatenate([parts[j] for j in range(folds) if j != f])
        n = min(n_train, len(pool))
        if n >= len(pool):
            train = pool
        else:
            key = (split_seed, f, int(holdout * 10000))
            train = np.random.default_rng(key).permutation(pool)[:n]
        _check_n_source(len(train), f"kfold fold {f}")
        out.append(Split(train, parts[f], "kfold", f, fold=f))
    return out


def _family_labels(matrix: ScoreMatrix) -> np.ndarray:
    fam = matrix.families
    if fam is None:
        raise ValidationError("lofo split needs model families: model_meta has no 'family' column")
    missing = pd.isna(fam) | (pd.Series(fam).astype(str).str.strip() == "").to_numpy()
    if missing.any():
        raise ValidationError(f"models without a family label: {preview(matrix.models[missing])}")
    return np.asarray(fam).astype(str)


def family_folds(families: np.ndarray, targets: np.ndarray | None = None
                 ) -> list[tuple[str, np.ndarray, np.ndarray]]:
    """Leave-one-family-out folds: ``(family, other positions, target positions)``.

    Parameters
    ----------
    families : ndarray of str
        The family of each model.
    targets : bool ndarray, optional
        Which models are evaluated (default: all). Only families with a target
        get a fold.

    Returns
    -------
    list of (family, others, targets)
        ``others`` are all models outside the family, ``targets`` its evaluated models.
    """
    fam = np.asarray(families).astype(str)
    is_target = np.ones(len(fam), bool) if targets is None else np.asarray(targets, bool)
    return [(str(f), np.flatnonzero(fam != f), np.flatnonzero((fam == f) & is_target))
            for f in np.unique(fam[is_target]).tolist()]


def _lofo(matrix: ScoreMatrix, seed: int, n_source: int | None) -> list[Split]:
    """One split per family: target = that family, source = the other models (or a subsample)."""
    fam = _family_labels(matrix)
    if len(np.unique(fam)) < 2:
        raise ValidationError(f"lofo split needs at least 2 families, got {len(np.unique(fam))}")
    out = []
    for i, (label, others, target) in enumerate(family_folds(fam)):
        if n_source is not None:
            if n_source > len(others):
                raise ValidationError(
                    f"n_source={n_source} exceeds the {len(others)} models outside family "
                    f"{label!r}")
            others = np.sort(np.random.default_rng(seed).choice(others, n_source, replace=False))
        _check_n_source(len(others), f"lofo family {label!r}")
        out.append(Split(others, target, "lofo", int(seed), fold=i, label=str(label)))
    return out


# ---------------------------------------------------------------------------- checks
def _check_n_source(n: int, where: str) -> None:
    if n < 2:
        raise ValidationError(f"{where}: too few source models ({n}); need at least 2")


def _resolve_n_source(matrix: ScoreMatrix, kind: str, n_source: int | None,
                      holdout: float) -> int:
    m = matrix.n_models
    if n_source is None:
        n_source = (min(DEFAULT_BINNED_SOURCE, m - 1) if kind == "binned"
                    else m - max(1, round(holdout * m)))
    if isinstance(n_source, bool) or not isinstance(n_source, int | np.integer):
        raise ValidationError(f"n_source must be an integer, got {n_source!r}")
    n_source = int(n_source)
    _check_n_source(n_source, f"{kind} split")
    if n_source > m - 1:
        raise ValidationError(
            f"n_source={n_source} leaves no target model: the matrix has {m} models "
            f"(at most {m - 1} source models)")
    return n_source


def _check_common(matrix: ScoreMatrix, kind: str, holdout: float) -> None:
    if not isinstance(matrix, ScoreMatrix):
        raise ValidationError(f"expected a ScoreMatrix, got {type(matrix).__name__}")
    if kind not in KINDS:
        raise ValidationError(f"unknown split kind {kind!r}; expected one of {', '.join(KINDS)}")
    if not 0.0 < holdout < 1.0:
        raise ValidationError(f"holdout must be in (0, 1), got {holdout}")
    if matrix.n_models < 3:
        raise ValidationError(f"need at least 3 models to split (2 source + 1 target), "
                              f"got {matrix.n_models}")


def _check_seed(seed, kind: str) -> int:
    if seed is None or isinstance(seed, bool) or not isinstance(seed, int | np.integer):
        raise ValidationError(f"{kind} split needs an integer seed, got {seed!r}")
    if seed < 0:
        raise ValidationError(f"seed must be non-negative, got {seed}")
    return int(seed)


# ---------------------------------------------------------------------------- public
def make_split(matrix: ScoreMatrix, kind: SplitKind, *, seed: int | None,
               n_source: int | None = None, folds: int = 10, holdout: float = 0.1,
               split_seed: int = 42) -> Split | list[Split]:
    """Split the models of ``matrix`` into source and target sets.

    Parameters
    ----------
    matrix : ScoreMatrix
        The full score matrix.
    kind : {"binned", "random", "kfold", "lofo"}
        ``binned``: mrmr_eval's accuracy-stratified split (10 equal-width bins of
        the float32 row mean; source near-uniform over the accuracy range,
        ordered by bin; target = all other models ascending).
        ``random``: ``default_rng(seed)`` permutation, first ``n_source``
        models are the source (both sets ascending).
        ``kfold``: benchmark-selection's 10-fold CV (see :func:`_kfold`).
        ``lofo``: leave-one-family-out over ``model_meta['family']``.
    seed : int or None
        Random seed. ``binned`` and ``random`` require it; ``lofo`` uses it only
        to subsample ``n_source`` source models (``None`` → 0); ``kfold``
        ignores it (its folds are fixed by ``split_seed``).
    n_source : int, optional
        Number of source models. Default: 30 for ``binned`` (the paper setting,
        capped at ``M - 1``), ``M - max(1, round(holdout M))`` for ``random``,
        all non-family models for ``lofo``. Not used by ``kfold`` (use
        ``holdout``); passing it there raises.
    folds : int
        Number of folds of ``kfold``.
    holdout : float
        ``kfold``: the holdout fraction of the reference (``n_train =
        min(round((1 - holdout) M), len(pool))``); ``random``: the default
        target fraction.
    split_seed : int
        Seed of the ``kfold`` permutation and subsampling (42 in the reference).

    Returns
    -------
    Split or list of Split
        A single :class:`Split` for ``binned`` and ``random``; the list of all
        ``folds`` splits for ``kfold``; one split per family (sorted labels) for
        ``lofo``.

    Raises
    ------
    ValidationError
        Unknown kind, fewer than 2 source models, ``n_source`` larger than the
        available models, missing family labels.

    References
    ----------
    mrmr_eval ``MethodRunner._compute_split`` (mode ``binned_interpolation``);
    benchmark-selection ``code/cv_split.py``.
    """
    _check_common(matrix, kind, holdout)
    if kind == "kfold":
        if n_source is not None:
            raise ValidationError("n_source does not apply to kfold splits; use holdout")
        return _kfold(matrix, folds, holdout, split_seed)
    if kind == "lofo":
        seed = 0 if seed is None else _check_seed(seed, kind)
        if n_source is not None:
            n_source = _resolve_n_source(matrix, kind, n_source, holdout)
        return _lofo(matrix, seed, n_source)
    seed = _check_seed(seed, kind)
    n = _resolve_n_source(matrix, kind, n_source, holdout)
    return _binned(matrix, seed, n) if kind == "binned" else _random(matrix, seed, n)


def iter_splits(matrix: ScoreMatrix, kind: SplitKind, *, seeds: Iterable[int] | None,
                n_source: int | None = None, folds: int = 10, holdout: float = 0.1,
                split_seed: int = 42) -> list[Split]:
    """All splits of an experiment: one per seed (and per fold / family).

    Parameters
    ----------
    matrix, kind, n_source, folds, holdout, split_seed
        As in :func:`make_split`.
    seeds : iterable of int or None
        ``binned`` / ``random``: one split per seed (required).
        ``kfold``: ``None`` → all folds; otherwise the fold indices to keep
        (each in ``0..folds-1``), in the given order.
        ``lofo``: one full set of family splits per seed (``None`` → seed 0).

    Returns
    -------
    list of Split
    """
    _check_common(matrix, kind, holdout)
    seed_list = None if seeds is None else list(seeds)
    if kind == "kfold":
        all_folds = make_split(matrix, "kfold", seed=None, n_source=n_source, folds=folds,
                               holdout=holdout, split_seed=split_seed)
        if seed_list is None:
            return list(all_folds)
        bad = [s for s in seed_list if not (isinstance(s, int | np.integer) and 0 <= s < folds)]
        if bad:
            raise ValidationError(f"kfold seeds select folds 0..{folds - 1}; got {preview(bad)}")
        return [all_folds[int(s)] for s in seed_list]
    if kind == "lofo":
        out: list[Split] = []
        for s in seed_list or [0]:
            out.extend(make_split(matrix, "lofo", seed=s, n_source=n_source, holdout=holdout))
        return out
    if not seed_list:
        raise ValidationError(f"{kind} splits need at least one seed")
    return [make_split(matrix, kind, seed=s, n_source=n_source, holdout=holdout)
            for s in seed_list]
