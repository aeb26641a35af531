"""coreval: efficient LLM evaluation with calibrated uncertainty.

Pick a small set of items (or whole benchmarks) to run on a new model, and
predict its full scores with intervals, from the per-item results of models
that were already evaluated.
"""

from coreval._version import __version__
from coreval.api import FittedMethod, select
from coreval.base import Coreset, FitCache, Prediction, Predictor, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.errors import CorevalError, UnknownMethodError, ValidationError
from coreval.methods import (
    Method,
    OptionError,
    available_methods,
    declare,
    get_method,
    register_method,
)

__all__ = [
    "Coreset",
    "CorevalError",
    "FitCache",
    "FittedMethod",
    "Method",
    "OptionError",
    "Prediction",
    "Predictor",
    "ScoreMatrix",
    "Selector",
    "UnknownMethodError",
    "ValidationError",
    "__version__",
    "available_methods",
    "declare",
    "get_method",
    "register_method",
    "select",
]
