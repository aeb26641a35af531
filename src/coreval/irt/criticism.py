"""Model criticism of a fitted IRT model: a posterior predictive check on its source models.

Every coreval method that predicts through an IRT fit (gp-irt, metabench, irt-bayes)
reports this check with its predictions (:class:`coreval.pipeline.ModelCheck`): the
fitted model replicates the source matrix, and the observed item-total correlations
are compared with the replicates'. Items that stronger models get wrong more often
(label noise, adversarial items) or a second latent factor show up as items whose
observed correlation the model cannot reproduce.

References
----------
Gelman, A., Meng, X.-L. & Stern, H. (1996). Posterior predictive assessment of model
fitness via realized discrepancies. *Statistica Sinica* 6, 733-807.
Sinharay, S., Johnson, M. S. & Stern, H. S. (2006). Posterior predictive assessment of
item response theory models. *Applied Psychological Measurement* 30(4), 298-321.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.special import expit

from coreval.irt.logistic import LOGIT_CLIP

if TYPE_CHECKING:  # the result module loads JAX; the check itself needs only numpy
    from coreval.irt.result import IRTFit

#: Replicated source matrices of the posterior predictive check.
PPC_REPLICATES = 100
#: Nominal level of the per-item posterior predictive ranges of the check.
PPC_LEVEL = 0.9
#: Cells of the replicated matrices simulated at once (bounds the check's memory).
BLOCK_CELLS = 20_000_000


@dataclass(frozen=True)
class PosteriorPredictiveCheck:
    """A posterior predictive check of an IRT fit on its source models.

    The discrepancy is the per-item point-biserial correlation ``r_i(y)`` of item
    ``i`` with the models' total (mean) score. From ``R`` replicated matrices
    ``y_rep ~ p(y_rep | θ, a, d)`` (one posterior draw of the abilities and item
    parameters each, Gelman, Meng & Stern 1996; Gelman et al. 2013, *Bayesian Data
    Analysis*, 3rd ed., section 6.3; Sinharay, Johnson & Stern 2006, on discrepancies
    for IRT models) the check reports the following.

    Attributes
    ----------
    pvalue : float
        Bayesian p-value ``P(T(y_rep) >= T(y))`` of the summed discrepancy
        ``T(y) = Σ_i (r_i(y) - m_i)² / v_i`` (``m_i``, ``v_i``: the replicates'
        mean and variance of ``r_i``). Near 0: the model cannot reproduce the
        observed item-total correlations.
    outside_share : float
        Share of items whose observed ``r_i`` lies outside the central
        ``level`` range of its replicates (about ``1 - level`` for a model that fits).
    item_pvalues : ndarray (n_items,)
        Per-item ``P(r_i(y_rep) >= r_i(y))`` (NaN for an item without variance).
    negative_share : float
        Share of items with ``r_i(y) < 0`` in the observed matrix.
    level : float
        Level of the per-item ranges.
    replicates : int
        ``R``.
    parameter_draws : int
        Distinct posterior draws behind the replicates. ``1`` for a point estimate
        (MAP, metabench's fit): every replicate then comes from the same parameters, a
        plug-in (parametric bootstrap) check, which ignores the estimation uncertainty
        and so flags misfit somewhat more readily than the posterior check.
    """

    pvalue: float
    outside_share: float
    item_pvalues: np.ndarray
    negative_share: float
    level: float
    replicates: int
    parameter_draws: int = 0

    def summary(self) -> str:
        """One line for a report: the p-value and the shares of misfitting and negative items."""
        kind = "plug-in" if self.parameter_draws == 1 else "posterior"
        return (f"{kind} predictive check of the item-total correlations p = {self.pvalue:.2f}, "
                f"{100 * self.outside_share:.0f}% of items outside their {self.level:.0%} "
                f"range, {100 * self.negative_share:.0f}% correlate negatively with the total")


def item_total_correlation(y: np.ndarray) -> np.ndarray:
    """Point-biserial correlation of each item with the models' mean score.

    Parameters
    ----------
    y : ndarray, shape (..., n_models, n_items)
        Scores; NaN = not observed (left out of the model's mean and of the item's
        correlation).

    Returns
    -------
    ndarray, shape (..., n_items)
        Pearson correlation over the models that answered the item; NaN where the
        item or the totals have no variance.
    """
    obs = ~np.isnan(y)
    y0 = np.where(obs, y, 0.0)
    total = y0.sum(axis=-1, keepdims=True) / np.maximum(obs.sum(axis=-1, keepdims=True), 1)
    n = np.maximum(obs.sum(axis=-2), 1)                                   # (..., n_items)
    mx = y0.sum(axis=-2) / n
    mt = (obs * total).sum(axis=-2) / n
    dx = np.where(obs, y0 - mx[..., None, :], 0.0)
    dt = np.where(obs, total - mt[..., None, :], 0.0)
    cov = (dx * dt).sum(axis=-2)
    var = (dx ** 2).sum(axis=-2) * (dt ** 2).sum(axis=-2)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(var > 1e-12, cov / np.sqrt(np.where(var > 1e-12, var, 1.0)), np.nan)


def posterior_predictive_check(fit: IRTFit, values: np.ndarray, *, seed: int = 0,
                               replicates: int = PPC_REPLICATES,
                               level: float = PPC_LEVEL) -> PosteriorPredictiveCheck | None:
    """Replicate the source matrix from the fit and compare item-total correlations.

    Parameters
    ----------
    fit : IRTFit
        A logistic IRT fit (1PL, 2PL or 3PL, any number of dimensions) of ``values``.
    values : ndarray, shape (n_models, n_items)
        The binary source matrix the fit was made on (NaN = not observed; a replicate
        leaves the same cells out).
    seed : int
        Seed of the replicates.
    replicates : int
        Number of replicated matrices ``R``. Each pairs one posterior draw of the
        abilities with one of the item parameters; with fewer draws than ``R`` the
        draws are reused (a point estimate: every replicate from it).
    level : float
        Level of the per-item ranges.

    Returns
    -------
    PosteriorPredictiveCheck or None
        None when the fit stores no ability draws of the source models or its model is
        not logistic.
    """
    from coreval.irt.spec import get_spec

    if not get_spec(fit.link).logistic or "theta" not in fit.idata.posterior:
        return None
    theta = np.asarray(fit.idata.posterior["theta"].values, dtype=float)
    theta = theta.reshape((-1, *theta.shape[2:]))                       # (S, n_models, D)
    items = {name: np.asarray(v, dtype=float) for name, v in fit.item_draws().items()}
    n_rep = int(replicates)
    rng = np.random.default_rng([int(seed), 1])
    pick_t = rng.choice(theta.shape[0], size=n_rep, replace=theta.shape[0] < n_rep)
    pick_i = (pick_t if items["d"].shape[0] == theta.shape[0]
              else rng.choice(items["d"].shape[0], size=n_rep,
                              replace=items["d"].shape[0] < n_rep))
    a = items["a"] if "a" in items else np.ones((*items["d"].shape, 1))
    a = a[:, :, None] if a.ndim == 2 else a
    observed = np.asarray(values, dtype=float)
    missing = np.isnan(observed)
    # replicates in blocks of about BLOCK_CELLS cells, so that memory stays bounded on a
    # large matrix (the draws are the same as in one block: one generator, in order)
    block = max(1, BLOCK_CELLS // max(observed.size, 1))
    r_rep = np.empty((n_rep, observed.shape[1]))
    for start in range(0, n_rep, block):
        t, i = pick_t[start:start + block], pick_i[start:start + block]
        z = np.einsum("rmd,rid->rmi", theta[t], a[i]) + items["d"][i][:, None]
        p = expit(np.clip(z, -LOGIT_CLIP, LOGIT_CLIP))
        if "c" in items:
            c = items["c"][i][:, None]
            p = c + (1.0 - c) * p
        y_rep = (rng.random(p.shape) < p).astype(float)
        y_rep[:, missing] = np.nan
        r_rep[start:start + block] = item_total_correlation(y_rep)      # (R, n_items)
    r_obs = item_total_correlation(observed)                            # (n_items,)
    alpha = (1.0 - level) / 2.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # items constant in every replicate
        lo, hi = np.nanquantile(r_rep, [alpha, 1.0 - alpha], axis=0)
        m, v = np.nanmean(r_rep, axis=0), np.nanvar(r_rep, axis=0)
    usable = np.isfinite(r_obs) & np.isfinite(m)
    v = np.maximum(v, 1e-6)
    # An item constant in a replicate has no correlation there: each replicate's
    # discrepancy and the observed one are summed over the same items (those defined in
    # that replicate), and an item's p-value counts only the replicates it is defined in.
    defined = np.isfinite(r_rep) & usable                               # (R, n_items)
    dev_obs = np.where(usable, (np.where(usable, r_obs, 0.0) - m) ** 2 / v, 0.0)
    dev_rep = np.where(defined, (np.where(defined, r_rep, 0.0) - m) ** 2 / v, 0.0)
    t_obs = (defined * dev_obs).sum(axis=1)
    t_rep = dev_rep.sum(axis=1)
    finite = np.isfinite(r_rep)
    with np.errstate(invalid="ignore", divide="ignore"):
        hits = (finite & (np.where(finite, r_rep, 0.0) >= r_obs)).sum(axis=0)
        item_p = np.where(np.isfinite(r_obs), hits / finite.sum(axis=0), np.nan)
    outside = (r_obs[usable] < lo[usable]) | (r_obs[usable] > hi[usable])
    return PosteriorPredictiveCheck(
        pvalue=float(np.mean(t_rep >= t_obs)),
        outside_share=float(outside.mean()) if usable.any() else float("nan"),
        item_pvalues=item_p, negative_share=float(np.mean(r_obs[np.isfinite(r_obs)] < 0)),
        level=float(level), replicates=n_rep,
        parameter_draws=int(min(theta.shape[0], items["d"].shape[0], n_rep)))
