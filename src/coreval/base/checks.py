"""Argument checks shared by selectors, predictors and the pipeline (one-line errors)."""

from __future__ import annotations

import numbers

import numpy as np

from coreval.data.matrix import ScoreMatrix
from coreval.errors import TooFewModelsError, ValidationError


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


#: Seeds are numpy ``SeedSequence`` / ``random_state`` values: integers in [0, 2**32).
MAX_SEED = 2**32 - 1


def check_seed(seed: int) -> int:
    """A seed as an int in ``[0, 2**32 - 1]`` (numpy's and scikit-learn's range)."""
    if isinstance(seed, bool) or not isinstance(seed, numbers.Integral):
        raise ValidationError(f"seed must be an integer, got {seed!r}")
    if not 0 <= int(seed) <= MAX_SEED:
        raise ValidationError(f"seed must be between 0 and 2**32 - 1, got {seed}")
    return int(seed)


def response_domain(source: ScoreMatrix) -> tuple[str, float, float]:
    """The values a new model's responses may take, from the source scores.

    Returns ``(kind, low, high)``: ``("binary", 0, 1)`` (exactly 0 or 1) for binary
    sources; otherwise ``("range", low, high)``, the source range widened by its width
    on each side. A new model may beat every source model, and held-out models of
    continuous data often fall a little outside the source range; a value far outside
    says the responses are on another scale (percent instead of fraction, a sentinel).
    """
    if source.is_binary:
        return ("binary", 0.0, 1.0)
    observed = source.values[source.observed]
    low, high = (float(observed.min()), float(observed.max())) if observed.size else (0.0, 1.0)
    span = max(high - low, 1e-12)
    return ("range", low - span, high + span)


def check_responses(x: np.ndarray, domain: tuple[str, float, float], items: np.ndarray,
                    *, who: str = "predictor") -> None:
    """Responses must be finite and in the source's domain; errors name item and value.

    Parameters
    ----------
    x : ndarray (n_models, k)
        Responses on the coreset columns (NaN = missing, checked elsewhere).
    domain : (kind, low, high)
        From :func:`response_domain`.
    items : ndarray of str, shape (k,)
        The coreset's item ids, for the message.
    """
    kind, low, high = domain
    finite = np.isfinite(x)
    bad = ~finite & ~np.isnan(x)
    if kind == "binary":
        bad |= finite & ~np.isin(x, (0.0, 1.0))
        rule = "0 or 1 (the source scores are binary)"
    else:
        bad |= finite & ((x < low) | (x > high))
        rule = f"finite and within [{low:g}, {high:g}] (the source scores' range)"
    if bad.any():
        rows, cols = np.nonzero(bad)
        shown = ", ".join(f"{items[c]}={float(x[r, c]):g}" for r, c in zip(rows[:5], cols[:5],
                                                                     strict=True))
        more = f" and {len(rows) - 5} more" if len(rows) > 5 else ""
        raise ValidationError(f"{who}: responses must be {rule}; got {shown}{more}")


def check_positive_int(name: str, value: int, *, minimum: int = 1) -> int:
    """``value`` as an int; a :class:`ValidationError` naming ``name`` unless it is an integer
    of at least ``minimum`` (floats such as ``2.0`` and bools are refused, not truncated)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        kind = {1: "a positive integer", 0: "a non-negative integer"}.get(
            minimum, f"an integer >= {minimum}")
        raise ValidationError(f"{name} must be {kind}, got {value!r}")
    return int(value)


def check_k(k: int, n_columns: int) -> int:
    """Validate a coreset size against the pool size."""
    k = check_positive_int("k", k)
    if k > n_columns:
        raise ValidationError(f"k={k} is larger than the pool of {n_columns} columns")
    return k


def check_source(source: ScoreMatrix, *, min_models: int = 2, binary: bool = False,
                 allow_missing: bool = True, who: str = "method") -> ScoreMatrix:
    """Validate source data at a method's boundary (one-line errors)."""
    if not isinstance(source, ScoreMatrix):
        raise ValidationError(f"{who} expects a ScoreMatrix, got {type(source).__name__}")
    if source.n_models < min_models:
        raise TooFewModelsError(
            f"{who} needs at least {min_models} source models, got {source.n_models}",
            needed=min_models, got=source.n_models)
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
