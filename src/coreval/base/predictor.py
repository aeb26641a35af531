"""The predictor contract: ``Predictor(...).fit(source, coreset).predict(responses)``.

A predictor maps a new model's responses on the coreset columns to its full
score (``task="score"``) or to every column (``task="impute"``, for benchmark
level data). Every prediction carries a central interval and says how it was
made (``Prediction.interval``): a Bayesian credible interval, a conformal
interval, or a Gaussian conditional interval.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from sklearn.base import BaseEstimator, clone

from coreval.base.cache import FitCache
from coreval.base.checks import check_responses, check_source, response_domain
from coreval.base.coreset import Coreset
from coreval.base.prediction import Prediction
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError

#: ``refit(sub, **params) -> (coreset, fitted predictor)``: the whole method (selection
#: included) re-run on a subset of the source models, with predictor parameters overridden.
FoldRefit = Callable[..., tuple[Coreset, "Predictor"]]


class Predictor(BaseEstimator):
    """Base class of predictors; subclasses implement ``_fit`` and ``_predict``.

    ``fit`` stores ``coreset_``, ``n_items_``, the caller's fit cache ``cache_``
    and ``refit_``, the function that re-runs the method on a subset of the
    source models (used by predictors that estimate something out of fold, via
    :func:`coreval.base.crossval.out_of_fold`).
    """

    #: "score": predict the per-model summary score; "impute": predict every column.
    task: str = "score"
    #: Whether target responses on the coreset may contain NaN.
    allows_missing_responses: bool = False
    min_source_models: int = 2
    needs_binary: bool = False
    #: Whether the predictor's own interval already comes from out-of-fold fits that
    #: re-run the selection (irt-bayes' misfit term, stacking), so that
    #: ``calibration="auto"`` of :func:`coreval.pipeline.fit_method` keeps it.
    selection_aware_interval: bool = False
    #: Whether the predictor's own interval re-fits everything the predictor learnt from
    #: the source models (jackknife+ or split conformal over complete refits, a posterior).
    #: ``False`` where it does not (metabench's GAM refits leave the IRT fit behind θ̂
    #: and the penalties chosen on all of them; p-IRT's and gp-IRT's residuals are in
    #: sample): ``calibration="auto"`` then takes the pipeline's out-of-fold interval even
    #: on a coreset that did not read the source scores (a random one).
    native_interval_complete: bool = True
    #: Whether ``selection="auto"`` of :func:`coreval.pipeline.fit_method` compares a
    #: supervised coreset with a random one under this predictor (the regression
    #: refits, whose random-coreset pipeline is the papers' random+ / random++,
    #: stacking, metabench's GAM, and irt-bayes with a coreset chosen from the IRT fit).
    compare_random_coreset: bool = False

    def out_of_fold_residuals(self) -> tuple[np.ndarray, np.ndarray] | None:
        """``(rows, residuals)`` of the whole method on held-out source models, if known.

        A predictor that re-ran the method, selection included, on folds of the source
        models while fitting (stacking) returns the source rows it predicted and their
        residuals ``y − ŷ``, so that ``selection="auto"`` of
        :func:`coreval.pipeline.fit_method` compares coresets without another
        out-of-fold run. ``None`` (the default) when the fit made no such estimate.
        """
        return None

    def resolved_options(self) -> dict[str, Any]:
        """Method options that fix the ``"auto"`` choices this fit made (after ``fit``).

        As :meth:`coreval.base.Selector.resolved_options`: e.g. gp-IRT's
        ``{"model": "3pl", "priors": "signed"}``. Empty by default.
        """
        return {}

    def fit(self, source: ScoreMatrix, coreset: Coreset, *, cache: FitCache | None = None,
            refit: FoldRefit | None = None) -> Predictor:
        """Fit on the source models and the coreset chosen on them.

        Parameters
        ----------
        source : ScoreMatrix
        coreset : Coreset
        cache : FitCache, optional
            The cache the selector used, so that shared fits are reused.
        refit : callable, optional
            ``refit(sub, **params) -> (coreset, predictor)`` re-runs the method,
            selection included, on a subset ``sub`` of the source models (given by
            :func:`coreval.pipeline.fit_method`). Without it the coreset is held
            fixed (:meth:`fixed_coreset_refit`).
        """
        check_source(source, min_models=self.min_source_models, binary=self.needs_binary,
                     who=type(self).__name__)
        if len(coreset) == 0:
            raise ValidationError(f"{type(self).__name__} got an empty coreset")
        self.coreset_ = coreset
        self.n_items_ = source.n_items
        self.response_domain_ = response_domain(source)
        self.cache_ = cache
        self.refit_ = refit if refit is not None else self.fixed_coreset_refit
        self._fit(source, coreset)
        return self

    def fixed_coreset_refit(self, sub: ScoreMatrix, **params: Any) -> tuple[Coreset, Predictor]:
        """Refit a copy of this predictor on ``sub`` with the same coreset columns."""
        coreset = Coreset.from_indices(sub, self.coreset_.indices, weights=self.coreset_.weights,
                                       method=self.coreset_.method)
        return coreset, clone(self).set_params(**params).fit(sub, coreset, cache=self.cache_)

    def predict(self, responses) -> Prediction:
        """Predict from target responses on the coreset columns.

        Parameters
        ----------
        responses : array-like of shape (n_models, len(coreset)) or (len(coreset),)
            Scores of the new model(s) on the coreset columns, in coreset order.
        """
        if not hasattr(self, "coreset_"):
            raise ValidationError(f"{type(self).__name__} is not fitted; call fit first")
        try:
            x = np.asarray(responses, dtype=float)
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"responses must be numbers: {exc}") from None
        if x.ndim == 1:
            x = x[None, :]
        if x.ndim != 2 or x.shape[1] != len(self.coreset_):
            raise ValidationError(
                f"responses have shape {np.shape(responses)}, expected "
                f"(n_models, {len(self.coreset_)}) for this coreset"
            )
        check_responses(x, self.response_domain_, np.asarray(self.coreset_.items).astype(str),
                        who=type(self).__name__)
        if not self.allows_missing_responses and np.isnan(x).any():
            raise ValidationError(
                f"{type(self).__name__} cannot use missing (NaN) responses on the coreset; "
                f"{int(np.isnan(x).sum())} are missing"
            )
        return self._predict(x)

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:  # pragma: no cover
        raise NotImplementedError

    def _predict(self, x: np.ndarray) -> Prediction:  # pragma: no cover
        raise NotImplementedError
