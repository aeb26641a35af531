"""The correlation estimate of a benchmark-level score matrix, shared through a fit cache.

Smola, "Submodular Benchmark Selection" (2026), Section 4.3 as run by the reference
``estimate_corr`` (``smolix/benchmark-selection``, ``code/eval_entropy_vs_mi.py``; protocol
sections 3-4):

1. per-column standardisation (:mod:`coreval.gaussian.standardize`);
2. a pairwise-complete covariance projected onto the PSD cone
   (:mod:`coreval.gaussian.covariance`), or
3. EM with missing entries (:mod:`coreval.gaussian.em`) with the protocol's settings,
   including the optional shrinkage;
4. the correlation ``R = Sigma / sqrt(diag Sigma diag Sigma^T)``.

The Gaussian selectors and imputer of one fold need the same estimate:
:func:`shared_estimate` goes through the caller's :class:`coreval.base.FitCache`, keyed by
``("gaussian-em", source fingerprint, options)``, so it is computed once when both are
given the same cache and options, and independently otherwise.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from coreval.base.cache import FitCache, get_or_fit, source_fingerprint
from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError, preview
from coreval.gaussian.covariance import project_psd
from coreval.gaussian.em import PROTOCOL_TOL, EMResult, em_covariance
from coreval.gaussian.standardize import Standardization, Transform, fit_standardization

Release = Literal["head", "prev"]
Estimator = Literal["auto", "em", "pairwise"]

#: Options of :func:`estimate_correlation` shared by the selectors and the imputer.
ESTIMATE_OPTIONS: tuple[str, ...] = (
    "estimator", "release", "max_iter", "eps", "shrinkage", "tol", "min_observed",
    "transform", "unit_diagonal", "n_threads",
)


@dataclass(frozen=True)
class CorrelationEstimate:
    """Correlation of the kept columns of a score matrix, with its standardisation.

    Attributes
    ----------
    correlation : ndarray of shape (n_kept, n_kept)
        ``R`` used for selection and imputation (standardised space).
    covariance : ndarray of shape (n_kept, n_kept)
        The estimated covariance of the standardised scores.
    columns : ndarray of int
        Positions (in the source matrix) of the kept columns; ``correlation`` is indexed
        in this order.
    standardization : Standardization
        Observed mean/std of the kept columns (to undo the standardisation).
    estimator : str
        ``"em"`` or ``"pairwise"``.
    em : EMResult or None
        EM diagnostics (iterations, convergence, log-likelihood trace).
    dropped : ndarray of int
        Positions of columns dropped for having fewer than ``min_observed`` entries.
    """

    correlation: np.ndarray
    covariance: np.ndarray
    columns: np.ndarray
    standardization: Standardization
    estimator: str
    em: EMResult | None = None
    dropped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))


def protocol_em_options(n_rows: int, n_cols: int, observed_fraction: float,
                        release: Release = "head") -> dict:
    """EM settings of the reference ``estimate_corr_em`` (protocol section 4 and 8).

    Parameters
    ----------
    n_rows, n_cols : int
        Training rows M and columns N.
    observed_fraction : float
        Fraction of observed training entries.
    release : {"head", "prev"}
        ``"head"`` (f339e73): "regularized" = ``M < N or observed < 0.5`` -> eps 1e-3 and
        1000 iterations, else eps 1e-6 and 500. ``"prev"`` (319b4e7, used for the paper's
        BenchPress row): eps 1e-3 if ``M < N`` else 1e-6, always 500 iterations.

    Returns
    -------
    dict
        ``max_iter``, ``eps`` and ``shrinkage`` ("auto" if ``M < N`` else 0.0).
    """
    shrink_opt: float | str = "auto" if n_rows < n_cols else 0.0
    if release == "head":
        regularized = n_rows < n_cols or observed_fraction < 0.5
        return {"max_iter": 1000 if regularized else 500,
                "eps": 1e-3 if regularized else 1e-6, "shrinkage": shrink_opt}
    if release == "prev":
        return {"max_iter": 500, "eps": 1e-3 if n_rows < n_cols else 1e-6,
                "shrinkage": shrink_opt}
    raise ValidationError(f"release must be 'head' or 'prev', got {release!r}")


def correlation_from_covariance(sigma: np.ndarray) -> np.ndarray:
    """``R = Sigma / sqrt(d d^T)`` with the diagonal floored at 1e-12 (protocol section 4.4)."""
    d_inv = 1.0 / np.sqrt(np.maximum(np.diag(sigma), 1e-12))
    return sigma * np.outer(d_inv, d_inv)


def estimate_correlation(values: np.ndarray, *, estimator: Estimator = "auto",
                         release: Release = "head", max_iter: int | None = None,
                         eps: float | None = None,
                         shrinkage: float | Literal["auto"] | None = None,
                         tol: float = PROTOCOL_TOL, min_observed: int = 2,
                         transform: Transform = "none", unit_diagonal: bool = False,
                         n_threads: int | None = 1, names: np.ndarray | None = None,
                         warn: bool = True) -> CorrelationEstimate:
    """Correlation matrix of benchmark scores as in the reference ``estimate_corr``.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
        Raw scores, NaN = missing.
    estimator : {"auto", "em", "pairwise"}
        "auto" follows the reference: EM if the observed fraction is < 0.9 or ``M < N``,
        else the pairwise-complete correlation (eigenvalue floor 1e-6, rescaled to unit
        diagonal, std floor 1e-6 instead of the relative floor).
    release : {"head", "prev"}
        Which reference release's EM settings to use when ``max_iter``/``eps``/``shrinkage``
        are not given (see :func:`protocol_em_options`).
    max_iter, eps, shrinkage : optional
        Override the protocol EM settings.
    tol : float
        EM tolerance (relative Frobenius change).
    min_observed : int
        Columns observed for fewer models are dropped with a warning naming them (they
        cannot be selected, and are predicted as NaN). Default 2: a single entry gives no
        variance. The reference code keeps them (``min_observed=1`` reproduces it).
    transform : {"none", "logit"}
        Score transform before standardising.
    unit_diagonal : bool
        Set ``diag(R)`` to exactly 1 (removes the rounding noise that decides the first greedy
        entropy pick of the reference, protocol section 5).
    n_threads : int or None
        BLAS threads during EM.
    names : ndarray of str, optional
        Column ids for the warning about dropped columns.
    warn : bool
        Warn when EM does not converge.

    Returns
    -------
    CorrelationEstimate
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValidationError(f"scores must be a 2-D matrix, got shape {values.shape}")
    if np.isinf(values).any():
        raise ValidationError("scores contain ±inf; use NaN for missing entries")
    if min_observed < 1:
        raise ValidationError(f"min_observed must be >= 1, got {min_observed}")
    if release not in ("head", "prev"):  # checked here too: the pairwise path never reads it
        raise ValidationError(f"release must be 'head' or 'prev', got {release!r}")
    counts = (~np.isnan(values)).sum(axis=0)
    keep = np.flatnonzero(counts >= min_observed)
    dropped = np.flatnonzero(counts < min_observed)
    if len(dropped):
        labels = dropped if names is None else np.asarray(names)[dropped]
        warnings.warn(f"dropping {len(dropped)} column(s) observed for fewer than "
                      f"{min_observed} models: {preview(labels)}", UserWarning, stacklevel=2)
    if len(keep) == 0:
        raise ValidationError(f"no column is observed for at least {min_observed} models")
    x = values[:, keep]
    m_rows, n = x.shape
    if m_rows < 2:
        raise ValidationError(f"need at least 2 models to estimate a covariance, got {m_rows}")
    observed = ~np.isnan(x)
    obs_frac = float(observed.mean())
    if estimator == "auto":
        estimator = "em" if (obs_frac < 0.9 or m_rows < n) else "pairwise"
    em_result = None
    if estimator == "pairwise":
        std = fit_standardization(x, floor=0.0, transform=transform)
        std = Standardization(std.mean, np.sqrt(np.maximum(std.std**2, 1e-12)), transform,
                              std.upper)
        z = np.where(observed, std.forward(x), 0.0)
        obs = observed.astype(np.float64)
        gram = (z.T @ z) / np.maximum(obs.T @ obs - 1.0, 1.0)
        sigma = project_psd(gram, 1e-6)
    elif estimator == "em":
        std = fit_standardization(x, transform=transform)
        z = np.where(observed, std.forward(x), 0.0)
        opts = protocol_em_options(m_rows, n, obs_frac, release)
        for key, val in (("max_iter", max_iter), ("eps", eps), ("shrinkage", shrinkage)):
            if val is not None:
                opts[key] = val
        em_result = em_covariance(z, observed, tol=tol, n_threads=n_threads, warn=warn, **opts)
        sigma = em_result.covariance
    else:
        raise ValidationError(f"estimator must be 'auto', 'em' or 'pairwise', got {estimator!r}")
    corr = correlation_from_covariance(sigma)
    if unit_diagonal:
        np.fill_diagonal(corr, 1.0)
    return CorrelationEstimate(correlation=corr, covariance=sigma, columns=keep,
                               standardization=std, estimator=estimator, em=em_result,
                               dropped=dropped)


def estimate_options(obj: Any) -> dict[str, Any]:
    """The estimation options of a selector or imputer (its :data:`ESTIMATE_OPTIONS` params)."""
    return {name: getattr(obj, name) for name in ESTIMATE_OPTIONS}


def shared_estimate(source: ScoreMatrix, options: Mapping[str, Any],
                    cache: FitCache | None) -> CorrelationEstimate:
    """Correlation estimate of ``source`` with ``options``, through ``cache`` when given.

    Parameters
    ----------
    source : ScoreMatrix
        Source (training) models.
    options : mapping
        Keyword arguments of :func:`estimate_correlation` (see :func:`estimate_options`).
    cache : FitCache or None
        The caller's cache; None estimates anew.

    Returns
    -------
    CorrelationEstimate
        Reused from ``cache`` under the key ``("gaussian-em", source_fingerprint(source),
        options)`` (options as sorted ``(name, value)`` pairs) when present.
    """
    key = ("gaussian-em", source_fingerprint(source), tuple(sorted(options.items())))
    return get_or_fit(cache, key, lambda: estimate_correlation(
        source.values, names=source.items, **options))
