"""Building the ArviZ ``InferenceData`` of a fit, and its model card."""

from __future__ import annotations

import datetime as _dt
import warnings
from functools import partial
from typing import Any

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np

from coreval.irt import models as _models
from coreval.irt._data import IRTData
from coreval.irt._device import JIT_OPTIONS, to_device

#: Largest number of draws × observed entries stored in the pointwise log-likelihood.
LOGLIK_CAP = 25_000_000

_DIMS = {
    "theta": ("model", "dim"), "a": ("item", "dim"), "a_load": ("item", "dim"),
    "a_diag": ("dim",), "d": ("item",), "b": ("item",), "c": ("item",), "delta": ("item",),
    "theta01": ("model",), "sigma": ("model",), "k": ("model",), "mu_a": ("dim",),
    "u_a": ("dim",),
}


def _with_difficulty(values: dict[str, np.ndarray], dims: int) -> dict[str, np.ndarray]:
    """Add the difficulty ``b = -d / a`` (D = 1) to draws or a point estimate without it."""
    if "b" not in values and dims == 1 and "a" in values and "d" in values:
        values = dict(values, b=-values["d"] / values["a"][..., 0])
    return values


@partial(jax.jit, static_argnums=(0,), **JIT_OPTIONS)
def _loglik_masked_total(link: str, params, y, mask):
    """Total log-likelihood of the observed entries per draw, one draw at a time."""
    def one(p):
        lp = _models.response_dist(link, p["theta"], p).log_prob(y)
        return jnp.sum(jnp.where(mask, lp, 0.0))
    return jax.lax.map(one, params)


@partial(jax.jit, static_argnums=(0, 1), **JIT_OPTIONS)
def _loglik(link: str, total_only: bool, params, y, rows, cols):
    """Pointwise log-likelihood of the observed entries (or its total) for each draw."""
    def one(p):
        lp = _models.response_dist(link, p["theta"], p).log_prob(y)[rows, cols]
        return jnp.sum(lp) if total_only else lp
    return jax.lax.map(one, params, batch_size=4)


def _to_idata(samples: dict[str, np.ndarray], stats: dict[str, np.ndarray], data: IRTData,
              link: str, dims: int, *, point: dict[str, np.ndarray] | None = None,
              ) -> tuple[az.InferenceData, str | None]:
    """Build the InferenceData; ``point`` (MAP mode / SVI guide median) becomes the
    extra group ``point_estimate`` (same variables and dims, no chain/draw)."""
    n_chains, n_draws = samples["theta"].shape[:2]
    n_obs = int(data.mask.sum())
    needed = [k for k in ("theta", "a", "d", "b", "c", "sigma", "k") if k in samples]
    flat = {k: to_device(samples[k].reshape((-1, *samples[k].shape[2:]))) for k in needed}
    yj = to_device(data.y)
    keep_per_chain = max(1, min(n_draws, LOGLIK_CAP // max(1, n_obs * n_chains)))
    note = None
    store = n_obs * n_chains <= LOGLIK_CAP
    if not store:
        note = f"omitted: {n_obs} observed entries × {n_chains} chains exceed {LOGLIK_CAP}"
        keep = np.zeros(0, dtype=int)
    else:
        keep = np.unique(np.linspace(0, n_draws - 1, keep_per_chain).astype(int))
        if keep.size < n_draws:
            note = f"thinned to {keep.size} of {n_draws} draws per chain"
    stats = dict(stats)
    ll = None
    if not store:
        # Leaderboard scale: neither the pointwise values nor the (obs -> model, item)
        # index arrays (16 bytes per observed entry) are kept; totals by a masked sum.
        rows = cols = np.zeros(0, dtype=np.int64)
        totals = np.asarray(_loglik_masked_total(link, flat, yj, to_device(data.mask)))
    else:
        rows, cols = np.nonzero(data.mask)
        rj, cj = to_device(rows), to_device(cols)
        if keep.size == n_draws:  # the common case: one pass gives pointwise values and totals
            ll = np.asarray(_loglik(link, False, flat, yj, rj, cj), dtype=np.float32)
            totals = ll.sum(axis=1, dtype=np.float64)
            ll = ll.reshape(n_chains, n_draws, n_obs)
        else:
            totals = np.asarray(_loglik(link, True, flat, yj, rj, cj))
            idx = (np.arange(n_chains)[:, None] * n_draws + keep[None, :]).ravel()
            sub = {k: v[idx] for k, v in flat.items()}
            ll = np.asarray(_loglik(link, False, sub, yj, rj, cj),
                            dtype=np.float32).reshape(n_chains, keep.size, n_obs)
    stats["loglik_total"] = np.asarray(totals).reshape(n_chains, n_draws)
    coords = {"model": data.model_ids.astype(str), "item": data.item_ids.astype(str),
              "dim": np.arange(dims)}
    if store:
        coords["obs"] = np.arange(n_obs)
    post_dims = {k: list(_DIMS[k]) for k in samples if k in _DIMS
                 and samples[k].ndim - 2 == len(_DIMS[k])}
    posterior = az.dict_to_dataset(samples, coords=coords, dims=post_dims)
    groups = {
        "posterior": posterior,
        "sample_stats": az.dict_to_dataset(stats, coords=coords),
        "observed_data": az.dict_to_dataset({"y": data.values}, coords=coords,
                                            dims={"y": ["model", "item"]}, default_dims=[]),
    }
    if store:  # maps the log_likelihood's "obs" dimension to (model, item)
        groups["constant_data"] = az.dict_to_dataset(
            {"obs_model": rows, "obs_item": cols}, coords=coords, default_dims=[],
            dims={"obs_model": ["obs"], "obs_item": ["obs"]})
    if point is not None:
        groups["point_estimate"] = az.dict_to_dataset(
            point, coords=coords, default_dims=[],
            dims={k: list(_DIMS[k]) for k, v in point.items() if np.ndim(v) == len(_DIMS[k])})
    if ll is not None:
        ll_coords = dict(coords, chain=np.arange(n_chains), draw=keep)
        groups["log_likelihood"] = az.dict_to_dataset({"y": ll}, coords=ll_coords,
                                                      dims={"y": ["obs"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        idata = az.InferenceData(**groups)
    return idata, note


def _card(name, method, dims, priors, data: IRTData, diag, link, settings) -> dict[str, Any]:
    from coreval._version import __version__

    return {
        "model": name, "method": method, "dims": dims, "priors": priors, "link": link,
        "settings": settings,
        "data": {"name": data.name, "shape": list(data.shape),
                 "observed_fraction": float(data.mask.mean()), "sha256": data.sha256},
        "diagnostics": diag,
        "coreval_version": __version__,
        "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }
