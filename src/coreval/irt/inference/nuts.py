"""NUTS (NumPyro), chains run sequentially, with R-hat / ESS / divergence diagnostics.

References
----------
Hoffman, M. D. & Gelman, A. (2014). The No-U-Turn Sampler. *JMLR* 15."""

from __future__ import annotations

import warnings
from typing import Any

import arviz as az
import numpy as np
from numpyro.infer import MCMC, NUTS

from coreval.irt._device import wrap_key

RHAT_WARN = 1.01


def _run_nuts(fn, y, mask, init_strategy, rng, num_warmup, num_samples, num_chains, show):
    kernel = NUTS(fn, init_strategy=init_strategy)
    mcmc = MCMC(kernel, num_warmup=num_warmup, num_samples=num_samples, num_chains=num_chains,
                chain_method="sequential", progress_bar=show)
    mcmc.run(wrap_key(rng), y, mask, extra_fields=("diverging", "potential_energy"))
    samples = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    stats = {"diverging": np.asarray(extra["diverging"]),
             "lp": -np.asarray(extra["potential_energy"])}
    return samples, stats, {"num_warmup": num_warmup, "num_samples": num_samples,
                            "num_chains": num_chains}


def _nuts_diagnostics(idata: az.InferenceData) -> dict[str, Any]:
    names = [v for v in ("theta", "a", "d", "c", "sigma", "k") if v in idata.posterior]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rhat = az.rhat(idata, var_names=names)
        ess = az.ess(idata, var_names=names)
    max_rhat = float(max(np.nanmax(rhat[v].values) for v in names))
    min_ess = float(min(np.nanmin(ess[v].values) for v in names))
    divergences = int(np.asarray(idata.sample_stats["diverging"]).sum())
    if max_rhat > RHAT_WARN or divergences > 0:
        warnings.warn(f"NUTS diagnostics: max R-hat {max_rhat:.3f} (want <= {RHAT_WARN}), "
                      f"{divergences} divergences, min bulk ESS {min_ess:.0f}; "
                      "run longer or reparameterise", stacklevel=3)
    return {"max_rhat": max_rhat, "min_ess_bulk": min_ess, "divergences": divergences}
