"""Psychometric diagnostics of one benchmark: item table, curves, information, fit, dimensionality.

Figures take an optional ``ax`` and return the ``Axes``; tables are pandas
DataFrames. Item parameters follow :mod:`coreval.irt` (slope-intercept 2PL,
``logit P = a θ + d``, difficulty ``b = -d / a`` for D = 1).

References
----------
Lord, F. M. (1980). *Applications of Item Response Theory to Practical Testing
Problems*, ch. 5 (item and test information).
Drasgow, F., Levine, M. V. & Williams, E. A. (1985). Appropriateness measurement
with polychotomous item response models and standardized indices. *BJMSP* 38,
67-86 (the person-fit statistic l_z).
Gelman, A. et al. (2013). *Bayesian Data Analysis*, 3rd ed., ch. 6 (posterior
predictive checks).
Reckase, M. D. (2009). *Multidimensional Item Response Theory*, ch. 8
(dimensionality from the eigenvalues of the inter-item correlation matrix).
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from scipy.special import expit

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt.information import icc, item_information, test_information
from coreval.irt.spec import get_spec

#: Items answered correctly by fewer / more than this fraction of models are "near constant".
NEAR_CONSTANT = 0.02


def _axes(ax, size=(5.0, 3.8)):
    if ax is None:
        _, ax = plt.subplots(figsize=size)
    return ax


def _draws(fit) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item and ability draws of an IRTFit: a (S, I, D), d (S, I), theta (S, M, D).

    Raises a :class:`ValidationError` for a fit of continuous scores (the diagnostics
    replicate 0/1 answers) and for one with a guessing parameter (they use the 2PL curve
    ``σ(a θ + d)``, which is not a 3PL's).
    """
    if not get_spec(fit.link).binary:
        raise ValidationError(f"the diagnostics replicate 0/1 answers of binary IRT models; "
                              f"this {fit.model!r} fit models continuous scores")
    items = fit.item_draws()
    if "c" in items:
        raise ValidationError(f"the diagnostics support 1PL/2PL fits; this {fit.model!r} fit "
                              "has a guessing parameter c, which they do not model")
    a = np.asarray(items["a"], float)
    if a.ndim == 2:
        a = a[:, :, None]
    theta = np.asarray(fit.idata.posterior["theta"].values, float)
    theta = theta.reshape(-1, *theta.shape[2:])
    if theta.ndim == 2:
        theta = theta[:, :, None]
    return a, np.asarray(items["d"], float), theta


def item_diagnostics(fit, matrix: ScoreMatrix, *, theta_grid: np.ndarray | None = None,
                     ppc_draws: int = 200, seed: int = 0) -> pd.DataFrame:
    """One row per item: IRT parameters, classical statistics, fit and flags.

    Parameters
    ----------
    fit : coreval.irt.IRTFit
        A unidimensional binary (2PL/1PL) fit of ``matrix``.
    matrix : ScoreMatrix
        The binary scores the model was fitted to (same items, same order).
    theta_grid : ndarray, optional
        Abilities at which the maximum item information is searched (default -4..4).
    ppc_draws : int
        Posterior predictive replications for the item-fit p-value.
    seed : int
        Seed of the replications.

    Returns
    -------
    DataFrame
        ``item, a, b, d, p_value`` (fraction of models correct), ``item_rest``
        (correlation of the item with the rest score), ``max_info`` and
        ``theta_max_info``, ``fit_stat`` (sum over models of squared Pearson
        residuals with the fit's point estimates, :meth:`IRTFit.item_point`), ``ppp`` (posterior predictive
        p-value of that statistic: the fraction of replications whose statistic is
        at least the observed one; small = misfit) and boolean flags
        ``near_constant``, ``negative`` (item-rest correlation < 0 or a < 0: a
        likely label error) and ``misfit`` (ppp < 0.05).
    """
    if fit.dims != 1:
        raise ValidationError("item_diagnostics needs a unidimensional fit (dims=1)")
    y = np.asarray(matrix.values, float)
    if y.shape != (len(fit.model_ids), len(fit.item_ids)):
        raise ValidationError(f"matrix shape {y.shape} does not match the fit "
                              f"({len(fit.model_ids)} models × {len(fit.item_ids)} items)")
    for what, ids, fitted in (("models", matrix.models, fit.model_ids),
                              ("items", matrix.items, fit.item_ids)):
        if not np.array_equal(np.asarray(ids).astype(str), np.asarray(fitted).astype(str)):
            raise ValidationError(f"item_diagnostics: the matrix's {what} are not the fit's "
                                  "(same ids in the same order are needed)")
    a_s, d_s, th_s = _draws(fit)
    point = fit.item_point()
    a, d = point["a"][:, 0], point["d"]
    theta = fit.abilities()[:, 0]
    grid = np.linspace(-4, 4, 161) if theta_grid is None else np.asarray(theta_grid, float)
    info = item_information(grid, a, d)
    obs = ~np.isnan(y)
    with np.errstate(invalid="ignore", divide="ignore"):
        p_value = np.nanmean(y, axis=0)
        rest = np.nansum(y, axis=1)[:, None] - np.nan_to_num(y)
        item_rest = np.array([
            np.corrcoef(y[obs[:, j], j], rest[obs[:, j], j])[0, 1]
            if np.nanstd(y[:, j]) > 0 else np.nan for j in range(y.shape[1])])
    # Pearson item-fit statistic and its posterior predictive p-value (BDA3 ch. 6).
    rng = np.random.default_rng(seed)
    pick = rng.choice(a_s.shape[0], size=min(ppc_draws, a_s.shape[0]), replace=False)
    exceed = np.zeros(y.shape[1])
    for s in pick:
        p = expit(th_s[s] @ a_s[s].T + d_s[s][None])
        rep = (rng.random(p.shape) < p).astype(float)
        var = np.clip(p * (1 - p), 1e-9, None)
        t_obs = np.nansum(np.where(obs, (y - p) ** 2 / var, 0.0), axis=0)
        t_rep = np.nansum(np.where(obs, (rep - p) ** 2 / var, 0.0), axis=0)
        exceed += t_rep >= t_obs
    ppp = exceed / len(pick)
    p_mean = expit(np.outer(theta, a) + d)
    fit_stat = np.nansum(np.where(obs, (y - p_mean) ** 2 / np.clip(p_mean * (1 - p_mean), 1e-9,
                                                                    None), 0.0), axis=0)
    table = pd.DataFrame({
        "item": fit.item_ids.astype(str), "a": a, "b": -d / a, "d": d, "p_value": p_value,
        "item_rest": item_rest, "max_info": info.max(axis=0),
        "theta_max_info": grid[info.argmax(axis=0)], "fit_stat": fit_stat, "ppp": ppp,
    })
    table["near_constant"] = (p_value <= NEAR_CONSTANT) | (p_value >= 1 - NEAR_CONSTANT)
    table["negative"] = (table["item_rest"] < 0) | (table["a"] < 0)
    table["misfit"] = table["ppp"] < 0.05
    return table


def person_fit(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Standardised log-likelihood person-fit statistic l_z (Drasgow et al. 1985, eq. 3-6).

    Parameters
    ----------
    y : ndarray (n_models, n_items)
        Binary responses (NaN = not observed, skipped).
    p : ndarray (n_models, n_items)
        Model-implied success probabilities.

    Returns
    -------
    ndarray (n_models,)
        ``l_z = (l0 - E[l0]) / sqrt(Var[l0])``; large negative values flag
        aberrant response patterns (e.g. a model that fails easy items but solves hard ones).
    """
    y = np.asarray(y, float)
    p = np.clip(np.asarray(p, float), 1e-9, 1 - 1e-9)
    obs = ~np.isnan(y)
    lp, lq = np.log(p), np.log1p(-p)
    l0 = np.where(obs, np.nan_to_num(y) * lp + (1 - np.nan_to_num(y)) * lq, 0.0).sum(1)
    mean = np.where(obs, p * lp + (1 - p) * lq, 0.0).sum(1)
    var = np.where(obs, p * (1 - p) * np.log(p / (1 - p)) ** 2, 0.0).sum(1)
    return (l0 - mean) / np.sqrt(var)


def posterior_predictive_scores(fit, *, n_draws: int = 200, seed: int = 0
                                ) -> tuple[np.ndarray, np.ndarray]:
    """Replicated binary data under the posterior: per-model scores and per-item p-values.

    Returns
    -------
    scores : ndarray (n_draws, n_models)
        Mean score of each model in each replication.
    p_values : ndarray (n_draws, n_items)
        Fraction of models correct per item in each replication.
    """
    a_s, d_s, th_s = _draws(fit)
    rng = np.random.default_rng(seed)
    pick = rng.choice(a_s.shape[0], size=n_draws, replace=a_s.shape[0] < n_draws)
    scores, pvals = [], []
    for s in pick:
        p = expit(th_s[s] @ a_s[s].T + d_s[s][None])
        rep = rng.random(p.shape) < p
        scores.append(rep.mean(1))
        pvals.append(rep.mean(0))
    return np.asarray(scores), np.asarray(pvals)


def plot_ppc_scores(observed: np.ndarray, replicated: np.ndarray, *, ax=None, bins: int = 20,
                    xlabel: str = "model score"):
    """Histogram of an observed statistic over a band of replicated histograms (PPC).

    ``replicated`` has shape (n_draws, n); the grey band spans the 5-95% range of
    the replicated bin counts, the line is the observed histogram.
    """
    ax = _axes(ax)
    obs = np.asarray(observed, float).ravel()
    if not np.isfinite(obs).all():
        raise ValidationError(f"plot_ppc_scores: {int(np.sum(~np.isfinite(obs)))} observed "
                              "values are NaN or infinite (e.g. scores of models with missing "
                              "answers); pass the finite ones with their replications")
    edges = np.histogram_bin_edges(np.concatenate([obs, np.ravel(replicated)]), bins=bins)
    reps = np.array([np.histogram(r, bins=edges)[0] for r in np.asarray(replicated)])
    centers = 0.5 * (edges[1:] + edges[:-1])
    lo, med, hi = np.percentile(reps, [5, 50, 95], axis=0)
    ax.fill_between(centers, lo, hi, step="mid", color="grey", alpha=0.35,
                    label="posterior predictive 90%")
    ax.step(centers, med, where="mid", color="grey", lw=1)
    ax.step(centers, np.histogram(obs, bins=edges)[0], where="mid", color="C3", lw=1.5,
            label="observed")
    ax.set_xlabel(xlabel)
    ax.set_ylabel("count")
    ax.legend(fontsize=7)
    return ax


def plot_item_curves(a, d, *, items: Sequence[int] | None = None, labels=None,
                     theta: np.ndarray | None = None, ax=None):
    """Item characteristic curves ``P(correct | θ)`` of selected items (unidimensional 2PL).

    ``labels`` names the plotted items in order, or every item of the bank (then
    indexed by ``items``).
    """
    ax = _axes(ax)
    a, d = np.asarray(a, float).reshape(-1), np.asarray(d, float).reshape(-1)
    theta = np.linspace(-4, 4, 201) if theta is None else np.asarray(theta, float)
    idx = np.arange(len(a)) if items is None else np.asarray(items, int)
    if labels is not None:
        # One label per plotted item, or one per item of the bank.
        if len(labels) != len(idx) and len(labels) == len(a):
            labels = [labels[i] for i in idx]
        elif len(labels) != len(idx):
            raise ValidationError(f"plot_item_curves: {len(labels)} labels for {len(a)} items "
                                  f"({len(idx)} plotted); give one per item or per plotted item")
    p = icc(theta, a[idx], d[idx])
    for j, col in enumerate(p.T):
        label = None if labels is None else str(labels[j])
        ax.plot(theta, col, lw=1, label=label)
    ax.set_xlabel("ability θ")
    ax.set_ylabel("P(correct)")
    ax.set_ylim(0, 1)
    if labels is not None:
        ax.legend(fontsize=6, ncol=2)
    return ax


def plot_information(a, d, *, abilities: np.ndarray | None = None, items=None,
                     theta: np.ndarray | None = None, ax=None):
    """Test information (and selected item information) over θ, with the models' abilities.

    Parameters
    ----------
    a, d : array (n_items,)
        2PL slopes and intercepts.
    abilities : array (n_models,), optional
        Estimated abilities of the models, shown as a rug and a shaded 5-95% range:
        where the benchmark measures the models it is meant for.
    items : sequence of int, optional
        Items whose information curves are drawn thin.
    """
    ax = _axes(ax)
    a, d = np.asarray(a, float).reshape(-1), np.asarray(d, float).reshape(-1)
    theta = np.linspace(-4, 4, 201) if theta is None else np.asarray(theta, float)
    if items is not None:
        info = item_information(theta, a[np.asarray(items, int)], d[np.asarray(items, int)])
        ax.plot(theta, info, lw=0.6, alpha=0.6, color="C0")
    total = test_information(theta, a, d)
    ax.plot(theta, total, color="k", lw=2, label="test information")
    if abilities is not None:
        ab = np.asarray(abilities, float).ravel()
        lo, hi = np.percentile(ab, [5, 95])
        ax.axvspan(lo, hi, color="C2", alpha=0.12, label="5-95% of model abilities")
        ax.plot(ab, np.zeros_like(ab), "|", color="C2", ms=8)
    ax.set_xlabel("ability θ")
    ax.set_ylabel("Fisher information")
    ax.legend(fontsize=7)
    return ax


def plot_standard_error(a, d, *, abilities=None, theta: np.ndarray | None = None, ax=None):
    """Standard error of θ, ``1 / sqrt(test information)``, over the ability range."""
    ax = _axes(ax)
    theta = np.linspace(-4, 4, 201) if theta is None else np.asarray(theta, float)
    se = 1.0 / np.sqrt(test_information(theta, np.asarray(a, float).reshape(-1),
                                        np.asarray(d, float).reshape(-1)))
    ax.plot(theta, se, color="k")
    if abilities is not None:
        ab = np.asarray(abilities, float).ravel()
        ax.plot(ab, np.full_like(ab, np.nanmin(se)), "|", color="C2", ms=8)
    ax.set_xlabel("ability θ")
    ax.set_ylabel("standard error of θ")
    return ax


#: Difficulties beyond this are drawn at the edge of the item map (as open markers).
ITEM_MAP_B_LIMIT = 8.0


def plot_item_map(table: pd.DataFrame, *, ax=None):
    """Discrimination vs difficulty of every item, flagged items highlighted.

    Difficulties beyond ±:data:`ITEM_MAP_B_LIMIT` (near-constant or weakly discriminating
    items) are drawn at the edge as open markers, so every item counted in the legend is
    on the plot.
    """
    ax = _axes(ax)
    flags = [c for c in ("near_constant", "negative", "misfit") if c in table]
    ok = ~table[flags].any(axis=1).to_numpy() if flags else np.ones(len(table), bool)
    b = table["b"].to_numpy(float)
    a = table["a"].to_numpy(float)
    shown = np.clip(b, -ITEM_MAP_B_LIMIT, ITEM_MAP_B_LIMIT)
    outside = np.abs(b) > ITEM_MAP_B_LIMIT

    def draw(sel, color, size, label, **style):
        ax.scatter(shown[sel & ~outside], a[sel & ~outside], s=size, color=color, label=label,
                   **style)
        if (sel & outside).any():
            ax.scatter(shown[sel & outside], a[sel & outside], s=size, facecolors="none",
                       edgecolors=color)

    draw(ok, "C0", 6, "ok", alpha=0.6)
    for c, color in zip(flags, ("C1", "C3", "C4"), strict=False):
        sel = table[c].to_numpy(bool)
        if sel.any():
            draw(sel, color, 14, f"{c.replace('_', ' ')} ({int(sel.sum())})")
    ax.set_xlabel(f"difficulty b (open markers: |b| > {ITEM_MAP_B_LIMIT:g}, drawn at the edge)"
                  if outside.any() else "difficulty b")
    ax.set_ylabel("discrimination a")
    ax.legend(fontsize=7)
    return ax


def correlation_spectrum(values: np.ndarray) -> np.ndarray:
    """Eigenvalues (descending) of the inter-item Pearson correlation matrix.

    Pearson (phi) correlations rather than tetrachoric ones: tetrachoric correlations
    need a bivariate-normal fit per item pair, which no well-kept Python library
    provides; phi correlations understate but keep the ordering of the dominant
    eigenvalues. Near-constant items (zero variance) are dropped.
    """
    y = np.asarray(values, float)
    y = y[:, np.nanstd(y, axis=0) > 0]
    corr = pd.DataFrame(y).corr(min_periods=3).to_numpy()
    corr = np.nan_to_num(corr)
    return np.sort(np.linalg.eigvalsh(corr))[::-1]


def residual_correlations(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Correlations between items of the residuals ``y - p`` (Yen's Q3 when p is the IRT fit).

    Large |Q3| between two items signals local dependence a 1-D model misses.
    Items with constant observed scores get NaN: their residuals only echo ``p``.
    """
    y = np.asarray(y, float)
    r = y - np.asarray(p, float)
    corr = np.array(pd.DataFrame(r).corr(min_periods=3), dtype=float)
    constant = ~(np.nanstd(y, axis=0) > 0)
    corr[constant, :] = np.nan
    corr[:, constant] = np.nan
    np.fill_diagonal(corr, np.nan)
    return corr


def plot_eigen_spectrum(eigenvalues: np.ndarray, *, n: int = 20, ax=None,
                        label: str = "items", reference=None):
    """Scree plot of the leading eigenvalues (optionally with a reference spectrum)."""
    ax = _axes(ax)
    ev = np.asarray(eigenvalues, float)[:n]
    ax.plot(np.arange(1, len(ev) + 1), ev, marker="o", ms=4, label=label)
    if reference is not None:
        ref = np.asarray(reference, float)[:n]
        ax.plot(np.arange(1, len(ref) + 1), ref, ls="--", color="grey",
                label="random data (parallel analysis)")
    ax.set_xlabel("component")
    ax.set_ylabel("eigenvalue")
    ax.legend(fontsize=7)
    return ax
