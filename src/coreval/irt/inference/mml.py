"""Marginal maximum likelihood (:func:`coreval.irt.mml.fit_mml`) as an :class:`IRTFit`."""

from __future__ import annotations

import time

import arviz as az
import numpy as np

from coreval.irt._data import IRTData
from coreval.irt.inference.idata import _card, _to_idata
from coreval.irt.result import IRTFit
from coreval.irt.spec import get_spec

#: Draws of an MML fit from the asymptotic normal of its estimates.
MML_DRAWS = 500


def _antithetic_normal(rng: np.random.Generator, mean: np.ndarray, sd: np.ndarray,
                       n_draws: int) -> np.ndarray:
    """``n_draws`` draws (first axis) of independent ``N(mean, sd²)`` in ± pairs.

    Antithetic pairs make the draw mean equal to ``mean`` (up to rounding), so the
    summaries of the draws are centred on the maximum-likelihood estimate.
    """
    z = rng.standard_normal((n_draws // 2, *np.shape(mean)))
    return np.asarray(mean) + np.asarray(sd) * np.concatenate([z, -z], axis=0)


def _fit_mml(data: IRTData, name: str, show_progress: bool | None, *,
             seed: int = 0) -> IRTFit:
    """Wrap :func:`coreval.irt.mml.fit_mml` (H4a) into an :class:`IRTFit`.

    The estimates are the ``point_estimate`` group; the posterior holds
    :data:`MML_DRAWS` draws from their asymptotic normal distribution: item parameters
    from ``N(estimate, SE²)`` (the diagonal of the inverse information, so correlations
    between an item's ``a`` and ``d`` are not kept) and each ability from its EAP
    posterior ``N(EAP, PSD²)`` (Bock & Mislevy 1982). ArviZ summaries of the fit then
    show the standard errors. Without standard errors the posterior is the single
    estimate.
    """
    from coreval.irt.mml import fit_mml

    start = time.perf_counter()
    values = np.where(data.mask, data.values, np.nan)
    res = fit_mml(values, model=get_spec(name).mml, show_progress=show_progress)
    theta, psd = res.eap_theta(values)
    # Standardise to theta ~ N(0, 1): a' = a s, theta' = theta / s (s² = latent variance).
    s = float(np.sqrt(res.latent_variance))
    a = np.asarray(res.a, dtype=float) * s
    d = np.asarray(res.d, dtype=float)
    theta = np.asarray(theta, float) / s
    point = {"a": a[:, None], "d": d, "b": np.asarray(res.b, float), "theta": theta[:, None]}
    if res.c is not None:
        point["c"] = np.asarray(res.c, float)
    diag = {"posterior": "point", "loglik": float(res.loglik), "n_iter": int(res.n_iter),
            "converged": bool(res.converged), "latent_variance": float(res.latent_variance),
            "seconds": time.perf_counter() - start}
    item_se = None
    if res.se_a is not None and res.se_d is not None:
        item_se = {"a": np.asarray(res.se_a, float) * s, "d": np.asarray(res.se_d, float)}
        if getattr(res, "se_c", None) is not None:
            item_se["c"] = np.asarray(res.se_c, float)
    ok = item_se is not None and all(np.isfinite(v).all() for v in item_se.values())
    if ok:
        rng = np.random.default_rng(seed)
        draws = {"a": _antithetic_normal(rng, a, item_se["a"], MML_DRAWS),
                 "d": _antithetic_normal(rng, d, item_se["d"], MML_DRAWS),
                 "theta": _antithetic_normal(rng, theta, np.asarray(psd, float) / s,
                                             MML_DRAWS)}
        if "c" in point:
            draws["c"] = np.clip(_antithetic_normal(rng, point["c"], item_se.get(
                "c", np.zeros_like(point["c"])), MML_DRAWS), 0.0, 1.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            draws["b"] = -draws["d"] / draws["a"]
        samples = {k: v[None] for k, v in draws.items()}
        samples["a"], samples["theta"] = samples["a"][..., None], samples["theta"][..., None]
        diag["posterior"] = f"asymptotic normal of the MML estimates ({MML_DRAWS} draws)"
    else:
        samples = {k: v[None, None] for k, v in point.items()}
    idata, note = _to_idata(samples, {}, data, name, 1, point=point)
    if note:
        diag["log_likelihood"] = note
    if ok:
        # The pointwise log-likelihood of asymptotic draws is no posterior quantity (and
        # 500 copies of it made a 200 x 40 fit 16 MB on disk): kept is the value at the
        # estimate, in the card (diagnostics.loglik).
        idata = az.InferenceData(**{g: getattr(idata, g) for g in idata.groups()
                                    if g not in ("log_likelihood", "constant_data")})
        diag["log_likelihood"] = "omitted: asymptotic draws; diagnostics.loglik is at the estimate"
    card = _card(name, "mml", 1, "none", data, diag, name, {})
    return IRTFit(model=name, method="mml", dims=1, priors="none", idata=idata, card=card,
                  item_se=item_se)
