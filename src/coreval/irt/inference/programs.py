"""What the optimisers share: the hashable program specification, the chunked optimisation
loop with its progress bar, and the starting values."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import jax.numpy as jnp
import numpy as np
from numpyro import handlers
from numpyro.distributions.transforms import biject_to
from numpyro.infer.initialization import init_to_uniform

from coreval._progress import progress_bar
from coreval.errors import ValidationError
from coreval.irt import models as _models

#: Optimisation steps run inside one compiled ``lax.scan`` between progress updates.
CHUNK = 100


def _init_strategy(values: dict[str, np.ndarray], site=None, radius: float = 0.5):
    """Start at ``values`` where given, else uniform in (-0.5, 0.5) in unconstrained space.

    numpyro's ``init_to_value`` falls back to radius 2, which starts discriminations
    anywhere in (0.14, 7.4); the narrower radius starts them near 1.
    """
    if site is None:
        return partial(_init_strategy, values, radius=radius)
    if site["type"] == "sample" and not site["is_observed"] and site["name"] in values:
        return jnp.asarray(values[site["name"]])
    return init_to_uniform(site, radius=radius)


@dataclass(frozen=True)
class _Spec:
    """What shapes the compiled programs; hashable, so it is the key of JAX's jit cache.

    Compiling dominates small fits on CPU. Module-level jitted functions keyed by
    this spec let repeated fits of the same model and shape (e.g. one per seed or
    cross-validation fold) reuse the compiled programs.
    """

    model: str | Callable[..., None]
    n_models: int
    n_items: int
    dims: int
    priors: str
    batch_size: int | None

    def model_fn(self, batch: bool = True) -> Callable[..., None]:
        base = _models.get_model(self.model) if isinstance(self.model, str) else self.model
        return partial(base, n_models=self.n_models, n_items=self.n_items, dims=self.dims,
                       priors=self.priors, batch_size=self.batch_size if batch else None)


def _optimise(chunk: Callable, carry: Any, num_steps: int, show: bool,
              desc: str) -> tuple[Any, np.ndarray]:
    """Run ``num_steps`` optimisation steps as compiled chunks ``chunk(carry, length)``.

    Each chunk of up to :data:`CHUNK` steps is one compiled ``fori_loop`` whose trip
    count is a runtime value (so any ``num_steps`` compiles once); the progress bar
    advances between chunks. ``chunk(carry, length, done)`` is also told how many
    steps are done before it.
    """
    losses = []
    bar = progress_bar(total=num_steps, desc=desc, show=show)
    done = 0
    while done < num_steps:
        length = min(CHUNK, num_steps - done)
        carry, chunk_losses = chunk(carry, length, done)
        losses.append(np.asarray(chunk_losses)[:length])
        done += length
        bar.update(length)
    bar.close()
    loss = np.concatenate(losses)
    if not np.isfinite(loss[-1]):
        raise ValidationError(
            f"{desc} diverged (loss {loss[-1]}); lower learning_rate or check the data")
    return carry, loss


def _loss_summary(loss: np.ndarray) -> dict[str, Any]:
    tail = loss[-max(1, len(loss) // 10):]
    idx = np.unique(np.linspace(0, len(loss) - 1, min(len(loss), 200)).astype(int))
    return {"final_loss": float(np.mean(tail)), "steps": len(loss),
            "loss_trace": {"step": idx.tolist(), "loss": loss[idx].astype(float).tolist()}}


def _unconstrained_init(fn, init_strategy, key, y, mask) -> dict[str, jnp.ndarray]:
    """Initial values of the latent sites in unconstrained space (traced, so jittable)."""
    seeded = handlers.substitute(handlers.seed(fn, key), substitute_fn=init_strategy)
    tr = handlers.trace(seeded).get_trace(y, mask)
    return {name: biject_to(site["fn"].support).inv(site["value"])
            for name, site in tr.items()
            if site["type"] == "sample" and not site["is_observed"]}
