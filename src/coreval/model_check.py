"""Model criticism reported with every prediction of an IRT-based method.

A method whose predictor holds an IRT fit of the source models (p-irt, gp-irt,
metabench, irt-bayes; not the ``+``/``++`` refits, which predict by regression) is checked twice on those models when it
is fitted (:func:`coreval.pipeline.fit_method`):

* a posterior predictive check of the fit (:func:`coreval.irt.criticism.posterior_predictive_check`):
  can the fitted model reproduce the observed item-total correlations?
* its out-of-fold errors on held-out source models (the whole method re-run per fold,
  selection included: the ``calibration="cv"`` folds, or irt-bayes' misfit folds with
  its blend) against those of a ridge regression of the same fold's models' full scores
  on the fold's coreset answers (:func:`coreval.regression.ridge_loo.ridge_baseline`,
  random++'s predictor on the items the method chose in that fold). When the IRT method
  is worse by more than one standard error of the paired difference
  (:func:`coreval.base.crossval.worse_by_one_se`, the rule of ``selection="auto"``), a
  ``UserWarning`` says so: its predictions rest on a model the data contradict.

The result is :attr:`coreval.pipeline.FittedMethod.model_check`, printed by
``coreval predict`` and on the score card.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from coreval.base import Predictor
from coreval.base.crossval import worse_by_one_se
from coreval.data.matrix import ScoreMatrix
from coreval.irt.criticism import PosteriorPredictiveCheck, posterior_predictive_check

#: A posterior predictive p-value below this is reported as misfit.
PPC_ALPHA = 0.05


@dataclass(frozen=True)
class ModelCheck:
    """Criticism of an IRT-based method on its source models.

    Attributes
    ----------
    model : str
        The IRT model checked, e.g. ``"3PL, 1 dimension"``.
    ppc : PosteriorPredictiveCheck or None
        The predictive check of the item-total correlations (None when the fit has
        no ability draws or is not logistic).
    cv_rmse : float or None
        Out-of-fold RMSE of the method's full-score predictions on held-out source
        models (None without out-of-fold predictions, e.g. ``calibration="native"``).
    ridge_rmse : float or None
        Leave-one-out RMSE of the ridge baseline on the same models and coreset.
    worse_than_ridge : bool
        The method's squared out-of-fold errors exceed the ridge's by more than one
        standard error of the paired difference.
    """

    model: str
    ppc: PosteriorPredictiveCheck | None
    cv_rmse: float | None = None
    ridge_rmse: float | None = None
    worse_than_ridge: bool = False

    @property
    def misfit(self) -> bool:
        """True when the predictive check rejects the model (p < :data:`PPC_ALPHA`)."""
        return self.ppc is not None and self.ppc.pvalue < PPC_ALPHA

    def summary(self) -> dict[str, object]:
        """The check as a flat dict of plain numbers (for JSON output)."""
        ppc = self.ppc
        return {"model": self.model,
                "ppc_pvalue": None if ppc is None else ppc.pvalue,
                "ppc_outside_share": None if ppc is None else ppc.outside_share,
                "negative_item_share": None if ppc is None else ppc.negative_share,
                "cv_rmse": self.cv_rmse, "ridge_rmse": self.ridge_rmse,
                "worse_than_ridge": self.worse_than_ridge, "misfit": self.misfit}

    def notes(self) -> list[str]:
        """Lines for a report: what was checked, and a caution where the model fails it."""
        lines = []
        if self.ppc is not None:
            text = f"model check ({self.model}): {self.ppc.summary()}"
            lines.append(f"**caution**: {text}: the IRT model misfits these data"
                         if self.misfit else text)
        if self.cv_rmse is not None and self.ridge_rmse is not None:
            text = (f"out-of-fold RMSE on held-out source models {100 * self.cv_rmse:.2f} pp, "
                    f"ridge on the same items {100 * self.ridge_rmse:.2f} pp")
            lines.append(f"**caution**: {text}: the IRT method predicts worse than a ridge "
                         "regression, consider random++" if self.worse_than_ridge else text)
        return lines


def describe_fit(fit) -> str:
    """``"3PL, 1 dimension"`` for an :class:`coreval.irt.IRTFit`."""
    theta = fit.idata.posterior["theta"] if "theta" in fit.idata.posterior else None
    dims = 1 if theta is None or theta.ndim < 4 else int(theta.shape[-1])
    return f"{str(fit.link).upper()}, {dims} dimension{'s' if dims > 1 else ''}"


def is_checked(predictor: Predictor) -> bool:
    """Whether :func:`check_model` criticises ``predictor``: it holds an IRT fit
    (``irt_fit_``) and its ``check`` option, where it has one, is not False."""
    return (getattr(predictor, "irt_fit_", None) is not None
            and getattr(predictor, "check", True) is not False)


def check_model(method_name: str, predictor: Predictor, source: ScoreMatrix,
                cv_residuals: np.ndarray | None, ridge_residuals: np.ndarray | None, *,
                seed: int = 0) -> ModelCheck | None:
    """Criticise the IRT fit behind ``predictor`` on ``source`` (None without one).

    Parameters
    ----------
    method_name : str
        For the warning.
    predictor : Predictor
        A fitted predictor; checked when it has an ``irt_fit_`` (and its ``check`` is
        not False). irt-bayes' own predictive check (``ppc_``) and out-of-fold errors
        (``oof_residuals_``, ``ridge_oof_residuals_``, from its misfit folds) are used
        when the method has no calibration residuals.
    source : ScoreMatrix
        The source models the method was fitted on.
    cv_residuals, ridge_residuals : ndarray or None
        Out-of-fold residuals of the whole method and of the ridge fitted on the same
        folds with the same coresets, shape ``(repeats, n_source)`` (the calibration's
        folds, :func:`coreval.pipeline.fit_method`); absolute values are enough.
    seed : int
        Seed of the predictive check's replicates.

    Returns
    -------
    ModelCheck or None
    """
    if not is_checked(predictor):
        return None
    fit = predictor.irt_fit_
    model = describe_fit(fit)
    ppc = (predictor.ppc_ if hasattr(predictor, "ppc_")
           else posterior_predictive_check(fit, source.values, seed=seed))
    if cv_residuals is not None and ridge_residuals is not None:
        own = np.mean(np.square(np.atleast_2d(cv_residuals)), axis=0)   # per source model
        ridge = np.mean(np.square(np.atleast_2d(ridge_residuals)), axis=0)
    elif getattr(predictor, "ridge_oof_residuals_", None) is not None:
        own = np.square(predictor.oof_residuals_)
        ridge = np.square(predictor.ridge_oof_residuals_)
    else:
        return ModelCheck(model, ppc)
    keep = np.isfinite(own) & np.isfinite(ridge)  # a held-out model with a missing answer
    if keep.sum() < 3:
        return ModelCheck(model, ppc)
    own, ridge = own[keep], ridge[keep]
    cv_rmse, ridge_rmse = float(np.sqrt(own.mean())), float(np.sqrt(ridge.mean()))
    check = ModelCheck(model, ppc, cv_rmse, ridge_rmse, worse_by_one_se(own, ridge))
    if check.worse_than_ridge:
        warnings.warn(
            f"{method_name}: its {model} IRT fit predicts held-out source models worse than "
            f"a ridge regression on the same coreset (out-of-fold RMSE {100 * cv_rmse:.2f} pp "
            f"vs {100 * ridge_rmse:.2f} pp, by more than one standard error); its "
            "predictions rest on a model the data contradict (see FittedMethod.model_check), "
            "consider random++", UserWarning, stacklevel=3)
    return check
