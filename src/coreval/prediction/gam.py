"""metabench's GAM predictor: full score from (IRT ability on the coreset, coreset mean).

The ability of each model is its maximum-likelihood 2PL ability on the coreset
items only (bounded to [-4, 4], as the reference), with item parameters of the
IRT fit of the selector (through the caller's fit cache) or fitted here.
A pygam ``LinearGAM(s(0) + s(1))`` maps ``(θ̂, mean coreset score)`` to the
summary score.

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
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.fit_spec import IRTFitSpec
from coreval.irt.logistic import estimate_abilities
from coreval.irt.source_fit import METABENCH_FIT, fit_source_irt, logistic_item_params


class GAMPredictor(Predictor):
    """pygam ``LinearGAM(s(θ̂) + s(coreset mean))`` → summary score (metabench).

    Parameters
    ----------
    level : float
        Nominal coverage of the interval.
    theta_bounds : (low, high)
        Bounds of the ability MLE on the coreset (reference: (-4, 4)).
    n_splines : int
        Basis size of each smooth term (pygam default 20).
    irt : IRTFitSpec
        The IRT fit of the source models (1-D logistic; default
        :data:`coreval.irt.source_fit.METABENCH_FIT`, the Fisher selector's, whose
        fit is reused through the caller's cache).
    seed : int
    show_progress : bool, optional

    Notes
    -----
    Interval (``"posterior"``): pygam's ``prediction_intervals``, i.e. the
    Bayesian posterior of the penalised spline coefficients plus the estimated
    residual scale (Wood, S. N. (2006), Generalized Additive Models: An
    Introduction with R).
    """

    needs_binary = True

    def __init__(self, *, level: float = 0.9, theta_bounds: tuple[float, float] = (-4.0, 4.0),
                 n_splines: int = 20, irt: IRTFitSpec = METABENCH_FIT, seed: int = 0,
                 show_progress: bool | None = None) -> None:
        self.level = level
        self.theta_bounds = theta_bounds
        self.n_splines = n_splines
        self.irt = irt
        self.seed = seed
        self.show_progress = show_progress

    def _features(self, x: np.ndarray) -> np.ndarray:
        theta = estimate_abilities(x, self.a_, self.d_, self.c_, bounds=self.theta_bounds)
        return np.column_stack([theta[:, 0], x.mean(axis=1)])

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if not 0.0 < self.level < 1.0:
            raise ValidationError(f"level must be in (0, 1), got {self.level}")
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
        self.gam_ = LinearGAM(s(0, n_splines=self.n_splines) + s(1, n_splines=self.n_splines),
                              fit_intercept=True).fit(self._features(x), y)

    def _predict(self, x: np.ndarray) -> Prediction:
        features = self._features(x)
        mean = self.gam_.predict(features)
        bounds = self.gam_.prediction_intervals(features, width=self.level)
        lower, upper = bounds[:, 0], bounds[:, 1]
        if self.binary_:
            mean, lower, upper = (np.clip(v, 0.0, 1.0) for v in (mean, lower, upper))
        return Prediction(mean=mean, lower=lower, upper=upper, level=self.level,
                          interval="posterior")
