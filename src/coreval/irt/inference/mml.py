"""Marginal maximum likelihood (:func:`coreval.irt.mml.fit_mml`) as an :class:`IRTFit`."""

from __future__ import annotations

import time

import numpy as np

from coreval.irt._data import IRTData
from coreval.irt.inference.idata import _card, _to_idata
from coreval.irt.result import IRTFit
from coreval.irt.spec import get_spec


def _fit_mml(data: IRTData, name: str, show_progress: bool | None) -> IRTFit:
    """Wrap :func:`coreval.irt.mml.fit_mml` (H4a) into an :class:`IRTFit` with one draw."""
    from coreval.irt.mml import fit_mml

    start = time.perf_counter()
    values = np.where(data.mask, data.values, np.nan)
    res = fit_mml(values, model=get_spec(name).mml, show_progress=show_progress)
    theta, _ = res.eap_theta(values)
    # Standardise to theta ~ N(0, 1): a' = a s, theta' = theta / s (s² = latent variance).
    s = float(np.sqrt(res.latent_variance))
    a = np.asarray(res.a, dtype=float) * s
    samples = {"a": a[None, None, :, None], "d": np.asarray(res.d, float)[None, None],
               "b": np.asarray(res.b, float)[None, None],
               "theta": (np.asarray(theta, float) / s)[None, None, :, None]}
    if res.c is not None:
        samples["c"] = np.asarray(res.c, float)[None, None]
    diag = {"posterior": "point", "loglik": float(res.loglik), "n_iter": int(res.n_iter),
            "converged": bool(res.converged), "latent_variance": float(res.latent_variance),
            "seconds": time.perf_counter() - start}
    idata, note = _to_idata(samples, {}, data, name, 1)
    if note:
        diag["log_likelihood"] = note
    item_se = None
    if res.se_a is not None and res.se_d is not None:
        item_se = {"a": np.asarray(res.se_a, float) * s, "d": np.asarray(res.se_d, float)}
        if getattr(res, "se_c", None) is not None:
            item_se["c"] = np.asarray(res.se_c, float)
    card = _card(name, "mml", 1, "none", data, diag, name, {})
    return IRTFit(model=name, method="mml", dims=1, priors="none", idata=idata, card=card,
                  item_se=item_se)
