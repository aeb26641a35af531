"""Fit a method (selector, then predictor) on source models — the one place that does it.

Both :func:`coreval.select` and the harness call :func:`fit_method`, so a method
behaves the same in a notebook, on the command line and in a benchmark grid.

Selection-aware intervals
-------------------------
A predictor's own interval (jackknife+ or split conformal on the source models)
treats the coreset as fixed. When the coreset was chosen by looking at those
same source models (mRMR, anchor points, lasso, random search), every source
model helped choose the columns it is then scored on, so its residual is
optimistic and the interval under-covers (measured: 0.45–0.8 at a nominal 0.9
on gsm/math at 5%). ``calibration="cv"`` fixes this for any method: the whole
pipeline, selection included, is re-run on K-fold splits of the source models,
the held-out fold is predicted from *its own* coreset, and the resulting
out-of-fold residuals give a split-conformal interval (Lei et al. 2018) around
the final prediction.

Folds and repetitions. A fold's models are predicted by a pipeline fitted on the
other ``(K−1)/K`` of the sources, which predicts worse than the final pipeline
fitted on all of them, so the interval is conservative by that learning-curve
gap; and each fold re-selects its coreset, so one unlucky fold moves the
quantile. ``folds=10`` (default) narrows the gap; ``repeats`` pools several
seeded assignments of the models to folds
(:func:`coreval.base.conformal.split_conformal_interval`), which narrows the
spread but raises the mean coverage. Measured with mrmr++ at 10 % on the 8 LLM
matrices, random splits with 30 sources, seeds 0-4 (``split_coverage.md``):
5 folds cover 0.926, 5 folds × 3 repetitions 0.940, 10 folds 0.914; on a
simulated 40-model leaderboard (8 splits): 0.886, 0.906 and 0.908.
A full jackknife+/CV+ (Barber et al. 2021) is impossible
here because a new model only answers the final coreset, not the folds' coresets.

``calibration="auto"`` (the default) makes this choice per method, from what the
method is, never from the data: ``"cv"`` when the selector reads the source
models' scores and the predictor's own interval does not already come from fold
fits that re-ran the selection (irt-bayes' misfit term, stacking, the adaptive
tests: ``Predictor.selection_aware_interval``), and also on a coreset that did not
read them when the predictor's own interval leaves out part of what it learnt from the
source models (``Predictor.native_interval_complete``: metabench's GAM, whose jackknife+
refits keep the IRT fit behind θ̂ and covered 0.86, mostly on random items, over random
splits);
``"native"`` otherwise (a random coreset under a predictor whose jackknife+ or
split-conformal interval is valid as it is, and the ``impute`` task). Cost:
``folds × repeats`` more runs of the whole method (10 by default), selection included;
none where ``selection="auto"`` already ran those folds for its comparison (the first
repetition reuses them).

Choices in the folds
--------------------
A method that chooses a setting from the source models (gp-irt's IRT model and prior
family, ``model="auto"``, ``priors="auto"``: four validation fits) makes that choice
once, on all of them. The folds of the calibration and of the selection check reuse it
(:func:`choice_refit`): each fold re-runs the selection and the fit with the chosen
setting, not the choice itself. So do the folds a predictor runs itself (irt-bayes'
misfit term, a stack's weights) with what its selector chose (stack-irt-anchors'
anchors come from gp-irt's choice of IRT model). The choice is one of a few
candidates, so letting it see the held-out fold is a small optimism, and re-making it
would multiply the folds' fits: gp-irt on gsm (30 sources, 10 %) makes 25 IRT fits
instead of 55 (``benchmarks/results/gpirt_fit_count.md``, which also gives the coverage
with both).

Interval scale
--------------
A ``"cv"`` interval is ``ŷ ± q σ(ŷ)``: split conformal on normalised scores ``|rᵢ| / σ(ŷᵢ)``
of the out-of-fold residuals (Lei et al. 2018, sec. 5.2;
:func:`coreval.base.conformal.conformal_scales`). Errors in predicting a mean accuracy are
not alike across the score range: a model near 0 or 1 has less room to err than one near
0.5, and where the sources spread evenly over the range (the binned split) the extreme
ones are predicted by extrapolation, with errors that the crowded middle does not have.

* ``interval_scale="quadratic"`` (the default): ``σ²(ŷ) = a + bŷ + cŷ²`` fitted by least
  squares to the squared out-of-fold residuals
  (:func:`coreval.base.conformal.variance_function_scale`; floored at a quarter of their
  mean, ŷ clipped to the sources' range). The family holds a constant variance, the
  Bernoulli one and errors that grow towards both ends, so each run learns the shape
  from its own source models, on any score range. It is fitted on the residuals it
  normalises (3 coefficients), which costs a little of the guarantee: about 0.01 of
  coverage with 40 calibration points in ``tests/test_conformal.py``. With fewer than 6
  residuals it is constant.
* ``"constant"``: ``σ = 1``, every model gets the same half-width.
* ``"bernoulli"``: ``σ(ŷ) = sqrt(ŷ(1 − ŷ))`` (ŷ clipped to [0.01, 0.99];
  :func:`coreval.base.conformal.bernoulli_scale`), the error scale of a mean of Bernoulli
  answers; scores in [0, 1] only.
* ``"auto"`` chooses between ``"constant"`` and ``"bernoulli"`` per run: the one whose
  leave-one-out conformal intervals of the out-of-fold predictions have the lower mean
  interval score (:func:`coreval.base.conformal.resolve_conformal_scale`); ``"constant"``
  where the scores are not in [0, 1].

None of them costs a fit. The stacks' own interval on their stacked out-of-fold residuals
takes the same option. Measured on the same fits (``benchmarks/results/interval_scale*.md``:
mrmr++, anchor-points++, lasso and metabench at M = 30, mrmr++ and anchor-points++ also at
M = 15 and 50; 10 %, the 8 LLM matrices, binned and random splits), the quadratic scale
has a lower σ⁻¹-weighted interval score than the constant one in all 16 settings and the
lowest of the four in 10 (the Bernoulli scale in 5 of the others), with coverage
0.87-0.98 against the constant scale's 0.89-0.98; at M = 30 it brings the binned split's
coverage to 0.90-0.94 (constant: 0.94-0.97).

Checked selection
-----------------
A selector that reads the source scores (mRMR, anchor points, IRT anchors, lasso)
chooses the items that predict *these* models best. Where the new models differ from
them, the choice can hurt: on a GLUE matrix whose classifiers split into a chance-level
and a strong cluster, the binned split gives the sources 7 chance-level models of 30,
mRMR's items separate the strong ones, and mrmr++ predicted the targets 2.3× worse
than kernel ridge on random items (sst2, seeds 0-2). The source models show it too,
out of fold (seed 0: 5.4 vs 3.5 pp). ``selection="auto"`` (the default) therefore makes the choice per run, by the
one out-of-fold loop: the whole method, selection included, and the same predictor on
a random coreset of the same size (``X++`` becomes ``random++``) predict held-out
source models on the same folds, and the random coreset is used only when its
squared errors are lower by more than one standard error of the paired difference
(:func:`random_is_better`; a warning says so, and :attr:`FittedMethod.selection`
records it). In ``benchmarks/results/selection_check.md`` (binned split, 30 sources,
10 %) this brings mrmr++ on sst2 from 2.32× to 1.00× random++'s RMSE, while its
σ⁻¹-aggregated RMSE on the 8 LLM matrices goes 2.94 → 2.93 pp (6 of 16 splits
switched) and anchor-points++'s 3.32 → 3.27 pp. It applies to selectors that read the
source scores, under predictors with ``compare_random_coreset``: the regression refits
(``X+``, ``X++``) and stacking (``stack-mrmr`` becomes ``stack-random``). Stacking is
compared on the cross-fitted out-of-fold residuals its own fit already computes
(:meth:`coreval.base.Predictor.out_of_fold_residuals`), so its check costs one fit of
``stack-random``. metabench's Fisher items are compared with random items under its GAM
the same way as the regression refits (the folds' IRT fits come from the cache). On the
binned split at a 10 % budget, seeds 0-2 (``benchmarks/results/metabench.md``), the check
took random items in all 18 GLUE splits and in 53 of the 72 LLM ones; the σ⁻¹-aggregated
RMSE on the 8 LLM matrices went 4.70 → 3.60 pp at M = 15, 3.63 → 3.35 at M = 30 and
2.86 → 2.78 at M = 50, its coverage 0.99 → 0.92, 0.96 → 0.91 and 0.97 → 0.93, and sst2
from 7.2× random++'s RMSE to 1.2× (M = 30); on mmlu, where the Fisher items were the
better ones for the targets, it went 2.65 → 4.05 (M = 30). Over the nine settings of
M ∈ {15, 30, 50} and budgets 5/10/15 % the aggregated RMSE fell in eight and rose in one
(M = 50, 5 %: 3.30 → 3.50), coverage was 0.89-0.95, and both GLUE matrices stayed within
1.3× random++. irt-bayes with a coreset
chosen from the IRT fit (``coreset="anchors"`` or ``"fisher"``) is compared the same way,
on the out-of-fold residuals of its misfit folds (selection re-run per fold, blend
included); the random coreset's fit reuses the IRT fits of the same folds from the cache.
gp-irt is not checked: its out-of-fold comparison was not reliable (mrpc, seed 0: it
moved to random items and the target RMSE went from 3.89 to 7.16 pp), and a misfitting
IRT model is handled by the IRT fit's own choices; the adaptive tests and random coresets are not checked either. Cost for the
regression refits: two out-of-fold runs, one of them the calibration's own (reused),
the other of the cheaper random-coreset pipeline.
``selection="method"`` keeps the method's selector (as the papers' reproductions do);
``"random"`` forces the random coreset.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import joblib
import numpy as np
import pandas as pd

from coreval.base import (
    Coreset,
    FitCache,
    FoldRefit,
    Prediction,
    Predictor,
    Selector,
    out_of_fold,
    repeated_fold_seeds,
    source_fingerprint,
)
from coreval.base.checks import check_positive_int, check_seed
from coreval.base.conformal import (
    conformal_scales,
    resolve_conformal_scale,
    split_conformal_interval,
)
from coreval.base.crossval import worse_by_one_se
from coreval.data.matrix import ScoreMatrix
from coreval.errors import TooFewModelsError, ValidationError, preview
from coreval.methods.registry import Component, Method
from coreval.model_check import ModelCheck, check_model, is_checked
from coreval.regression.ridge_loo import ridge_baseline
from coreval.selection.random import RandomSelector

Calibration = Literal["auto", "native", "cv"]
#: Accepted ``calibration=`` values.
CALIBRATIONS: tuple[str, ...] = ("auto", "native", "cv")
#: Folds of ``calibration="cv"`` (and of ``"auto"`` where it means ``"cv"``).
CV_FOLDS = 10
#: Repetitions of that cross-validation, each with another assignment to folds.
CV_REPEATS = 1
IntervalScale = Literal["constant", "bernoulli", "quadratic", "auto"]
#: Accepted ``interval_scale=`` values (module docstring, "Interval scale").
INTERVAL_SCALES: tuple[str, ...] = ("constant", "bernoulli", "quadratic", "auto")
#: Keywords of :func:`fit_method` itself, accepted beside a method's own options.
PIPELINE_OPTIONS: tuple[str, ...] = ("calibration", "folds", "repeats", "selection",
                                     "interval_scale")
Selection = Literal["auto", "method", "random"]
#: Accepted ``selection=`` values (module docstring, "Checked selection").
SELECTIONS: tuple[str, ...] = ("auto", "method", "random")


def check_options(method: Method, options: dict[str, Any]) -> None:
    """Raise before any work when ``options`` has an unknown option, calibration or selection."""
    calibration = options.get("calibration", "auto")
    if calibration not in CALIBRATIONS:
        raise ValidationError(f"calibration must be one of {CALIBRATIONS}, got {calibration!r}")
    selection = options.get("selection", "auto")
    if selection not in SELECTIONS:
        raise ValidationError(f"selection must be one of {SELECTIONS}, got {selection!r}")
    scale = options.get("interval_scale", "quadratic")
    if scale not in INTERVAL_SCALES:
        raise ValidationError(f"interval_scale must be one of {INTERVAL_SCALES}, got {scale!r}")
    method.route({k: v for k, v in options.items() if k not in PIPELINE_OPTIONS})


def random_variant(method: Method, options: Mapping[str, Any]) -> tuple[Method, dict[str, Any]]:
    """``method`` with a random coreset in place of its selector, and the options it keeps.

    The predictor and its options are unchanged (``mrmr++`` becomes ``random++``); the
    selector's own options are dropped.
    """
    _, predictor_options = method.route(options)
    variant = replace(method, selector=Component(RandomSelector))
    return variant, {f"predictor__{k}": v for k, v in predictor_options.items()}


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
        Wall-clock seconds of ``select`` (the final coreset's selector) and ``fit`` (the rest:
        fitting, the selection check and the calibration). A fit reused from ``cache``
        counts with the seconds it took when it was made (:meth:`FitCache.clock`), so the
        numbers do not depend on what ran before with the same cache.
    calibration : {"native", "cv"}
        Which interval :meth:`predict` returns (see the module docstring); ``"auto"``
        is resolved to one of them by :func:`resolve_calibration`.
    cv_residuals : ndarray or None
        Out-of-fold absolute residuals of the whole pipeline (``calibration="cv"``),
        shape ``(repeats, n_source)``: one row per assignment of the models to folds.
    cv_means : ndarray or None
        The out-of-fold predictions behind ``cv_residuals`` (same shape).
    interval_scale : {"constant", "bernoulli", "quadratic"}
        How the ``"cv"`` interval's half-width varies with the prediction (module
        docstring, "Interval scale"; ``"auto"`` is resolved when fitting).
    selection : {"method", "random"}
        Whose coreset this is: the method's selector, or the random coreset that
        ``selection="auto"`` (or ``"random"``) put in its place; with ``"random"``,
        ``method`` is :func:`random_variant` of the registered method.
    selection_rmse : dict or None
        Out-of-fold RMSE on the source models of each candidate that
        ``selection="auto"`` compared (``{"method": ..., "random": ...}``).
    seed : int
        The seed the selector and predictor were fitted with.
    options : dict
        The method options they were fitted with (what :func:`fit_method` was given).
    budget : float or None
        The budget the coreset size came from (fraction or count), where known.
    score_range : (float, float) or None
        The range a full score of the source can take (:meth:`ScoreMatrix.score_range`),
        against which an interval's width is judged; ``None`` where unknown.
    model_check : ModelCheck or None
        Criticism of the IRT fit behind the predictions, for the methods that predict
        through one (p-irt, gp-irt, metabench, irt-bayes): a posterior predictive check on
        the source models and the out-of-fold RMSE against a ridge regression fitted on
        the same folds with the same coresets (:func:`coreval.model_check.check_model`);
        None for the other methods.
    """

    method: Method
    selector: Selector
    predictor: Predictor
    coreset: Coreset
    seconds: dict[str, float] = field(default_factory=dict)
    calibration: Calibration = "native"
    cv_residuals: np.ndarray | None = None
    cv_means: np.ndarray | None = None
    interval_scale: Literal["constant", "bernoulli", "quadratic"] = "constant"
    clip01: bool = False
    source_items: np.ndarray | None = None
    n_source: int = 0
    seed: int = 0
    options: dict[str, Any] = field(default_factory=dict)
    budget: float | None = None
    selection: Literal["method", "random"] = "method"
    selection_rmse: dict[str, float] | None = None
    score_range: tuple[float, float] | None = None
    model_check: ModelCheck | None = None

    def responses_from(self, responses: Mapping[str, float] | pd.Series | np.ndarray) -> np.ndarray:
        """Align a new model's responses (by item id, or an array in coreset order) to the coreset."""
        if isinstance(responses, np.ndarray | list | tuple):
            try:
                x = np.asarray(responses, dtype=float)
            except (TypeError, ValueError):
                raise ValidationError("responses must be numbers (an array in coreset order, "
                                      "or a mapping from item id to score)") from None
            if x.ndim == 0:
                raise ValidationError("responses must be an array in coreset order, got a "
                                      "single number")
            if x.shape[-1] != len(self.coreset):
                raise ValidationError(
                    f"got {x.shape[-1]} responses for a coreset of {len(self.coreset)} columns"
                )
            return x
        try:
            series = pd.Series(responses)
            values = pd.to_numeric(series, errors="coerce")
        except (TypeError, ValueError) as exc:
            raise ValidationError(f"responses must map item ids to numbers: {exc}") from None
        bad = values.isna() & series.notna()
        if bad.any():
            raise ValidationError("responses must be numbers; got "
                                  + ", ".join(f"{i}={v!r}" for i, v in series[bad].head(5).items()))
        series = values.astype(float)
        series.index = series.index.astype(str)
        if series.index.duplicated().any():
            raise ValidationError(
                f"duplicate item ids in responses: {preview(series.index[series.index.duplicated()])}"
            )
        wanted = set(self.coreset.items.astype(str))
        known = wanted if self.source_items is None else set(self.source_items.astype(str))
        unknown = [i for i in series.index if i not in known and i not in wanted]
        if unknown:
            raise ValidationError(f"responses name items that are not in the source data: "
                                  f"{preview(unknown)}")
        extra = [i for i in series.index if i not in wanted]
        if extra:  # e.g. a whole lm-eval log of the new model: only the coreset is used
            warnings.warn(f"ignored responses to {len(extra)} item(s) outside the coreset of "
                          f"{len(wanted)} (e.g. {preview(extra, 3)})", UserWarning,
                          stacklevel=3)
            series = series[[i in wanted for i in series.index]]
        coreset_items = self.coreset.items.astype(str)
        if not series.index.isin(coreset_items).any() and len(series):
            raise ValidationError(
                f"responses share no item with the coreset of {len(wanted)} (coreset items "
                f"e.g. {preview(coreset_items, 3)}; responses e.g. {preview(series.index, 3)})")
        aligned = series.reindex(coreset_items)
        missing = list(aligned.index[aligned.isna()])
        if missing and not self.predictor.allows_missing_responses:
            raise ValidationError(
                f"responses lack coreset items (missing or NaN; {self.method.name}'s "
                f"{type(self.predictor).__name__} needs every one): {preview(missing)}")
        return aligned.to_numpy()

    def predict(self, responses) -> Prediction:
        """Predict the full score(s) of new model(s) from their coreset responses."""
        return self.predict_array(self.responses_from(responses))

    def predict_array(self, x: np.ndarray, level: float | None = None) -> Prediction:
        """Predict from responses on the coreset columns (array, coreset order).

        ``level`` asks for an interval at another nominal level than the
        predictor's own (see :meth:`predict_levels`).
        """
        if level is not None:
            return self.predict_levels(x, [level])[float(level)]
        pred = self.predictor.predict(x)
        if self.calibration == "native":
            return pred
        return self._cv_interval(pred, pred.level)

    def predict_levels(self, x: np.ndarray, levels) -> dict[float, Prediction]:
        """Predictions with intervals at several nominal levels (calibration reports).

        The interval at each level is made the way this method makes its own:
        split conformal on the out-of-fold residuals (``calibration="cv"``),
        quantiles of the posterior draws, the predictor re-run with
        ``set_params(level=...)``, or else a normal approximation
        (:meth:`coreval.base.Prediction.at_level`).
        """
        levels = [float(v) for v in levels]
        base = self.predictor.predict(x)
        if self.calibration == "cv":
            return {lv: self._cv_interval(base, lv) for lv in levels}
        if base.draws is not None or "level" not in self.predictor.get_params(deep=False):
            return {lv: base.at_level(lv) for lv in levels}
        original = self.predictor.get_params(deep=False)["level"]
        try:
            out = {}
            for lv in levels:
                self.predictor.set_params(level=lv)
                out[lv] = self.predictor.predict(x)
            return out
        finally:
            self.predictor.set_params(level=original)

    def _cv_interval(self, pred: Prediction, level: float) -> Prediction:
        scales = conformal_scales(self.interval_scale, pred.mean, self.cv_means,
                                  self.cv_residuals)
        lower, upper = split_conformal_interval(pred.mean, self.cv_residuals, level, **scales)
        if self.clip01:
            lower, upper = np.clip(lower, 0.0, 1.0), np.clip(upper, 0.0, 1.0)
        return replace(pred, lower=lower, upper=upper, level=level, interval="cv-residual",
                       draws=None)


def resolve_calibration(calibration: str, method: Method, selector: Selector,
                        predictor: Predictor) -> str:
    """``"native"`` or ``"cv"`` for ``calibration="auto"`` (module docstring); others unchanged.

    ``"cv"`` exactly when the method scores models (``task="score"``), its predictor's
    interval is not already selection-aware (``Predictor.selection_aware_interval``), and
    either its selector read the source models' scores (``Selector.uses_source_models``)
    or the predictor's own interval leaves out part of what it learnt from them
    (``Predictor.native_interval_complete`` false: metabench's GAM on random items).
    """
    if calibration != "auto":
        return calibration
    if (method.task == "score"
            and not bool(getattr(predictor, "selection_aware_interval", False))
            and (bool(getattr(selector, "uses_source_models", True))
                 or not bool(getattr(predictor, "native_interval_complete", True)))):
        return "cv"
    return "native"


def resolve_interval_scale(interval_scale: str, truth: np.ndarray, oof_mean: np.ndarray,
                           source: ScoreMatrix) -> str:
    """``"constant"``, ``"bernoulli"`` or ``"quadratic"`` (module docstring, "Interval scale").

    ``truth`` and ``oof_mean`` are the out-of-fold truths and predictions of the source
    models, shape ``(repeats, n_source)``; ``"auto"`` is resolved by
    :func:`coreval.base.conformal.resolve_conformal_scale` on the source scores' range.
    """
    return resolve_conformal_scale(interval_scale, truth, oof_mean, source.score_range())


def fit_method(method: Method, source: ScoreMatrix, k: int, *, seed: int = 0,
               calibration: Calibration = "auto", folds: int = CV_FOLDS,
               repeats: int = CV_REPEATS, selection: Selection = "auto",
               interval_scale: IntervalScale = "quadratic",
               cache: FitCache | None = None, **options: Any) -> FittedMethod:
    """Fit ``method``'s selector (k columns) and predictor on ``source``.

    Parameters
    ----------
    method : Method
        A registered method.
    source : ScoreMatrix
        Source models.
    k : int
        Coreset size.
    seed : int
        Seed of the selector and predictor.
    calibration : {"auto", "native", "cv"}
        ``"native"``: the predictor's own interval. ``"cv"``: split-conformal
        interval from out-of-fold residuals of the whole pipeline, selection
        included (``folds``-fold over source models; module docstring). ``"auto"``
        (default): ``"cv"`` where the native interval would ignore a selection made
        from the source scores (:func:`resolve_calibration`).
    folds : int
        Number of folds for ``calibration="cv"`` and ``selection="auto"`` (at most
        the number of sources).
    repeats : int
        Repetitions of that cross-validation, each with another seeded assignment
        of the models to folds (the first is the run's own ``KFold``); their
        residuals are pooled (module docstring).
    selection : {"auto", "method", "random"}
        ``"auto"`` (default): keep the method's selector unless a random coreset of
        the same size, with the same predictor, predicts held-out source models
        better (module docstring, "Checked selection"). ``"method"``: always the
        method's selector. ``"random"``: always a random coreset.
    interval_scale : {"quadratic", "constant", "bernoulli", "auto"}
        Half-width of the ``"cv"`` interval: proportional to a quadratic variance
        function of ``ŷ`` fitted to the out-of-fold residuals (the default), the same for
        every model, proportional to ``sqrt(ŷ(1 − ŷ))``, or the one of the last two whose
        leave-one-out intervals score better on the source models (module docstring,
        "Interval scale"). Also passed to a predictor whose own interval takes it (the
        stacks). Ignored by other ``"native"`` intervals.
    cache : FitCache, optional
        Shared by the selector and the predictor (and every fold), so that a fit
        both need is made once; a new one is made when not given. A harness
        worker passes one per split so that several budgets share the IRT fit.
    **options
        Method options, routed to the selector and the predictor
        (:meth:`coreval.methods.Method.route`; an unknown option is an error).
    """
    seed = check_seed(seed)
    check_options(method, {**options, "calibration": calibration, "selection": selection,
                           "interval_scale": interval_scale})
    repeats = check_positive_int("repeats", repeats)
    # checked here: a bad value must not be caught below as "cross-validation impossible",
    # which would quietly drop the checked selection and the calibration
    folds = check_positive_int("folds", folds, minimum=2)
    if calibration == "cv" and method.task != "score":
        raise ValidationError(
            f"calibration='cv' supports score methods only; {method.name!r} imputes columns")
    cache = FitCache() if cache is None else cache
    fold_seeds = repeated_fold_seeds(seed, repeats)
    options = _with_interval_scale(method, options, interval_scale)
    if selection == "random":
        method, options = random_variant(method, options)
    cache.begin_run()  # each fit this run reuses counts once, with the seconds it took
    t0 = cache.clock()
    selector, predictor, refit, select_seconds = _fit_once(method, source, k, seed, cache,
                                                           options)
    checked = (selection == "auto" and method.task == "score"
               and bool(getattr(predictor, "compare_random_coreset", False))
               and bool(getattr(selector, "uses_source_models", True)))
    first, scores, used = None, None, "random" if selection == "random" else "method"
    if checked and predictor.out_of_fold_residuals() is not None:
        scores, chosen = _check_fitted_selection(method, source, k, seed, cache, options,
                                                 predictor)
        if chosen is not None:
            used = "random"
            method, options, (selector, predictor, refit, select_seconds) = chosen
    elif checked:
        first, scores, chosen = _check_selection(
            method, source, k, seed, cache, options,
            choice_refit(method, k, seed, cache, options, selector, predictor, refit),
            folds, fold_seeds[0], _baseline_for(predictor))
        if chosen is not None:
            used = "random"
            method, options, first = chosen
            selector, predictor, refit, select_seconds = _fit_once(method, source, k, seed,
                                                                   cache, options)
    residuals = ridge_residuals = means = None
    requested = calibration
    calibration = resolve_calibration(calibration, method, selector, predictor)
    if calibration == "cv":
        fold_fit = choice_refit(method, k, seed, cache, options, selector, predictor, refit)
        try:
            oofs = [first if r == 0 and first is not None else
                    out_of_fold(source, fold_fit, folds=folds, seed=fold_seed,
                                baseline=_baseline_for(predictor),
                                desc=f"{method.name} CV {r + 1}/{repeats}")
                    for r, fold_seed in enumerate(fold_seeds)]
            residuals = np.stack([np.abs(o.residuals) for o in oofs])
            means = np.stack([o.mean for o in oofs])
            interval_scale = resolve_interval_scale(
                interval_scale, np.stack([o.truth for o in oofs]), means, source)
            if all(o.baseline is not None for o in oofs):
                ridge_residuals = np.stack([o.truth - o.baseline for o in oofs])
        except ValidationError as err:
            if requested == "cv":
                raise
            # "auto" asked for what is possible: a method that cannot be re-run on a fold
            # (e.g. lasso with no non-zero coefficient on fewer models) keeps its own interval
            warnings.warn(f"{method.name}: calibration='auto' could not re-run the method on "
                          f"folds of the source models ({err}); its intervals are the "
                          "predictor's own, which ignore that the selection saw the source "
                          "scores", UserWarning, stacklevel=2)
            calibration = "native"
    checked_residuals = residuals
    if residuals is None and first is not None and first.baseline is not None:
        # a pipeline that keeps its own interval (the random coreset the check chose) is
        # still criticised on the check's out-of-fold run of it
        checked_residuals, ridge_residuals = (np.abs(first.residuals)[None],
                                              (first.truth - first.baseline)[None])
    check = check_model(method.name, predictor, source, checked_residuals, ridge_residuals,
                        seed=seed)
    total = cache.clock() - t0
    return FittedMethod(method, selector, predictor, selector.coreset_,
                        seconds={"select": select_seconds, "fit": total - select_seconds}, calibration=calibration,
                        cv_residuals=residuals,
                        cv_means=means if calibration == "cv" else None,
                        interval_scale=interval_scale if calibration == "cv" else "constant",
                        clip01=source.is_binary,
                        source_items=np.asarray(source.items).astype(str),
                        n_source=source.n_models, seed=seed, options=dict(options),
                        budget=float(k), selection=used, selection_rmse=scores,
                        score_range=source.score_range(), model_check=check)


def _with_interval_scale(method: Method, options: dict[str, Any],
                         interval_scale: str) -> dict[str, Any]:
    """``options`` with ``interval_scale`` passed on to a predictor whose own interval takes one.

    A predictor with an ``interval_scale`` parameter (the stacks' conformal interval on
    their own out-of-fold residuals) scales its interval as the pipeline's ``"cv"``
    interval would, unless the options set it (``predictor__interval_scale``).
    """
    params = getattr(method.predictor, "params", ())
    if "interval_scale" not in params or "predictor__interval_scale" in options:
        return options
    return {**options, "predictor__interval_scale": interval_scale}


def _fit_once(method: Method, source: ScoreMatrix, k: int, seed: int, cache: FitCache,
              options: dict[str, Any]) -> tuple[Selector, Predictor, FoldRefit, float]:
    """The selector and predictor fitted on ``source``, the method's refit, and the seconds
    the selection took (the rest of :func:`fit_method`, a selection check included, is
    counted as fitting).

    A random-coreset pipeline is kept in ``cache``: the selection check of a stack asks
    for the very fit of the random method it is compared with (``stack-mrmr``'s check
    fits ``stack-random``), and a harness split runs both with one cache. The key is the
    selector's and predictor's classes and parameters, not the method's name, so the two
    meet; the fit is deterministic, so reusing it changes no number.
    """
    def fit() -> tuple[Selector, Predictor, FoldRefit, float]:
        return _fit_pipeline(method, source, k, seed, cache, options)

    if getattr(method.selector, "cls", None) is not RandomSelector:
        return fit()
    selector = method.make_selector(k=k, seed=seed, **options)
    predictor = method.make_predictor(seed=seed, **options)
    spec = joblib.hash([(type(est).__qualname__, sorted(est.get_params(deep=False).items()))
                        for est in (selector, predictor)])
    return cache.get_or_fit(("pipeline", source_fingerprint(source), spec), fit)


def _fit_pipeline(method: Method, source: ScoreMatrix, k: int, seed: int, cache: FitCache,
                  options: dict[str, Any]) -> tuple[Selector, Predictor, FoldRefit, float]:
    """:func:`_fit_once` without the cache."""
    refit = fold_refit(method, k, seed=seed, cache=cache, options=options)
    try:
        t0 = cache.clock()
        selector = method.make_selector(k=k, seed=seed, **options).fit(source, cache=cache)
        select_seconds = cache.clock() - t0
        # the predictor's own folds (irt-bayes' misfit term, a stack's weights) reuse the
        # selector's choices too ("Choices in the folds")
        predictor = method.make_predictor(seed=seed, **options).fit(
            source, selector.coreset_, cache=cache,
            refit=choice_refit(method, k, seed, cache, options, selector, None, refit))
    except TooFewModelsError as err:
        runnable = methods_for(err.got, method.task)
        raise TooFewModelsError(
            f"{method.name}: {err}; methods that run with {err.got} source models: "
            f"{preview(runnable, 12) or 'none'}", needed=err.needed, got=err.got) from None
    return selector, predictor, refit, select_seconds


def random_is_better(own_squared: np.ndarray, random_squared: np.ndarray) -> bool:
    """The one-standard-error rule for ``selection="auto"``.

    The random coreset replaces the method's only when the method's squared out-of-fold
    errors are worse by more than one standard error of the paired difference
    (:func:`coreval.base.crossval.worse_by_one_se`): the method's selector is the
    user's choice, and with a few dozen source models a smaller difference is noise.
    """
    return worse_by_one_se(own_squared, random_squared)


def _baseline_for(predictor: Predictor) -> Any:
    """The ridge an out-of-fold run also fits for :mod:`coreval.model_check`, or None.

    The IRT methods' folds fit the ridge they are compared with, on the same coresets.
    """
    return ridge_baseline if is_checked(predictor) else None


def _check_selection(method: Method, source: ScoreMatrix, k: int, seed: int,
                     cache: FitCache, options: dict[str, Any], refit: FoldRefit, folds: int,
                     fold_seed: int, baseline: Any = None
                     ) -> tuple[Any, dict[str, float] | None, tuple | None]:
    """``selection="auto"``: the method and its :func:`random_variant`, out of fold.

    Returns the method's out-of-fold result (reused by the calibration), both RMSEs,
    and ``(variant, its options, its out-of-fold result)`` when the random coreset
    predicts the held-out sources better (else None). A method that cannot be re-run
    on folds is kept, with a warning. ``baseline`` (see :func:`out_of_fold`) is fitted
    on both runs' folds.
    """
    variant, variant_options = random_variant(method, options)
    variant_refit = fold_refit(variant, k, seed=seed, cache=cache, options=variant_options)
    try:
        own = out_of_fold(source, refit, folds=folds, seed=fold_seed, baseline=baseline,
                          desc=f"{method.name} CV 1")
        alt = out_of_fold(source, variant_refit, folds=folds, seed=fold_seed,
                          baseline=baseline, desc=f"{method.name} random-coreset check")
    except ValidationError as err:
        warnings.warn(f"{method.name}: selection='auto' could not re-run the method on folds "
                      f"of the source models ({err}); its own selector is kept unchecked",
                      UserWarning, stacklevel=3)
        return None, None, None
    scores, better = _compare_coresets(method.name, k, (own.rows, own.residuals),
                                       (alt.rows, alt.residuals))
    return own, scores, (variant, variant_options, alt) if better else None


def _check_fitted_selection(method: Method, source: ScoreMatrix, k: int, seed: int,
                            cache: FitCache, options: dict[str, Any], predictor: Predictor
                            ) -> tuple[dict[str, float] | None, tuple | None]:
    """``selection="auto"`` for a predictor that ran its own out-of-fold stage (stacking).

    The :func:`random_variant` is fitted, and the two fits' own out-of-fold residuals
    (:meth:`coreval.base.Predictor.out_of_fold_residuals`, same folds: same seed) are
    compared. Returns both RMSEs and, when the random coreset is better,
    ``(variant, its options, its _fit_once result)``.
    """
    variant, variant_options = random_variant(method, options)
    fitted = _fit_once(variant, source, k, seed, cache, variant_options)
    alt = fitted[1].out_of_fold_residuals()
    if alt is None:
        return None, None
    scores, better = _compare_coresets(method.name, k, predictor.out_of_fold_residuals(), alt)
    return scores, (variant, variant_options, fitted) if better else None


def _compare_coresets(name: str, k: int, own: tuple[np.ndarray, np.ndarray],
                      alt: tuple[np.ndarray, np.ndarray]) -> tuple[dict[str, float], bool]:
    """Both coresets' out-of-fold RMSEs (pp, rows both predicted) and :func:`random_is_better`.

    ``own`` and ``alt`` are ``(rows, residuals)`` of the method and its random variant.
    Warns when the random coreset is better.
    """
    common = np.intersect1d(own[0], alt[0])
    squared = {label: residuals[np.isin(rows, common)] ** 2
               for label, (rows, residuals) in (("method", own), ("random", alt))}
    scores = {label: 100 * float(np.sqrt(np.mean(sq))) for label, sq in squared.items()}
    better = random_is_better(squared["method"], squared["random"])
    if better:
        warnings.warn(f"{name}: a random coreset of {k} items predicts held-out source models "
                      f"better than the method's own ({scores['random']:.2f} vs "
                      f"{scores['method']:.2f} pp RMSE out of fold), so it is used; "
                      "selection='method' keeps the method's selector", UserWarning,
                      stacklevel=4)
    return scores, better

def _needs(component: Any) -> int:
    cls = component.cls if hasattr(component, "cls") else component
    return int(getattr(cls, "min_source_models", 2)) if getattr(
        cls, "uses_source_models", True) is not False else 0


def methods_for(n_source: int, task: str = "score") -> list[str]:
    """Registered methods of ``task`` whose selector and predictor accept ``n_source`` models.

    A hint for error messages: it reads the components' declared ``min_source_models``
    (other requirements, such as binary data, are not checked).
    """
    from coreval.methods import Choice, available_methods, get_method

    out = []
    for name in available_methods(task):
        m = get_method(name)
        sel = m.selector.choices[m.selector.default] if isinstance(m.selector, Choice) \
            else m.selector
        if max(_needs(sel), _needs(m.predictor)) <= n_source:
            out.append(name)
    return out


def choice_refit(method: Method, k: int, seed: int, cache: FitCache | None,
                 options: dict[str, Any], selector: Selector, predictor: Predictor | None,
                 refit: FoldRefit) -> FoldRefit:
    """The method's refit with the ``"auto"`` choices of this run's fit held fixed.

    The options that the fitted selector and predictor report
    (:meth:`~coreval.base.Selector.resolved_options`, e.g. gp-irt's
    ``{"model": "3pl", "priors": "signed"}``) are added to ``options``, so that the
    folds of the interval calibration and of the selection check reuse the choice the
    run made on all source models instead of making it again in every fold (module
    docstring, "Choices in the folds"). An option the two components resolved
    differently is left to each fold. ``predictor=None`` (the refit handed to the
    predictor's own folds, before it is fitted) pins the selector's choices alone.
    ``refit`` itself when nothing was chosen.
    """
    chosen = selector.resolved_options()
    for name, value in ({} if predictor is None else predictor.resolved_options()).items():
        if chosen.setdefault(name, value) != value:
            chosen[name] = None
    chosen = {name: value for name, value in chosen.items()
              if value is not None and options.get(name, "auto") == "auto"}
    if not chosen:
        return refit
    return fold_refit(method, k, seed=seed, cache=cache, options={**options, **chosen})


def fold_refit(method: Method, k: int, *, seed: int, cache: FitCache | None,
               options: dict[str, Any]) -> FoldRefit:
    """``refit(sub, **params)``: the whole method, selection included, fitted on ``sub``.

    ``params`` override predictor parameters (e.g. irt-bayes' misfit term is
    estimated from fold fits without it). This is the function every
    out-of-fold estimate uses (:func:`coreval.base.out_of_fold`).
    """
    def refit(sub: ScoreMatrix, **params: Any) -> tuple[Coreset, Predictor]:
        selector = method.make_selector(k=min(k, sub.n_items), seed=seed, **options)
        coreset = selector.fit(sub, cache=cache).coreset_
        predictor = method.make_predictor(seed=seed, **options).set_params(**params)
        return coreset, predictor.fit(sub, coreset, cache=cache, refit=refit)

    return refit
