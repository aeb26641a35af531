"""Exception types raised at coreval's boundaries.

Every error message is a single line that names the problem (the offending
ids, shapes or values), so a CLI user sees one readable sentence instead of a
traceback from deep inside NumPy or JAX.
"""

from __future__ import annotations


class CorevalError(Exception):
    """Base class of every error raised on purpose by coreval."""


class ValidationError(CorevalError, ValueError):
    """Input data or arguments are invalid (shape, NaN, ids, ranges, budgets)."""


class TooFewModelsError(ValidationError):
    """Fewer source models than a selector or predictor needs.

    Attributes
    ----------
    needed, got : int
    """

    def __init__(self, message: str, *, needed: int, got: int) -> None:
        super().__init__(message)
        self.needed = needed
        self.got = got


class UnknownMethodError(CorevalError, KeyError):
    """A method, selector, predictor or model name is not registered."""

    def __str__(self) -> str:  # KeyError quotes its message; keep it one plain line.
        return str(self.args[0]) if self.args else ""


def preview(values, limit: int = 8) -> str:
    """Format at most ``limit`` values for an error message (``a, b, ... (+N more)``)."""
    values = list(values)
    shown = ", ".join(str(v) for v in values[:limit])
    if len(values) > limit:
        shown += f", ... (+{len(values) - limit} more)"
    return shown
