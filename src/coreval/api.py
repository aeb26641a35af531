"""The two user questions as functions: which items should I run, and what is the score ± how much.

Which 100 items, run them on the new model, and its full score with a 90 % interval:

>>> from coreval import select
>>> fitted = select(matrix, method="random++", budget=100, seed=0)  # doctest: +SKIP
>>> fitted.coreset.items                                            # doctest: +SKIP
>>> fitted.predict({"arc/12": 1, "arc/7": 0})                       # doctest: +SKIP
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from coreval.base import resolve_budget
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.methods import get_method
from coreval.pipeline import Calibration, FittedMethod, Selection, fit_method
from coreval.saved_selection import load_selection, save_selection

__all__ = ["FittedMethod", "load_selection", "save_selection", "select"]


def select(source: ScoreMatrix, method: str = "random++", budget: float = 0.1, *, seed: int = 0,
           calibration: Calibration = "auto", selection: Selection = "auto",
           **options: Any) -> FittedMethod:
    """Choose a coreset with ``method`` and fit its predictor on ``source``.

    Parameters
    ----------
    source : ScoreMatrix or DataFrame
        Scores of the already-evaluated models.
    method : str
        A registered method name (see :func:`coreval.available_methods`).
    budget : float
        Below 1: a fraction of the columns; 1 or more: a count.
    seed : int
        Seed of every random choice (same seed, same coreset and numbers).
    calibration : {"auto", "native", "cv"}
        Interval of the predictions: the predictor's own (``"native"``), or split
        conformal on out-of-fold residuals with selection redone in each fold
        (``"cv"``); ``"auto"`` (default) uses ``"cv"`` where the selector read the
        source scores and the predictor's interval would not account for it (see
        :mod:`coreval.pipeline`).
    selection : {"auto", "method", "random"}
        Whose coreset: ``"auto"`` (default) keeps the method's selector unless the same
        predictor on a random coreset of the same size predicts held-out source models
        better (then it is used, with a warning; ``FittedMethod.selection`` says which);
        ``"method"`` always keeps it, ``"random"`` always replaces it (see
        :mod:`coreval.pipeline`).
    **options
        Method options (e.g. ``degree=3`` for ``mrmr++``).
    """
    if isinstance(source, pd.DataFrame):  # wide: index = model ids, columns = item ids
        source = ScoreMatrix.from_frame(source)
    if not isinstance(source, ScoreMatrix):
        raise ValidationError(f"select expects a ScoreMatrix or a wide DataFrame, got "
                              f"{type(source).__name__}")
    fitted = fit_method(get_method(method), source, resolve_budget(budget, source.n_items),
                        seed=seed, calibration=calibration, selection=selection, **options)
    fitted.budget = float(budget)
    return fitted
