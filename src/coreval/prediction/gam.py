"""metabench's GAM predictor: full score from (IRT ability on the coreset, coreset mean).

The ability of each model is its maximum-likelihood 2PL ability on the coreset
items only (bounded to [-4, 4], as the reference), with item parameters of the
IRT fit of the selector (through the caller's fit cache) or fitted here.
A pygam ``LinearGAM(s(0) + s(1))`` maps ``(θ̂, mean coreset score)`` to the
summary score. Its smoothing penalty is chosen on the source models by generalised
cross-validation (pyGAM's ``gridsearch``), as the reference's R ``mgcv::gam`` does by
default; a fixed penalty (pyGAM's default 0.6) overfits 40 spline coefficients to a few
dozen source models (metabench scored 17.8 pp RMSE at M = 15 with it).

References
----------
Kipnis, A. et al. (2025). metabench: A Sparse Benchmark of Reasoning and Knowledge in
Large Language Models. ICLR (score reconstruction with a GAM).
Servén, D. & Brummitt, C. (2018). pyGAM: Generalized Additive Models in Python.
"""

from __future__ import annotations

import numpy as np
from pygam import LinearGAM, s

from coreval.base import Coreset, Prediction, Predictor
from coreval.base.conformal import jackknife_plus_interval
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.logistic import estimate_abilities
from coreval.irt.source_fit import METABENCH_FIT, fit_source_irt, logistic_item_params

#: Interval kinds of :class:`GAMPredictor`.
INTERVALS = ("jackknife+", "posterior")
#: Smoothing penalties searched by ``lam="gcv"`` (the same for both terms).
LAM_GRID = np.logspace(-3, 5, 17)


class GAMPredictor(Predictor):
    """pygam ``LinearGAM(s(θ̂) + s(coreset mean))`` → summary score (metabench).

    Parameters
    ----------
    level : float
        Nominal coverage of the interval.
    theta_bounds : (low, high)
        Bounds of the ability MLE on the coreset (reference: (-4, 4)).
    n_splines : int
        Largest basis size of each smooth term (pygam default 20). The basis used is
        ``min(n_splines, max(4, n_source // 3))``: with about as many coefficients as
        source models, GCV is degenerate and picks an interpolating fit (measured: 15
        models and 20 splines per term give an effective 14.8 degrees of freedom and
        90 % intervals ±16 wide on a [0, 1] score).
    lam : float or "gcv"
        Smoothing penalty of each term. ``"gcv"`` (default): the value of ``LAM_GRID``
        with the lowest generalised cross-validation score on the source models
        (Wood 2006, sec. 4.5); a large penalty makes a term linear.
    irt : IRTFitSpec
        The IRT fit of the source models (1-D logistic; default
        :data:`coreval.irt.source_fit.METABENCH_FIT`, the Fisher selector's, whose
        fit is reused through the caller's cache).
    interval : {"jackknife+", "posterior"}
        ``"jackknife+"`` (default): the GAM is refitted without each source model
        (with the penalties chosen on all of them) and the interval is jackknife+ on
        the leave-one-out residuals (Barber et al. 2021). ``"posterior"``: pygam's
        ``prediction_intervals``, the Bayesian posterior of the penalised spline
        coefficients plus the residual scale (Wood, S. N. (2006), Generalized
        Additive Models: An Introduction with R); it ignores that the penalties were
        chosen on the same models and under-covers (measured 0.23-0.83 at nominal
        0.9 on gsm / arc_challenge / mmlu, M = 15 and 30).
    seed : int
    show_progress : bool, optional
    """

    needs_binary = True
    #: metabench's Fisher coreset is read from an IRT fit of the source models; where
    #: that fit misses the new models (chance-level classifiers among the sources, items
    #: that only the weak sources got wrong) it fails every predictor, so
    #: ``selection="auto"`` compares it with random items under the same GAM
    #: (benchmarks/results/metabench.md).
    compare_random_coreset = True
    #: The jackknife+ refits keep the IRT fit behind θ̂ and the penalties chosen on all
    #: the source models, so its residuals are optimistic: measured on random splits of
    #: 30 sources at 10 % (8 LLM matrices, seeds 0-4), metabench, mostly on the random
    #: items of its check, covered 0.86 with it (0.78-0.93 per matrix).
    #: ``calibration="auto"`` uses the out-of-fold interval instead
    #: (``split_coverage_baselines.md``).
    native_interval_complete = False

    def __init__(self, *, level: float = 0.9, theta_bounds: tuple[float, float] = (-4.0, 4.0),
                 n_splines: int = 20, lam: float | str = "gcv",
                 irt: IRTFitSpec = METABENCH_FIT, interval: str = "jackknife+", seed: int = 0,
                 show_progress: bool | None = None) -> None:
        self.level = level
        self.theta_bounds = theta_bounds
        self.n_splines = n_splines
        self.lam = lam
        self.interval = interval
        self.irt = irt
        self.seed = seed
        self.show_progress = show_progress

    def _features(self, x: np.ndarray) -> np.ndarray:
        theta = estimate_abilities(x, self.a_, self.d_, self.c_, bounds=self.theta_bounds)
        return np.column_stack([theta[:, 0], x.mean(axis=1)])

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValidationError(f"level must be in (0, 1), got {self.level}")
        if self.lam != "gcv" and not (isinstance(self.lam, int | float) and self.lam > 0):
            raise ValidationError(f"lam must be 'gcv' or a positive number, got {self.lam!r}")
        if self.interval not in INTERVALS:
            raise ValidationError(f"interval must be one of {', '.join(INTERVALS)}; "
                                  f"got {self.interval!r}")
        irt_fit = fit_source_irt(source, self.irt, seed=self.seed, cache=self.cache_,
                                 show_progress=self.show_progress)
        a, d, c = logistic_item_params(irt_fit)
        if a.shape[1] != 1:
            raise ValidationError(f"GAMPredictor needs a 1-D IRT fit, got {a.shape[1]} dims")
        cols = coreset.indices
        self.irt_fit_ = irt_fit
        self.a_, self.d_ = a[cols], d[cols]
        self.c_ = None if c is None else c[cols]
        x = source.values[:, cols]
        if np.isnan(x).any():
            raise ValidationError("GAMPredictor needs source scores on every coreset item")
        y = source.summary_scores()
        self.binary_ = source.is_binary
        features = self._features(x)
        n_splines = min(int(self.n_splines), max(4, source.n_models // 3))
        self.n_splines_ = n_splines
        if self.lam == "gcv":
            self.gam_ = _gam(n_splines).gridsearch(features, y, lam=LAM_GRID,
                                                   objective="GCV", progress=False)
        else:
            self.gam_ = _gam(n_splines, [float(self.lam)] * 2).fit(features, y)
        self.loo_gams_: list[LinearGAM] = []
        self.loo_residuals_ = np.empty(0)
        if self.interval == "jackknife+":
            lams = [float(np.ravel(lam)[0]) for lam in self.gam_.lam]
            everyone = np.arange(len(y))
            self.loo_gams_ = [_gam(n_splines, lams).fit(features[everyone != i],
                                                        y[everyone != i])
                              for i in everyone]
            self.loo_residuals_ = np.abs(y - np.array([
                g.predict(features[i:i + 1])[0] for i, g in enumerate(self.loo_gams_)]))

    def _predict(self, x: np.ndarray) -> Prediction:
        features = self._features(x)
        mean = self.gam_.predict(features)
        if self.interval == "jackknife+":
            loo_at_x = np.stack([g.predict(features) for g in self.loo_gams_], axis=1)
            lower, upper = jackknife_plus_interval(loo_at_x, self.loo_residuals_, self.level)
        else:
            bounds = self.gam_.prediction_intervals(features, width=self.level)
            lower, upper = bounds[:, 0], bounds[:, 1]
        if self.binary_:
            mean, lower, upper = (np.clip(v, 0.0, 1.0) for v in (mean, lower, upper))
        return Prediction(mean=mean, lower=lower, upper=upper, level=self.level,
                          interval=self.interval)


def _gam(n_splines: int, lams: list[float] | None = None) -> LinearGAM:
    """``LinearGAM(s(θ̂) + s(coreset mean))`` with ``n_splines`` per term (and penalties)."""
    kw = [{} if lams is None else {"lam": lam} for lam in (lams or [None, None])]
    return LinearGAM(s(0, n_splines=n_splines, **kw[0]) + s(1, n_splines=n_splines, **kw[1]),
                     fit_intercept=True)
