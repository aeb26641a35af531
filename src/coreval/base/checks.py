"""Argument checks shared by selectors, predictors and the pipeline (one-line errors)."""

from __future__ import annotations

import numbers

import numpy as np

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError


def resolve_budget(budget: float | int, n_columns: int) -> int:
    """Number of columns for a budget: < 1 is a fraction, ≥ 1 a count.

    A fraction is truncated as in the mRMR reference code,
    ``k = max(1, int(budget * n_columns))``. A count larger than the pool raises.
    """
    if isinstance(budget, bool) or not isinstance(budget, numbers.Real):
        raise ValidationError(f"budget must be a number, got {budget!r}")
    if not np.isfinite(budget) or budget <= 0:
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
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
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
