"""The selector contract: ``Selector(k=..., ...).fit(source)`` → ``.coreset_``.

Selectors follow scikit-learn's estimator contract: every hyperparameter is an
explicit keyword of ``__init__`` stored unchanged, no work happens in
``__init__``, ``fit`` returns ``self`` and learned state lives in trailing
underscore attributes (``coreset_``, ``selected_``, ``weights_``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sklearn.base import BaseEstimator

from coreval.base.cache import FitCache
from coreval.base.checks import check_k, check_source
from coreval.base.coreset import Coreset
from coreval.data.matrix import ScoreMatrix


class Selector(BaseEstimator):
    """Base class of coreset selectors.

    Subclasses implement :meth:`_select` returning a :class:`Coreset`; ``fit``
    validates the input once and stores ``coreset_``, ``selected_`` and ``weights_``.
    A subclass that fits a model of the source data it could share with its
    predictor (an IRT fit, a Gaussian estimate) reads ``self.cache_`` (the
    caller's :class:`~coreval.base.FitCache`, or None).
    """

    #: Whether ``fit`` reads source-model scores (False for cold-start selectors).
    uses_source_models: bool = True
    #: Minimum number of source models the selector needs.
    min_source_models: int = 2
    #: Whether the selector needs binary 0/1 scores.
    needs_binary: bool = False

    def fit(self, source: ScoreMatrix, *, cache: FitCache | None = None) -> Selector:
        """Choose the coreset on ``source``.

        Parameters
        ----------
        source : ScoreMatrix
            Source models × columns.
        cache : FitCache, optional
            Shared with the predictor that follows, so that a model of the source
            data both need (e.g. the IRT fit) is fitted once.
        """
        name = type(self).__name__
        check_source(source, min_models=self.min_source_models if self.uses_source_models else 0,
                     binary=self.needs_binary, who=name)
        k = check_k(getattr(self, "k"), source.n_items)  # noqa: B009 - every selector has k
        self.cache_ = cache
        coreset = self._select(source, k)
        if coreset.uses_source_models != self.uses_source_models:
            coreset = replace(coreset, uses_source_models=self.uses_source_models)
        self.coreset_ = coreset
        self.selected_ = coreset.indices
        self.weights_ = coreset.weights
        return self

    def resolved_options(self) -> dict[str, Any]:
        """Method options that fix the ``"auto"`` choices this fit made (after ``fit``).

        A selector that chooses a setting from the source models (the IRT model and
        priors of ``model="auto"``) returns the options that pin it, e.g.
        ``{"model": "3pl", "priors": "signed"}``; the folds of
        :func:`coreval.pipeline.fit_method`'s interval calibration and selection check
        pass them so that each fold reuses the choice instead of making it again.
        Empty by default (nothing chosen).
        """
        return {}

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:  # pragma: no cover - abstract
        raise NotImplementedError
