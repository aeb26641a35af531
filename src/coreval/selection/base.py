"""The selector contract: ``Selector(k=..., ...).fit(source)`` → ``.coreset_``.

Selectors follow scikit-learn's estimator contract: every hyperparameter is an
explicit keyword of ``__init__`` stored unchanged, no work happens in
``__init__``, ``fit`` returns ``self`` and learned state lives in trailing
underscore attributes (``coreset_``, ``selected_``, ``weights_``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


@dataclass(frozen=True)
class Coreset:
    """The columns chosen by a selector.

    Attributes
    ----------
    indices : ndarray of int
        Column positions in the source matrix, in selection order.
    items : ndarray of str
        The matching column ids.
    weights : ndarray of float or None
        Per-column weights of a weighted-mean estimator (e.g. cluster-size
        fractions of anchor points, summing to 1), if the method defines them.
    method : str
        Name of the selector that produced the coreset.
    info : dict
        Method details (scores, timings, diagnostics). ``info["uses_source_models"]``
        is False for cold-start selectors that never read source-model scores.
    """

    indices: np.ndarray
    items: np.ndarray
    weights: np.ndarray | None = None
    method: str = ""
    info: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.indices)

    @classmethod
    def from_indices(cls, source: ScoreMatrix, indices, *, weights=None, method: str = "",
                     **info: Any) -> Coreset:
        """Build a coreset from column positions of ``source`` (duplicates are an error)."""
        idx = np.asarray(indices, dtype=np.intp).ravel()
        if len(np.unique(idx)) != len(idx):
            raise ValidationError(f"coreset of {method or 'selector'} has duplicate columns")
        if idx.size and (idx.min() < 0 or idx.max() >= source.n_items):
            raise ValidationError("coreset column positions out of range")
        w = None if weights is None else np.asarray(weights, dtype=float).ravel()
        if w is not None and w.shape != idx.shape:
            raise ValidationError(f"{w.shape[0]} weights for {idx.shape[0]} coreset columns")
        return cls(indices=idx, items=source.items[idx], weights=w, method=method, info=dict(info))


def resolve_budget(budget: float | int, n_columns: int) -> int:
    """Number of columns for a budget: < 1 is a fraction, ≥ 1 a count.

    A fraction is truncated as in the mRMR reference code,
    ``k = max(1, int(budget * n_columns))``. A count larger than the pool raises.
    """
    if budget is None or not np.isfinite(budget) or budget <= 0:
        raise ValidationError(f"budget must be positive, got {budget!r}")
    if budget < 1:
        return max(1, int(float(budget) * n_columns))
    if float(budget) != int(budget):
        raise ValidationError(f"a budget ≥ 1 is a count and must be an integer, got {budget}")
    k = int(budget)
    if k > n_columns:
        raise ValidationError(f"k={k} is larger than the pool of {n_columns} columns")
    return k


def check_k(k: int, n_columns: int) -> int:
    """Validate a coreset size against the pool size."""
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValidationError(f"k must be a positive integer, got {k!r}")
    if k > n_columns:
        raise ValidationError(f"k={k} is larger than the pool of {n_columns} columns")
    return int(k)


def check_source(source: ScoreMatrix, *, min_models: int = 2, binary: bool = False,
                 allow_missing: bool = True, who: str = "method") -> ScoreMatrix:
    """Validate source data at a method's boundary (one-line errors)."""
    if not isinstance(source, ScoreMatrix):
        raise ValidationError(f"{who} expects a ScoreMatrix, got {type(source).__name__}")
    if source.n_models < min_models:
        raise ValidationError(
            f"{who} needs at least {min_models} source models, got {source.n_models}"
        )
    if binary and not source.is_binary:
        observed = source.values[source.observed]
        bad = np.unique(observed[~np.isin(observed, (0.0, 1.0))])[:5]
        raise ValidationError(
            f"{who} needs binary 0/1 scores but got values such as {list(bad)}; "
            "use a continuous model instead"
        )
    if not allow_missing and not source.fully_observed:
        raise ValidationError(
            f"{who} needs a fully observed matrix; {int((~source.observed).sum())} entries are NaN"
        )
    return source


class Selector(BaseEstimator):
    """Base class of coreset selectors.

    Subclasses implement :meth:`_select` returning a :class:`Coreset`; ``fit``
    validates the input once and stores ``coreset_``, ``selected_`` and ``weights_``.
    """

    #: Whether ``fit`` reads source-model scores (False for cold-start selectors).
    uses_source_models: bool = True
    #: Minimum number of source models the selector needs.
    min_source_models: int = 2
    #: Whether the selector needs binary 0/1 scores.
    needs_binary: bool = False

    def fit(self, source: ScoreMatrix) -> Selector:
        name = type(self).__name__
        check_source(source, min_models=self.min_source_models if self.uses_source_models else 0,
                     binary=self.needs_binary, who=name)
        k = check_k(getattr(self, "k"), source.n_items)  # noqa: B009 - every selector has k
        coreset = self._select(source, k)
        coreset.info.setdefault("uses_source_models", self.uses_source_models)
        # An unfitted copy, so that downstream steps can re-run the same selection on
        # other source models (selection-aware cross-validation, e.g. irt-bayes' misfit).
        coreset.info.setdefault("selector", clone(self))
        self.coreset_ = coreset
        self.selected_ = coreset.indices
        self.weights_ = coreset.weights
        return self

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:  # pragma: no cover - abstract
        raise NotImplementedError
