"""The coreset: the columns a selector chose, in selection order.

A :class:`Coreset` is what travels from a selector to a predictor. Its fields are
typed; whatever a predictor may reuse from the selector's work (an IRT fit, a
Gaussian estimate) travels through a :class:`coreval.base.FitCache` owned by the
caller, not through the coreset.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


@dataclass(frozen=True)
class LinearFit:
    """A linear model on the coreset columns, fitted by a selector (lasso).

    Attributes
    ----------
    coef : ndarray, shape (len(coreset),)
        Coefficients of the coreset columns, in coreset order.
    intercept : float
    alpha : float
        The penalty the selector chose.
    """

    coef: np.ndarray
    intercept: float
    alpha: float


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
    uses_source_models : bool
        False for cold-start selectors that never read source-model scores.
    linear_fit : LinearFit or None
        The selector's own linear model on the coreset (lasso), for its predictor.
    max_items : int or None
        For an adaptive test: the coreset is the bank the test may draw from, and a
        target model answers at most this many of its items (the budget).
    details : mapping
        Diagnostics for people and reports (scores, timings, cluster sizes). No
        code path reads them to compute a prediction.
    """

    indices: np.ndarray
    items: np.ndarray
    weights: np.ndarray | None = None
    method: str = ""
    uses_source_models: bool = True
    linear_fit: LinearFit | None = None
    max_items: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.indices)

    @classmethod
    def from_indices(cls, source: ScoreMatrix, indices, *, weights=None, method: str = "",
                     uses_source_models: bool = True, linear_fit: LinearFit | None = None,
                     max_items: int | None = None, **details: Any) -> Coreset:
        """Build a coreset from column positions of ``source`` (duplicates are an error).

        Without ``weights``, a source whose items have groups gives the coreset its
        items' summary-score weights (:meth:`ScoreMatrix.item_weights`, renormalised), so
        that the weighted coreset mean estimates the summary score (the mean of the group
        means) rather than the plain item mean; where those weights are equal (no
        groups, or items of one group) they stay None, the plain mean. Keyword arguments
        other than the fields go to :attr:`details`.
        """
        idx = np.asarray(indices, dtype=np.intp).ravel()
        if len(np.unique(idx)) != len(idx):
            raise ValidationError(f"coreset of {method or 'selector'} has duplicate columns")
        if idx.size and (idx.min() < 0 or idx.max() >= source.n_items):
            raise ValidationError("coreset column positions out of range")
        w = None if weights is None else np.asarray(weights, dtype=float).ravel()
        if w is None and idx.size:
            summary_w = source.item_weights()[idx]
            if np.ptp(summary_w) > 0:  # equal weights: the plain mean, left as None
                w = summary_w / summary_w.sum()
        if w is not None and w.shape != idx.shape:
            raise ValidationError(f"{w.shape[0]} weights for {idx.shape[0]} coreset columns")
        return cls(indices=idx, items=source.items[idx], weights=w, method=method,
                   uses_source_models=uses_source_models, linear_fit=linear_fit,
                   max_items=max_items, details=dict(details))
