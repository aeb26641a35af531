"""Adaptive tests as a predictor, so that the harness runs them on the same splits.

Each target model takes an adaptive test (:mod:`coreval.adaptive`) over the bank of
:class:`coreval.selection.item_bank.ItemBankSelector`, answering from its recorded row
(items it has no score for are never asked), and stops at the budget or when the full
score's interval is narrow enough.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from coreval.adaptive import (
    AdaptiveTest,
    ItemBank,
    any_of,
    calibrate_exposure,
    max_items,
    score_width,
)
from coreval.adaptive.estimate import fitted_moments, unasked_share
from coreval.adaptive.misfit import (
    MISFIT_SHAPES,
    misfit_factor,
    padded_paths,
    stopped_coverage,
    stopped_widths,
    width_stop_misfit,
)
from coreval.base import Coreset, Prediction, Predictor, out_of_fold
from coreval.base.conformal import conformal_inflation
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.source_fit import BAYES_FIT, fit_source_irt


def _last_steps(predictor: AdaptivePredictor, x: np.ndarray) -> np.ndarray:
    """The last step ``(mean, v, ρ)`` of each test in ``predictor``'s last predict (for
    ``out_of_fold``)."""
    return np.array([path[-1] for path in predictor.paths_]).reshape(-1, 3)


def _moments(state) -> tuple[float, float, float]:
    """The full score's mean, its variance without the misfit term, and ``ρ``."""
    return (*fitted_moments(state), unasked_share(state))


def _padded_paths(predictor: AdaptivePredictor, x: np.ndarray) -> np.ndarray:
    """The last predict's trajectories as one row per model (for ``out_of_fold``).

    Row ``[means | variances | shares]``, each block ``n_items + 1`` long and NaN after
    the test's last step.
    """
    return np.hstack(padded_paths(predictor.paths_, predictor.bank_.n_items + 1))


class AdaptivePredictor(Predictor):
    """Run an adaptive test per target model and predict its full score.

    Parameters
    ----------
    rule : {"score", "fisher", "kl"}
        Selection rule (:mod:`coreval.adaptive.select`).
    width : float, optional
        Also stop once the ``level`` interval of the full score is at most this wide.
    batch : int
        Items per batch.
    randomesque : int
        Exposure control: pick among this many best items.
    max_exposure : float, optional
        Exposure control: no item is given to more than this share of the models of one
        :meth:`predict` call. Two parts: Sympson-Hetter parameters, calibrated at fit
        time on tests of the budget's length taken by the source models, answering from
        their recorded rows (:func:`coreval.adaptive.calibrate_exposure`, 10 rounds),
        spread the items over the tests; they are fitted to the source models, so on
        other models some items still go over. A ceiling then makes the share a
        guarantee: an item given to ``max(1, floor(max_exposure · N))`` of the ``N``
        models is withdrawn from the remaining tests (the restricted method of Revuelta
        & Ponsoda 1998, over the models of the call).
    tau : float or "cv"
        Misfit standard deviation ``τ`` of a full score predicted from no answers; a
        test adds ``τ ρ`` to its predictive distribution, ``ρ`` the share of the score
        it has not answered (:mod:`coreval.adaptive.estimate`). ``"cv"`` (default)
        learns it from the source models as irt-bayes does: ``tau_folds``-fold, every
        fold refits the bank without its models (through the one out-of-fold loop, so a
        pipeline re-runs the selection too), each held-out source model takes the
        adaptive test with ``τ = 0``, and ``τ²`` is the split-conformal inflation of
        their predictive variances with scales ``ρ_m``
        (:func:`coreval.base.conformal.conformal_inflation`): the smallest ``τ²`` whose
        Gaussian ``level`` intervals cover ``level`` of the held-out source models.
        With ``width``, the stop itself depends on ``τ``: the held-out tests then run to
        the budget with ``τ = 0`` and ``τ`` is the smallest value whose replayed width
        stops cover ``level`` of them (:mod:`coreval.adaptive.misfit`), so it is learnt
        where the tests it is used in stop; the fit then costs as much as held-out tests
        of the full budget.
    misfit_shape : {"share", "bernoulli-sd", "bernoulli-var", "auto"}
        How the misfit term scales with a test's state, ``τ g``
        (:func:`coreval.adaptive.misfit.misfit_factor`): ``"share"`` (default) ``g = ρ``;
        the Bernoulli shapes also shrink it for a model whose predicted score is near 0
        or 1. ``"auto"`` learns ``τ`` for each shape on the held-out source tests that
        ``tau="cv"`` runs anyway (a replay of the same tests: no test or fit is added)
        and keeps the shape whose calibrated tests are the most efficient: with
        ``width``, the fewest items asked at the replayed stops, then the narrower mean
        interval there; without, the narrower mean interval at the budget. A tie keeps
        ``"share"``. Like ``choose_dims``, the choice uses the source models only, inside
        each run. Needs ``tau="cv"``. Replayed on stored tests of three Open LLM v2
        matrices (``benchmarks/results/adaptive_misfit_shape.md``), the choice cut the
        items of the 4 pp stop on ifeval from 0.71 to 0.65 of a random sample's, at a
        higher RMSE at the stop; elsewhere it changed them by 0.01-0.03.
    tau_folds : int
        Folds of the source models for ``tau="cv"`` (10, as ``calibration="cv"`` in
        :mod:`coreval.pipeline`). A fold's bank is fitted on ``(K − 1)/K`` of the source
        models and the targets' on all of them, so the held-out tests are scored by a bank
        that differs from the one in use, by less as ``K`` grows. Measured with cat-fisher
        on the random split of 100 source models, seeds 0-4
        (``benchmarks/results/adaptive_tau_folds.md``): 5 folds covered the targets 0.925
        (arc_challenge, 2 %), 0.872 (ifeval, 5 %) and 0.889 (openllm_math, 2 %), 10 folds
        0.908, 0.897 and 0.882, at about the same time.
    irt : IRTFitSpec
        The IRT fit (the bank selector's, through the caller's cache).
    choose_dims : bool
        Also build banks from fits with 2, ..., ``max_dims`` latent dimensions (``irt``
        with ``dims=D``; their ability posterior by adaptive quadrature,
        :mod:`coreval.adaptive.laplace`) and keep whichever bank's held-out source tests,
        the ones ``tau="cv"`` runs anyway, do best: the lowest out-of-fold RMSE at the
        budget, or with ``width`` the fewest items asked under the stop with the τ learnt
        for each (all then cover ``level`` of the held-out tests). With ``width``, equal
        items (every held-out test of the banks stopped by the budget) go to the
        narrower mean interval at the stop, again with each bank's own τ. A full tie
        keeps the fewer dimensions. The choice uses the source models only, inside each
        run (as irt-bayes' ``choose_dims``).
        Needs ``tau="cv"`` and a 1-D ``irt``. Cost: the misfit folds and the final fit
        once per candidate D, those with D ≥ 2 slower (each answer moves the quadrature
        nodes; :func:`coreval.adaptive.bank.laplace_nodes` per axis).
    max_dims : int
        The most latent dimensions ``choose_dims`` tries (2: a 1-D and a 2-D bank).
    level : float
    seed : int
    show_progress : bool, optional

    Attributes
    ----------
    bank_ : ItemBank
    irt_spec_ : IRTFitSpec
        The IRT fit the bank comes from (``irt``, or the version with the dimensions
        chosen by ``choose_dims``).
    dims_criterion_ : dict or None
        With ``choose_dims``: each candidate's criterion (out-of-fold RMSE, or mean
        items at the width stop) under its best misfit shape, keyed by D.
    dims_width_ : dict or None
        With ``choose_dims`` and ``width``: each candidate's mean interval width at the
        replayed stops (the tie-break), keyed by D.
    misfit_paths_ : dict
        With ``tau="cv"`` and ``width``: each candidate bank's held-out source tests,
        keyed by D, as ``(truth, means, variances, shares)`` (the arguments of
        :func:`coreval.adaptive.misfit.width_stop_misfit`), so that a stop can be replayed
        under other widths or τ without running the tests again.
    tau_ : float
        The misfit standard deviation in use.
    misfit_shape_ : str
        The misfit shape in use (``misfit_shape``, or the one ``"auto"`` chose).
    shape_criterion_ : dict or None
        With ``misfit_shape="auto"``: each shape's ``(τ, criterion, mean width)`` at the
        chosen D, the criterion being the mean items at the width stop or, without
        ``width``, the out-of-fold RMSE (the same for every shape).
    exposure_ : ndarray or None
        Sympson-Hetter parameters ``k_i`` (with ``max_exposure``).
    items_used_ : ndarray
        Items each model of the last :meth:`predict` answered.
    asked_ : ndarray of bool, shape (n_models, n_items)
        Which bank items each model of the last :meth:`predict` answered.
    paths_ : list of ndarray, shape (n_steps + 1, 3)
        Each test of the last :meth:`predict`: the full score's predicted mean, its
        variance without the misfit term, and the unanswered share ``ρ``, before the
        first item and after each batch.
    """

    needs_binary = True
    #: The misfit term τ is learnt out of fold on the source models (tau="cv").
    selection_aware_interval = True
    allows_missing_responses = True

    def __init__(self, *, rule: str = "score", width: float | None = None, batch: int = 1,
                 randomesque: int = 1, max_exposure: float | None = None,
                 tau: float | str = "cv", misfit_shape: str = "share", tau_folds: int = 10,
                 irt: IRTFitSpec = BAYES_FIT, choose_dims: bool = False, max_dims: int = 2,
                 level: float = 0.9, seed: int = 0, show_progress: bool | None = None) -> None:
        self.rule = rule
        self.width = width
        self.batch = batch
        self.randomesque = randomesque
        self.max_exposure = max_exposure
        self.tau = tau
        self.misfit_shape = misfit_shape
        self.tau_folds = tau_folds
        self.irt = irt
        self.choose_dims = choose_dims
        self.max_dims = max_dims
        self.level = level
        self.seed = seed
        self.show_progress = show_progress

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if coreset.max_items is None:
            raise ValidationError("AdaptivePredictor needs an item bank "
                                  "(ItemBankSelector) as its coreset")
        if self.tau != "cv" and not (isinstance(self.tau, int | float) and self.tau >= 0):
            raise ValidationError(f"tau must be 'cv' or a number >= 0, got {self.tau!r}")
        if self.misfit_shape not in (*MISFIT_SHAPES, "auto"):
            raise ValidationError(f"misfit_shape must be one of {', '.join(MISFIT_SHAPES)} "
                                  f"or auto, got {self.misfit_shape!r}")
        if self.misfit_shape == "auto" and self.tau != "cv":
            raise ValidationError("misfit_shape='auto' needs tau='cv' (its held-out tests "
                                  f"are the criterion); got tau={self.tau!r}")
        if self.tau == "cv" and int(self.tau_folds) < 2:
            raise ValidationError(f"tau_folds must be at least 2, got {self.tau_folds}")
        if self.max_exposure is not None and not 0 < self.max_exposure <= 1:
            raise ValidationError(f"max_exposure must be in (0, 1], got {self.max_exposure!r}")
        if self.choose_dims and (self.tau != "cv" or self.irt.dims != 1):
            raise ValidationError("choose_dims needs tau='cv' (its held-out tests are the "
                                  f"criterion) and a 1-D irt; got tau={self.tau!r}, "
                                  f"dims={self.irt.dims}")
        if self.choose_dims and (isinstance(self.max_dims, bool)
                                 or not isinstance(self.max_dims, int | np.integer)
                                 or self.max_dims < 2):
            raise ValidationError(f"max_dims must be an integer of at least 2, got "
                                  f"{self.max_dims!r}")
        self.misfit_paths_ = {}
        specs = [self.irt] + ([self.irt.replace(dims=dims)
                               for dims in range(2, int(self.max_dims) + 1)]
                              if self.choose_dims else [])
        # (τ, criterion) per (D, shape); the criterion is compared lower first, a full tie
        # keeps the fewer dimensions and the earlier shape
        found = {}
        for spec in specs:
            if self.tau == "cv":
                for shape, value in self._misfit(source, spec, coreset.indices).items():
                    found[spec.dims, shape] = value
            else:
                found[spec.dims, self.misfit_shape] = (float(self.tau), (np.nan, np.nan))

        def best(keys):
            return min(keys, key=lambda key: (*np.nan_to_num(found[key][1], nan=np.inf),
                                              key[0], MISFIT_SHAPES.index(key[1])))

        per_dims = {dims: best([key for key in found if key[0] == dims])
                    for dims in dict.fromkeys(key[0] for key in found)}
        self.dims_criterion_ = ({dims: float(found[key][1][0]) for dims, key in per_dims.items()}
                                if self.choose_dims else None)
        self.dims_width_ = ({dims: float(found[key][1][1]) for dims, key in per_dims.items()}
                            if self.choose_dims and self.width is not None else None)
        dims, self.misfit_shape_ = best(found)
        self.shape_criterion_ = ({shape: (float(found[dims, shape][0]),
                                          *map(float, found[dims, shape][1]))
                                  for shape in MISFIT_SHAPES}
                                 if self.misfit_shape == "auto" else None)
        self.irt_spec_ = self.irt.replace(dims=dims)
        self.tau_ = found[dims, self.misfit_shape_][0]
        irt_fit = fit_source_irt(source, self.irt_spec_, seed=self.seed, cache=self.cache_,
                                 show_progress=self.show_progress)
        self.bank_ = self._bank(ItemBank.from_fit(irt_fit, source), coreset.indices, self.tau_,
                                self.misfit_shape_)
        self.exposure_ = None if self.max_exposure is None else calibrate_exposure(
            self.bank_, float(self.max_exposure), n_items=min(int(coreset.max_items),
                                                              self.bank_.n_items),
            rule=self.rule, responses=source.values[:, coreset.indices], n_rounds=10,
            seed=self.seed)

    @staticmethod
    def _bank(bank: ItemBank, cols: np.ndarray, tau: float, shape: str) -> ItemBank:
        """The items ``cols`` of ``bank`` with misfit ``tau`` of shape ``shape``."""
        return ItemBank(items=bank.items[cols], a=bank.a[:, cols], d=bank.d[:, cols],
                        c=None if bank.c is None else bank.c[:, cols],
                        weights=bank.weights[cols],
                        groups=None if bank.groups is None else bank.groups[cols], tau=tau,
                        misfit_shape=shape)

    def _shapes(self) -> tuple[str, ...]:
        """The misfit shapes to learn ``τ`` for."""
        return MISFIT_SHAPES if self.misfit_shape == "auto" else (self.misfit_shape,)

    def _misfit(self, source: ScoreMatrix, irt: IRTFitSpec,
                cols: np.ndarray) -> dict[str, tuple[float, tuple[float, float]]]:
        """Per misfit shape, ``τ`` by split conformal on out-of-fold adaptive tests (see
        ``tau``) over the bank of ``irt`` (items ``cols``), and the tests' criterion for
        ``choose_dims`` and ``misfit_shape="auto"``: their RMSE (NaN where there are none)
        and mean interval width at the budget, or with ``width`` the mean items and the
        mean width at the stop; compared in that order, lower first."""
        shapes = self._shapes()
        ok = np.flatnonzero(~np.isnan(source.values).any(axis=1))
        if len(ok) < 2:
            return dict.fromkeys(shapes, (0.0, (np.nan, np.nan)))
        total = float(source.item_weights()[cols].sum())
        params = {"tau": 0.0, "misfit_shape": "share", "irt": irt, "choose_dims": False}
        if self.width is not None:
            return self._width_misfit(source, ok, params, total)
        oof = out_of_fold(source, self.refit_, folds=int(self.tau_folds), seed=self.seed,
                          rows=ok, params=params, show_progress=self.show_progress,
                          desc="adaptive misfit folds", collect=_last_steps)
        if len(oof.rows) == 0 or oof.variance is None:
            return dict.fromkeys(shapes, (0.0, (np.nan, np.nan)))
        rmse = float(np.sqrt(np.mean(oof.residuals ** 2)))
        z = float(norm.ppf(0.5 + self.level / 2.0))
        found = {}
        for shape in shapes:
            scales = misfit_factor(shape, oof.collected[:, 2], oof.collected[:, 0] / total)
            # a model that answered every item (or sits at 0 or 1 for the Bernoulli
            # shapes) has no misfit to learn from
            keep = scales > 0
            tau2 = (conformal_inflation(oof.residuals[keep] ** 2, oof.variance[keep],
                                        self.level, scales=scales[keep])
                    if keep.any() else 0.0)
            width = 2.0 * z * float(np.mean(np.sqrt(oof.variance + tau2 * scales**2)))
            found[shape] = (float(np.sqrt(tau2)), (rmse, width))
        return found

    def _width_misfit(self, source: ScoreMatrix, rows: np.ndarray, params: dict,
                      total: float) -> dict[str, tuple[float, tuple[float, float]]]:
        """Per misfit shape, ``τ`` for the width stop: held-out tests run to the budget
        with ``τ = 0``, their trajectories replayed under each candidate ``τ``
        (:func:`coreval.adaptive.misfit.width_stop_misfit`); and the mean number of items
        the replayed stops ask under that ``τ`` and the mean width of their intervals."""
        shapes = self._shapes()
        oof = out_of_fold(source, self.refit_, folds=int(self.tau_folds), seed=self.seed,
                          rows=rows, params={**params, "width": None},
                          show_progress=self.show_progress, desc="adaptive misfit folds",
                          collect=_padded_paths)
        if len(oof.rows) == 0:
            return dict.fromkeys(shapes, (0.0, (np.nan, np.nan)))
        means, variances, shares = np.split(oof.collected, 3, axis=1)
        self.misfit_paths_[params["irt"].dims] = (oof.truth, means, variances, shares)
        found = {}
        for shape in shapes:
            scales = misfit_factor(shape, shares, means / total)
            tau = width_stop_misfit(oof.truth, means, variances, scales,
                                    width=float(self.width), level=self.level)
            steps, _ = stopped_coverage(tau, oof.truth, means, variances, scales,
                                        width=float(self.width), level=self.level)
            widths = stopped_widths(tau, variances, scales, steps, level=self.level)
            found[shape] = (tau, (float(np.mean(steps)) * int(self.batch),
                                  float(np.mean(widths))))
        return found

    @property
    def stop_(self):
        """The stopping rule: the budget, or an interval of at most ``width``.

        Derived from the parameters and the coreset rather than stored, so that the
        fitted state is data only (a saved selection holds no functions).
        """
        stops = [max_items(int(self.coreset_.max_items))]
        if self.width is not None:
            stops.append(score_width(self.width, self.level))
        return any_of(*stops)

    def _predict(self, x: np.ndarray) -> Prediction:
        means, lowers, uppers, used, draws, paths = [], [], [], [], [], []
        asked = np.zeros(x.shape, dtype=bool)
        ceiling = None if self.max_exposure is None else \
            max(1, int(np.floor(float(self.max_exposure) * len(x) + 1e-9)))
        given = np.zeros(x.shape[1], dtype=int)  # models each item has gone to
        for j, row in enumerate(x):
            answered = ~np.isnan(row)  # an item the model has no score for is never asked
            exposure = answered.astype(float)
            if self.exposure_ is not None:
                exposure = exposure * self.exposure_
            if ceiling is not None:  # restricted method: withdraw items at the ceiling
                exposure = exposure * (given < ceiling)
            test = AdaptiveTest(self.bank_, rule=self.rule, stop=self.stop_,
                                randomesque=self.randomesque, exposure=exposure,
                                level=self.level, seed=self.seed + j)
            path = [_moments(test.state)]
            while not test.done:
                items = test.next_items(self.batch)
                test.answer(items, row[self.bank_.positions(items)])
                path.append(_moments(test.state))
            pred = test.estimate()
            paths.append(np.asarray(path))
            means.append(pred.mean[0])
            lowers.append(pred.lower[0])
            uppers.append(pred.upper[0])
            draws.append(pred.draws[:, 0])
            used.append(test.state.n_asked)
            asked[j, test.state.asked] = True
            given[test.state.asked] += 1
        self.items_used_ = np.asarray(used)
        self.asked_ = asked
        self.paths_ = paths
        return Prediction(mean=np.asarray(means), lower=np.asarray(lowers),
                          upper=np.asarray(uppers), level=self.level, interval="posterior",
                          draws=np.stack(draws, axis=1) if draws else None)
