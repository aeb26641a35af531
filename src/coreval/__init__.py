"""coreval: efficient LLM evaluation with calibrated uncertainty.

Pick a small set of items (or whole benchmarks) to run on a new model, and
predict its full scores with intervals, from the per-item results of models
that were already evaluated.
"""

from coreval.api import FittedMethod, select
from coreval.data.matrix import ScoreMatrix
from coreval.errors import CorevalError, UnknownMethodError, ValidationError
from coreval.prediction.base import Prediction, Predictor
from coreval.registry import Method, available_methods, get_method, register_method
from coreval.selection.base import Coreset, Selector

__version__ = "0.1.0"

__all__ = [
    "Coreset",
    "CorevalError",
    "FittedMethod",
    "Method",
    "Prediction",
    "Predictor",
    "ScoreMatrix",
    "Selector",
    "UnknownMethodError",
    "ValidationError",
    "__version__",
    "available_methods",
    "get_method",
    "register_method",
    "select",
]
