"""The contracts shared by every selector and predictor, below both layers.

:class:`Coreset` (what a selector returns), :class:`Prediction` (what a
predictor returns), the :class:`Selector` and :class:`Predictor` base classes,
argument checks, conformal intervals, the caller-owned :class:`FitCache` and
the one out-of-fold loop (:func:`out_of_fold`).
"""

from coreval.base.cache import FitCache, source_fingerprint
from coreval.base.checks import check_k, check_source, resolve_budget
from coreval.base.coreset import Coreset, LinearFit
from coreval.base.crossval import OutOfFold, out_of_fold, repeated_fold_seeds
from coreval.base.prediction import Prediction
from coreval.base.predictor import FoldRefit, Predictor
from coreval.base.selector import Selector

__all__ = [
    "Coreset",
    "FitCache",
    "FoldRefit",
    "LinearFit",
    "OutOfFold",
    "Prediction",
    "Predictor",
    "Selector",
    "check_k",
    "check_source",
    "out_of_fold",
    "repeated_fold_seeds",
    "resolve_budget",
    "source_fingerprint",
]
