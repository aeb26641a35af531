"""Whole-benchmark imputation with bias-decomposed low-rank completion (BenchPress).

Both predictors fit the low-rank engine (:mod:`coreval.lowrank`) on the source models and
predict a new model's unselected benchmarks from its scores on the selected ones, by folding
the new row into the fitted column parameters (:mod:`coreval.lowrank.foldin`):

* :class:`LowRankImputer` — logit Bias-ALS (Zeng & Papailiopoulos 2026; rank 2, lambda 0.1,
  10 starts), a new row folded in by its empirical-Bayes posterior mean (``fold_in="prior"``,
  :func:`coreval.lowrank.foldin.als_row_prior`) or by the fit's ridge (``"ridge"``); its
  interval is split conformal on source models held out in
  ``calibration_folds`` folds and folded in from their selected benchmarks, as a new model
  would be (``interval="split-conformal"``);
* :class:`BayesLowRankImputer` — the Bayesian model (:func:`coreval.lowrank.lowrank_model`,
  NUTS), with the posterior predictive interval of each benchmark (``interval="posterior"``).

As in :class:`~coreval.prediction.gaussian_imputer.GaussianImputer`, a selected benchmark the
model has keeps its observed value (zero-width interval), a model with none of the selected
benchmarks gets a NaN row.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from coreval.base import Coreset, Prediction, Predictor
from coreval.base.cache import get_or_fit, source_fingerprint
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.lowrank import (
    complete_als,
    conformal_factor,
    fit_als,
    fit_lowrank_nuts,
    fit_transform,
    forward,
    forward_observed,
    inverse,
)
from coreval.lowrank.foldin import als_fold_in, als_row_prior, bayes_fold_in
from coreval.lowrank.rank_choice import check_ranks, fit_best_rank

FOLD_INS: tuple[str, ...] = ("prior", "ridge")


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValidationError(f"level must be in (0, 1), got {level}")


def _z_source(values: np.ndarray, transform: str):
    ct = fit_transform(values, transform=transform, fractions=True)
    return ct, *forward_observed(ct, values)


def _patterns(usable: np.ndarray):
    """Row groups sharing one pattern of usable selected columns (rows with none skipped)."""
    patterns, inv = np.unique(usable, axis=0, return_inverse=True)
    for g, pattern in enumerate(patterns):
        if pattern.any():
            yield np.flatnonzero(inv.ravel() == g), np.flatnonzero(pattern)


def _coreset_z(ct, sel: np.ndarray, x: np.ndarray) -> np.ndarray:
    """Responses ``x`` on the coreset columns ``sel``, in the transformed space of ``ct``."""
    sub = ct._replace(logit=ct.logit[sel], percent=ct.percent[sel], mean=ct.mean[sel],
                      std=ct.std[sel], scale=ct.scale[sel])
    return forward(sub, x)


def _keep_observed(mean, lower, upper, x, sel, usable) -> None:
    has = ~np.isnan(x) & usable.any(axis=1)[:, None]
    for col in range(len(sel)):
        rows = np.flatnonzero(has[:, col])
        mean[rows, sel[col]] = lower[rows, sel[col]] = upper[rows, sel[col]] = x[rows, col]


class LowRankImputer(Predictor):
    """Impute every benchmark of new models with logit Bias-ALS (BenchPress's default).

    Parameters
    ----------
    rank : int
        Rank of ``U V^T``.
    lam : float
        Ridge penalty of ALS.
    transform : {"logit", "identity"}
        Transform of percentage columns (:func:`coreval.lowrank.fit_transform`; columns on a
        0-1 scale are read as fractions).
    n_iter, n_ensemble : int
        ALS sweeps per start and starts averaged.
    fold_in : {"prior", "ridge"}
        How a new model's bias and factors are estimated from its selected benchmarks:
        ``"prior"``, the posterior mean under the empirical distribution of the source
        models' ``(a, u)`` and the fit's residual variance; ``"ridge"``, the fit's own ridge
        ``lam``, tuned for rows of many cells: a row of k = 5 cells and ``rank + 1``
        unknowns is then barely penalised (``benchmarks/results/benchpress.md`` compares
        both on MTEB and MERGED).
    level : float
        Nominal coverage of the split-conformal intervals.
    calibration_folds : int
        Source models are split into this many folds; each fold is folded in from its
        selected benchmarks into a fit on the others, and the ``level`` conformal quantile of
        the absolute z-space residuals on their other benchmarks is the interval's half-width
        (taken when predicting, so a changed ``level`` applies without refitting).
    seed : int
        Seed of the ALS starts and of the calibration folds.

    Attributes
    ----------
    transform_ : ColumnTransform
    states_ : list of ALSState
        The fitted starts.
    priors_ : list of RowPrior or None
        Their empirical row priors (``fold_in="prior"``).
    calibration_residuals_ : ndarray
        Absolute z-space residuals of the calibration folds.
    half_width_ : float
        Half-width of the interval at ``level`` in the transformed, standardised space.
    columns_ : ndarray of str
    """

    task = "impute"
    allows_missing_responses = True

    def __init__(self, rank: int = 2, lam: float = 0.1, *, transform: str = "logit",
                 n_iter: int = 40, n_ensemble: int = 10, fold_in: str = "prior",
                 level: float = 0.9, calibration_folds: int = 5, seed: int = 42) -> None:
        self.rank = rank
        self.lam = lam
        self.transform = transform
        self.n_iter = n_iter
        self.n_ensemble = n_ensemble
        self.fold_in = fold_in
        self.level = level
        self.calibration_folds = calibration_folds
        self.seed = seed

    def _complete(self, z: np.ndarray, observed: np.ndarray, n_ensemble: int) -> list:
        return complete_als(z, observed, rank=self.rank, lam=self.lam, n_iter=self.n_iter,
                            n_ensemble=n_ensemble, seed=self.seed)[1]

    def _priors(self, states: list, z: np.ndarray, observed: np.ndarray) -> list | None:
        if self.fold_in == "ridge":
            return None
        return [als_row_prior(st, z, observed) for st in states]

    def _calibrate(self, values: np.ndarray, sel: np.ndarray) -> np.ndarray:
        """Absolute z-space residuals of source models folded in out of fold.

        Each fold's transform (logit / standardisation of the columns) is fitted on the
        other folds only and maps the held-out models' scores, as the final transform maps a
        new model's: the calibration models do not shape the space they are scored in.
        """
        n = values.shape[0]
        k = int(self.calibration_folds)
        if k < 2 or n < 2 * k:
            raise ValidationError(f"calibration_folds must be >= 2 and at most half the "
                                  f"{n} source models, got {self.calibration_folds}")
        fold = np.random.default_rng(self.seed).permutation(n) % k
        resid = []
        for f in range(k):
            test = fold == f
            ct, observed, z = _z_source(values[~test], self.transform)
            states = self._complete(z, observed, max(2, self.n_ensemble // 3))
            priors = self._priors(states, z, observed)
            o_t, z_t = forward_observed(ct, values[test])
            for rows, cols in _patterns(o_t[:, sel]):
                pred = als_fold_in(z_t[np.ix_(rows, sel[cols])], sel[cols], states, self.lam,
                                   priors)
                other = o_t[rows].copy()
                other[:, sel] = False
                resid.append(np.abs(z_t[rows] - pred)[other])
        return np.concatenate(resid) if resid else np.array([])

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        _check_level(self.level)
        if self.fold_in not in FOLD_INS:
            raise ValidationError(f"fold_in must be one of {FOLD_INS}, got {self.fold_in!r}")
        values = np.asarray(source.values, dtype=np.float64)
        ct, observed, z = _z_source(values, self.transform)
        key = ("bias-als", source_fingerprint(source), self.transform, self.rank, self.lam,
               self.n_iter, self.n_ensemble, self.seed)
        self.states_ = get_or_fit(self.cache_, key,
                                  lambda: self._complete(z, observed, self.n_ensemble))
        self.priors_ = self._priors(self.states_, z, observed)
        self.calibration_residuals_ = self._calibrate(values, coreset.indices)
        self.transform_ = ct
        self.columns_ = source.items

    @property
    def half_width_(self) -> float:
        """The ``level`` conformal quantile of :attr:`calibration_residuals_`."""
        resid = self.calibration_residuals_
        return conformal_factor(resid, 0.0, np.ones_like(resid), self.level)

    def _predict(self, x: np.ndarray) -> Prediction:
        sel, ct = self.coreset_.indices, self.transform_
        z = _coreset_z(ct, sel, x)
        usable = ~np.isnan(z)
        n_models, n = x.shape[0], len(self.columns_)
        mean_z = np.full((n_models, n), np.nan)
        for rows, cols in _patterns(usable):
            mean_z[rows] = als_fold_in(z[np.ix_(rows, cols)], sel[cols], self.states_,
                                       self.lam, self.priors_)
        mean = inverse(ct, mean_z)
        half_width = self.half_width_
        lower = inverse(ct, mean_z - half_width)
        upper = inverse(ct, mean_z + half_width)
        _keep_observed(mean, lower, upper, x, sel, usable)
        return Prediction(mean=mean, lower=lower, upper=upper, level=self.level,
                          interval="split-conformal", columns=self.columns_)


class BayesLowRankImputer(Predictor):
    """Impute every benchmark of new models with the Bayesian low-rank model (NUTS).

    Parameters
    ----------
    rank : int or sequence of int
        Number of factors. Several candidates (e.g. ``(1, 2, 3, 4)``): each is fitted to the
        source models and the one with the highest PSIS-LOO expected log predictive density
        of their observed cells is kept (:func:`coreval.lowrank.fit_best_rank`; one NUTS
        fit per candidate).
    df : float or None
        Student-t degrees of freedom of the likelihood (``None``: normal).
    noise : {"column", "shared"}
        Per-benchmark or shared noise scale.
    transform : {"logit", "identity"}
    num_warmup, num_samples : int
        NUTS settings (one chain, started at a Bias-ALS fit).
    level : float
        Nominal coverage of the posterior predictive intervals.
    seed : int
        Seed of NUTS and of the predictive draws: same seed, same numbers.

    Attributes
    ----------
    transform_ : ColumnTransform
    posterior_ : dict
        Draws of the column parameters (:func:`coreval.lowrank.fit_lowrank_nuts`).
    rank_ : int
        The rank used.
    rank_choice_ : dict or None
        The PSIS-LOO scores behind the choice (None for a single rank).
    columns_ : ndarray of str
    """

    task = "impute"
    allows_missing_responses = True

    def __init__(self, rank: int | Sequence[int] = 2, df: float | None = 4.0, *,
                 noise: str = "column",
                 transform: str = "logit", num_warmup: int = 300, num_samples: int = 300,
                 level: float = 0.9, seed: int = 0) -> None:
        self.rank = rank
        self.df = df
        self.noise = noise
        self.transform = transform
        self.num_warmup = num_warmup
        self.num_samples = num_samples
        self.level = level
        self.seed = seed

    def _options(self) -> dict[str, Any]:
        return {"noise": self.noise, "df": self.df, "num_warmup": self.num_warmup,
                "num_samples": self.num_samples, "seed": self.seed}

    def _fit(self, source: ScoreMatrix, coreset: Coreset) -> None:
        _check_level(self.level)
        ct, observed, z = _z_source(np.asarray(source.values, dtype=np.float64),
                                    self.transform)
        options = self._options()
        ranks = check_ranks(self.rank)
        key = ("bayes-lowrank", source_fingerprint(source), self.transform, ranks,
               tuple(sorted(options.items())))

        def fit_rank(rank: int) -> dict[str, np.ndarray]:
            start = fit_als(z, observed, rank=rank, lam=0.1, seed=self.seed)
            return fit_lowrank_nuts(z, observed, rank=rank, init=start, **options)

        self.posterior_, self.rank_choice_ = get_or_fit(
            self.cache_, key, lambda: fit_best_rank(fit_rank, ranks, z, observed, self.df))
        self.rank_ = (ranks[0] if self.rank_choice_ is None
                      else int(self.rank_choice_["rank"]))
        self.transform_ = ct
        self.columns_ = source.items

    def _predict(self, x: np.ndarray) -> Prediction:
        sel, ct = self.coreset_.indices, self.transform_
        z = _coreset_z(ct, sel, x)
        usable = ~np.isnan(z)
        n_models, n = x.shape[0], len(self.columns_)
        n_draw = self.posterior_["mu"].shape[0]
        mean_z = np.full((n_models, n), np.nan)
        draws_z = np.full((n_draw, n_models, n), np.nan)
        for row in np.flatnonzero(usable.any(axis=1)):
            # one stream per model, from the seed and its responses: a model's prediction
            # does not depend on the other models predicted with it
            rng = np.random.default_rng([int(self.seed), zlib.crc32(
                np.ascontiguousarray(x[row], dtype=np.float64).tobytes())])
            cols = np.flatnonzero(usable[row])
            cond, draws = bayes_fold_in(z[row:row + 1, cols], sel[cols], self.posterior_,
                                        rng, self.df)
            mean_z[row] = cond.mean(axis=0)[0]
            draws_z[:, row] = draws[:, 0]
        alpha = (1.0 - self.level) / 2.0
        lo_z, hi_z = np.quantile(draws_z, [alpha, 1.0 - alpha], axis=0)
        mean, lower, upper = inverse(ct, mean_z), inverse(ct, lo_z), inverse(ct, hi_z)
        draws = inverse(ct, draws_z)
        _keep_observed(mean, lower, upper, x, sel, usable)
        has = ~np.isnan(x) & usable.any(axis=1)[:, None]
        for col in range(len(sel)):
            draws[:, has[:, col], sel[col]] = x[has[:, col], col]
        return Prediction(mean=mean, lower=lower, upper=upper, level=self.level,
                          interval="posterior", draws=draws, columns=self.columns_)
