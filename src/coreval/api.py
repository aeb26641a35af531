"""The two user questions as functions: which items should I run, and what is the score ± how much.

>>> from coreval import select                                      # doctest: +SKIP
>>> fitted = select(matrix, method="random++", budget=100, seed=0)  # which 100 items?
>>> fitted.coreset.items                                            # run these on the new model
>>> fitted.predict({"arc/12": 1, "arc/7": 0, ...})                  # full score with a 90% interval
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError, preview
from coreval.prediction.base import Prediction, Predictor
from coreval.registry import Method, get_method
from coreval.selection.base import Coreset, Selector, resolve_budget


@dataclass
class FittedMethod:
    """A method whose selector and predictor were fitted on source models.

    Attributes
    ----------
    method : Method
        The registered method (selector + predictor pair).
    selector, predictor : fitted estimators
    coreset : Coreset
        The columns to run on a new model.
    seconds : dict
        Wall-clock seconds of ``select`` and ``fit``.
    """

    method: Method
    selector: Selector
    predictor: Predictor
    coreset: Coreset
    seconds: dict[str, float] = field(default_factory=dict)

    def responses_from(self, responses: Mapping[str, float] | pd.Series | np.ndarray) -> np.ndarray:
        """Align a new model's responses (by item id, or an array in coreset order) to the coreset."""
        if isinstance(responses, np.ndarray | list | tuple):
            x = np.asarray(responses, dtype=float)
            if x.shape[-1] != len(self.coreset):
                raise ValidationError(
                    f"got {x.shape[-1]} responses for a coreset of {len(self.coreset)} columns"
                )
            return x
        series = pd.Series(responses, dtype=float)
        series.index = series.index.astype(str)
        if series.index.duplicated().any():
            raise ValidationError(
                f"duplicate item ids in responses: {preview(series.index[series.index.duplicated()])}"
            )
        wanted = set(self.coreset.items.astype(str))
        unknown = [i for i in series.index if i not in wanted]
        if unknown:
            raise ValidationError(f"responses name items that are not in the coreset: "
                                  f"{preview(unknown)}")
        missing = [i for i in self.coreset.items.astype(str) if i not in series.index]
        if missing and not self.predictor.allows_missing_responses:
            raise ValidationError(f"responses lack coreset items: {preview(missing)}")
        return series.reindex(self.coreset.items.astype(str)).to_numpy()

    def predict(self, responses) -> Prediction:
        """Predict the full score(s) of new model(s) from their coreset responses."""
        return self.predictor.predict(self.responses_from(responses))


def select(source: ScoreMatrix, method: str = "random++", budget: float = 0.1, *, seed: int = 0,
           **options: Any) -> FittedMethod:
    """Choose a coreset with ``method`` and fit its predictor on ``source``.

    Parameters
    ----------
    source : ScoreMatrix
        Scores of the already-evaluated models.
    method : str
        A registered method name (see :func:`coreval.available_methods`).
    budget : float
        Below 1: a fraction of the columns; 1 or more: a count.
    seed : int
        Seed of every random choice (same seed, same coreset and numbers).
    **options
        Method options (e.g. ``degree=3`` for ``mrmr++``).
    """
    if not isinstance(source, ScoreMatrix):
        raise ValidationError(f"select expects a ScoreMatrix, got {type(source).__name__}")
    m = get_method(method)
    k = resolve_budget(budget, source.n_items)
    t0 = time.perf_counter()
    selector = m.selector(k=k, seed=seed, **options).fit(source)
    t1 = time.perf_counter()
    predictor = m.predictor(seed=seed, **options).fit(source, selector.coreset_)
    t2 = time.perf_counter()
    return FittedMethod(m, selector, predictor, selector.coreset_,
                        seconds={"select": t1 - t0, "fit": t2 - t1})
