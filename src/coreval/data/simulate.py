"""Simulated score matrices with known item-response parameters.

Two generative models (numpy only, deterministic by seed):

``"2pl"`` — multidimensional two-parameter logistic IRT (binary scores)::

    logit P(Y_ij = 1) = theta_i · a_j + d_j ,      a_j > 0 (log-normal)

``"beta"`` — Beta IRT for continuous scores in (0, 1)::

    mu_ij = sigmoid(theta_i · a_j + d_j),   Y_ij ~ Beta(mu_ij phi, (1 - mu_ij) phi)

Abilities are grouped into model families, ``theta_i ~ N(m_f(i), I_D)`` with
family means ``m_f ~ N(0, family_sd² I_D)``, plus an optional linear trend in
release date on the first dimension. Items belong to ``n_groups`` contiguous
groups whose difficulties share a group offset.

References
----------
Reckase, M. D. (2009). *Multidimensional Item Response Theory*, eq. 4.5
(compensatory M2PL with intercept ``d``; for D = 1, ``b = -d / a``).
Noel, Y. & Dauvier, B. (2007). A Beta item response model for continuous
bounded responses. *Applied Psychological Measurement* 31, 47–73 (mean/precision
parameterisation of the Beta distribution).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import pandas as pd
from scipy.special import expit

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError

SimModel = Literal["2pl", "beta"]
#: Beta draws are clipped to [BETA_EPS, 1 - BETA_EPS]: float64 Beta samples can round
#: to exactly 0 or 1 for extreme means, which would leave the open interval (0, 1).
BETA_EPS = 1e-6


@dataclass(frozen=True, eq=False)
class Simulation:
    """A simulated score matrix and the true parameters that generated it.

    Attributes
    ----------
    matrix : ScoreMatrix
        Scores with ``model_meta`` (``family``, ``release_date``) and
        ``item_meta`` (``group``).
    params : dict of str → ndarray
        ``theta`` (n_models, D), ``a`` (n_items, D), ``d`` (n_items,),
        ``b`` (n_items,; only for D = 1, ``b = -d / a``), ``family`` (n_models,
        int codes), ``family_mean`` (n_families, D), ``group`` (n_items, int
        codes), ``group_offset`` (n_groups,), ``p`` (n_models, n_items; success
        probability or Beta mean), ``true_score`` (n_models,; the expected
        summary score, equal-weight mean over groups of the mean of ``p``),
        ``mask`` (observed entries) and, for ``beta``, ``phi``.
    settings : dict
        The arguments of :func:`simulate`.
    """

    matrix: ScoreMatrix
    params: dict[str, np.ndarray]
    settings: dict[str, object] = field(default_factory=dict)


def _check(n_models: int, n_items: int, dims: int, model: str, n_families: int,
           missing: float, n_groups: int, phi: float) -> None:
    if n_models < 2:
        raise ValidationError(f"n_models must be at least 2, got {n_models}")
    if n_items < 1:
        raise ValidationError(f"n_items must be at least 1, got {n_items}")
    if dims < 1:
        raise ValidationError(f"dims must be at least 1, got {dims}")
    if model not in ("2pl", "beta"):
        raise ValidationError(f"model must be '2pl' or 'beta', got {model!r}")
    if not 1 <= n_families <= n_models:
        raise ValidationError(f"n_families must be between 1 and n_models ({n_models}), "
                              f"got {n_families}")
    if not 1 <= n_groups <= n_items:
        raise ValidationError(f"n_groups must be between 1 and n_items ({n_items}), "
                              f"got {n_groups}")
    if not 0.0 <= missing < 1.0:
        raise ValidationError(f"missing must be in [0, 1), got {missing}")
    if not phi > 0:
        raise ValidationError(f"phi must be positive, got {phi}")


def _missing_mask(rng: np.random.Generator, shape: tuple[int, int], missing: float) -> np.ndarray:
    """Observed-entry mask with about ``missing`` fraction missing and no empty row/column."""
    observed = rng.random(shape) >= missing
    n_models, n_items = shape
    for i in np.flatnonzero(~observed.any(axis=1)):
        observed[i, rng.integers(n_items)] = True
    for j in np.flatnonzero(~observed.any(axis=0)):
        observed[rng.integers(n_models), j] = True
    return observed


def simulate(n_models: int = 200, n_items: int = 500, *, dims: int = 1,
             model: SimModel = "2pl", n_families: int = 5, seed: int = 0,
             missing: float = 0.0, n_groups: int = 1, family_sd: float = 1.0,
             log_a_mean: float = 0.0, log_a_sd: float = 0.3, d_sd: float = 1.0,
             group_sd: float = 0.5, phi: float = 20.0, trend: float = 0.0,
             start_date: str = "2022-01-01", end_date: str = "2025-12-31",
             name: str | None = None) -> Simulation:
    """Simulate a models × items score matrix from a (multidimensional) IRT model.

    Parameters
    ----------
    n_models, n_items : int
        Matrix shape.
    dims : int
        Latent dimension D.
    model : {"2pl", "beta"}
        Binary M2PL scores, or continuous Beta scores in (0, 1).
    n_families : int
        Number of model families (near-equal sizes, randomly assigned).
    seed : int
        Seed of the ``numpy.random.default_rng`` stream; same seed → same data.
    missing : float
        Fraction of entries set to NaN at random (no row or column is left empty).
    n_groups : int
        Number of item groups (contiguous blocks of near-equal size).
    family_sd : float
        Standard deviation of family means ``m_f ~ N(0, family_sd² I)``.
    log_a_mean, log_a_sd : float
        Discriminations ``a_jk = exp(N(log_a_mean, log_a_sd²))`` > 0.
    d_sd, group_sd : float
        Intercepts ``d_j = c_g(j) + N(0, d_sd²)`` with group offsets
        ``c_g ~ N(0, group_sd²)``.
    phi : float
        Beta precision (``model="beta"``).
    trend : float
        Ability gain per year of release date on the first latent dimension
        (0 = none), centred on the middle of the date range.
    start_date, end_date : str
        Release dates are uniform on this range (daily resolution).
    name : str, optional
        Dataset name (default ``sim-<model>-<seed>``).

    Returns
    -------
    Simulation
        The matrix and the true parameters (see :class:`Simulation`).

    References
    ----------
    Reckase (2009), eq. 4.5 (M2PL); Noel & Dauvier (2007) (Beta IRT).
    """
    _check(n_models, n_items, dims, model, n_families, missing, n_groups, phi)
    rng = np.random.default_rng(seed)
    family = rng.permutation(np.arange(n_models) % n_families)
    family_mean = rng.normal(0.0, family_sd, size=(n_families, dims))
    start, end = pd.Timestamp(start_date), pd.Timestamp(end_date)
    if end < start:
        raise ValidationError(f"end_date {end_date} is before start_date {start_date}")
    days = rng.integers(0, (end - start).days + 1, size=n_models)
    release = start + pd.to_timedelta(days, unit="D")
    years = (days - (end - start).days / 2) / 365.25
    theta = family_mean[family] + rng.standard_normal((n_models, dims))
    theta[:, 0] += trend * years
    a = np.exp(rng.normal(log_a_mean, log_a_sd, size=(n_items, dims)))
    group = np.arange(n_items) * n_groups // n_items
    group_offset = rng.normal(0.0, group_sd, size=n_groups)
    d = group_offset[group] + rng.normal(0.0, d_sd, size=n_items)
    p = expit(theta @ a.T + d)
    if model == "2pl":
        values = (rng.random(p.shape) < p).astype(np.float64)
    else:
        # a mean of exactly 0 or 1 (expit saturates near |logit| 37) is no Beta distribution
        mu = np.clip(p, BETA_EPS, 1.0 - BETA_EPS)
        values = np.clip(rng.beta(mu * phi, (1.0 - mu) * phi), BETA_EPS, 1.0 - BETA_EPS)
    mask = _missing_mask(rng, p.shape, missing) if missing > 0 else np.ones(p.shape, bool)
    values[~mask] = np.nan
    true_score = np.mean([p[:, group == g].mean(axis=1) for g in range(n_groups)], axis=0)
    params: dict[str, np.ndarray] = {
        "theta": theta, "a": a, "d": d, "family": family, "family_mean": family_mean,
        "group": group, "group_offset": group_offset, "p": p, "true_score": true_score,
        "mask": mask,
    }
    if dims == 1:
        params["b"] = -d / a[:, 0]
    if model == "beta":
        params["phi"] = np.asarray(phi)
    models = [f"model{i}" for i in range(n_models)]
    items = [f"item{j}" for j in range(n_items)]
    model_meta = pd.DataFrame({"family": [f"family{f}" for f in family],
                               "release_date": release},
                              index=pd.Index(models, name="model"))
    item_meta = pd.DataFrame({"group": [f"group{g}" for g in group]},
                             index=pd.Index(items, name="item"))
    matrix = ScoreMatrix(values, models=models, items=items,
                         kind="binary" if model == "2pl" else "continuous", level="item",
                         model_meta=model_meta, item_meta=item_meta,
                         name=name or f"sim-{model}-{seed}")
    settings = {"n_models": n_models, "n_items": n_items, "dims": dims, "model": model,
                "n_families": n_families, "seed": seed, "missing": missing,
                "n_groups": n_groups, "family_sd": family_sd, "log_a_mean": log_a_mean,
                "log_a_sd": log_a_sd, "d_sd": d_sd, "group_sd": group_sd, "phi": phi,
                "trend": trend, "start_date": start_date, "end_date": end_date}
    return Simulation(matrix=matrix, params=params, settings=settings)
