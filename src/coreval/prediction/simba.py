"""SimBA pounce as a coreval predictor: impute every benchmark from the selected ones.

Subramani et al. (2025), "SimBA", pounce phase: a scikit-learn regressor (ridge, kNN or an MLP
with one or two hidden layers) maps a model's normalised scores on the selected benchmarks to its
normalised scores on the others; predictions are mapped back to native units. Intervals are
split-conformal (Lei et al. 2018): the source models are split once into a proper training
part and a calibration part, the regressors are fitted on the training part only, and each
benchmark's interval half-width is the conformal quantile of its calibration residuals (native
units, observed calibration entries only).
"""

from __future__ import annotations

import math

import numpy as np

from coreval.base import Coreset, Prediction, Predictor
from coreval.base.conformal import split_conformal_interval
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.simba.normalise import ChanceSpec, SimbaNormaliser
from coreval.simba.pounce import REGRESSORS, ColumnwiseRegressor, make_regressor


class SimbaPredictor(Predictor):
    """Impute all benchmarks of new models from their scores on the SimBA coreset.

    Parameters
    ----------
    predictor : {"ridge", "knn", "mlp", "mlp2"}
        Pounce regressor (see :func:`coreval.simba.pounce.make_regressor`).
    level : float
        Nominal coverage of the split-conformal intervals.
    calibration_fraction : float
        Share of source models held out for calibration; raised to the
        ``ceil(level / (1 - level))`` models that a finite split-conformal quantile needs
        (9 at level 0.9) when the source allows at least 3 training models besides.
    chance : float, array-like, dict or None
        Chance level per benchmark in native units (default 0).
    n_neighbors : int
        Neighbours of the kNN regressor.
    hidden : int
        Hidden-layer width of the MLPs.
    seed : int
        Seed of the calibration split and the MLP.

    Attributes
    ----------
    normaliser_ : SimbaNormaliser
        Fitted on all source models.
    model_ : ColumnwiseRegressor
        Regressors of every benchmark (fitted on the proper training models).
    calibration_residuals_ : ndarray of shape (n_calibration, n_columns)
        Residuals of the calibration models in native units (NaN where unobserved).
    quantile_ : ndarray of shape (n_columns,)
        Conformal half-width per benchmark at ``level`` in native units (inf where a
        benchmark has too few observed calibration entries for the level, or none); taken
        when predicting, so a changed ``level`` applies without refitting.
    columns_ : ndarray of str
        Source column ids (the columns of ``Prediction.mean``).
    train_rows_, calibration_rows_ : ndarray of int
        Source rows of the proper training and calibration parts.

    Notes
    -----
    Missing coreset responses are imputed with the training models' means (normalised
    space). A selected benchmark the model has keeps its observed value (zero-width interval).

    References
    ----------
    Subramani et al. (2025), SimBA, pounce phase. Lei et al. (2018), JASA 113(523),
    split conformal prediction.
    """

    task = "impute"
    allows_missing_responses = True
    min_source_models = 4

    def __init__(self, predictor: str = "ridge", level: float = 0.9, *,
                 calibration_fraction: float = 0.3, chance: ChanceSpec = None,
                 n_neighbors: int = 5, hidden: int = 64, seed: int = 0) -> None:
        self.predictor = predictor
        self.level = level
        self.calibration_fraction = calibration_fraction
        self.chance = chance
        self.n_neighbors = n_neighbors
        self.hidden = hidden
        self.seed = seed

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        if self.predictor not in REGRESSORS:
            raise ValidationError(
                f"unknown predictor {self.predictor!r}; expected one of {', '.join(REGRESSORS)}")
        if not 0.0 < self.level < 1.0:
            raise ValidationError(f"level must be in (0, 1), got {self.level}")
        if not 0.0 < self.calibration_fraction < 1.0:
            raise ValidationError(
                f"calibration_fraction must be in (0, 1), got {self.calibration_fraction}")
        y = source.values
        n = y.shape[0]
        needed = math.ceil(self.level / (1.0 - self.level) - 1e-9)  # finite quantile
        n_cal = max(1, round(self.calibration_fraction * n))
        n_cal = max(n_cal, min(needed, n - 3))
        if n - n_cal < 3:
            raise ValidationError(
                "SimbaPredictor needs at least 3 training models after calibration, "
                f"got {n - n_cal}")
        self.normaliser_ = SimbaNormaliser(self.chance).fit(y, source.items)
        z = self.normaliser_.transform(y, clip=False)
        perm = np.random.default_rng(self.seed).permutation(n)
        cal, train = np.sort(perm[:n_cal]), np.sort(perm[n_cal:])
        sel = coreset.indices
        template = make_regressor(self.predictor, seed=self.seed, n_neighbors=self.n_neighbors,
                                  hidden=self.hidden, n_train=len(train))
        self.model_ = ColumnwiseRegressor(template).fit(z[np.ix_(train, sel)], z[train])
        fitted = self.model_.predict(z[np.ix_(cal, sel)])
        self.calibration_residuals_ = y[cal] - self.normaliser_.inverse_transform(fitted)
        self.columns_ = source.items
        self.train_rows_, self.calibration_rows_ = train, cal

    @property
    def quantile_(self) -> np.ndarray:
        """Per-benchmark split-conformal half-widths at ``level`` (inf where a benchmark has
        no or too few calibration entries: no information)."""
        resid = self.calibration_residuals_
        out = np.full(resid.shape[1], np.inf)
        for j in range(resid.shape[1]):
            r = resid[:, j][np.isfinite(resid[:, j])]
            if r.size:
                _lo, hi = split_conformal_interval(0.0, r, self.level)
                out[j] = float(hi)
        return out

    def _predict(self, x: np.ndarray) -> Prediction:
        sel = self.coreset_.indices
        zx = self.normaliser_.transform(x, clip=False, columns=sel)
        mean = self.normaliser_.inverse_transform(self.model_.predict(zx))
        lower, upper = mean - self.quantile_, mean + self.quantile_
        for col, j in enumerate(sel):
            rows = np.flatnonzero(~np.isnan(x[:, col]))
            mean[rows, j] = lower[rows, j] = upper[rows, j] = x[rows, col]
        return Prediction(mean=mean, lower=lower, upper=upper, level=self.level,
                          interval="split-conformal", columns=self.columns_)
