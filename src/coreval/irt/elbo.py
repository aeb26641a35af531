"""The ELBO used by coreval's SVI fits: numpyro's ``Trace_ELBO``, traced in a fixed order.

numpyro 0.22's ``Trace_ELBO`` forms ``log p(z) - log q(z)`` per site over a
Python ``set`` of site names. The iteration order of a set of strings depends on
the per-process hash seed (``PYTHONHASHSEED``), so every process traces the same
fit into a differently ordered program. The numbers do not change (coreval's
IRT fits came out bit-identical under different hash seeds), but the program's
hash does, and JAX's persistent
compilation cache (:func:`coreval.jax_cache.enable_compilation_cache`) then never
finds the program a previous process compiled. :class:`OrderedTraceELBO` sums
the same terms in trace order instead.
"""

from __future__ import annotations

from typing import Any

import jax
from numpyro.handlers import replay, seed
from numpyro.infer import Trace_ELBO
from numpyro.infer.util import log_density


class OrderedTraceELBO(Trace_ELBO):
    """Single-particle ``Trace_ELBO`` whose traced program is the same in every process.

    The loss is ``-ELBO = E_q[log q(z) - log p(x, z)]`` estimated with one
    reparameterised draw ``z ~ q`` (Wingate & Weber 2013; Ranganath et al. 2014),
    exactly as numpyro's ``Trace_ELBO(num_particles=1)``; only the order in which
    the per-site log densities are added differs (trace order, see the module
    docstring). Guides must be reparameterisable (true of the autoguides coreval
    uses: ``AutoNormal``, ``AutoLowRankMultivariateNormal``, ``AutoDelta``).
    """

    def __init__(self) -> None:
        super().__init__(num_particles=1)

    def loss_with_mutable_state(self, rng_key: jax.Array, param_map: dict[str, Any],
                                model, guide, *args, **kwargs) -> dict[str, Any]:
        model_seed, guide_seed = jax.random.split(rng_key)
        guide_lp, guide_trace = log_density(seed(guide, guide_seed), args, kwargs, param_map)
        model_lp, _ = log_density(replay(seed(model, model_seed), guide_trace), args, kwargs,
                                  param_map)
        return {"loss": guide_lp - model_lp, "mutable_state": None}
