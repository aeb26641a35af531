"""Names and kinds of the IRT engine's models (no JAX import, so cheap to import)."""

from __future__ import annotations

#: Model names accepted by :func:`coreval.irt.fit`.
MODELS: tuple[str, ...] = ("1pl", "2pl", "3pl", "beta", "lego", "hetero", "beta3")
#: Models for 0/1 responses.
BINARY_MODELS: frozenset[str] = frozenset({"1pl", "2pl", "3pl"})
#: Models that only exist with one latent dimension.
ONE_DIM_MODELS: frozenset[str] = frozenset({"1pl", "beta3"})
#: Per-model nuisance parameter of each continuous model (fixed at the population median
#: when scoring a new model).
NUISANCE: dict[str, str] = {"lego": "sigma", "hetero": "k"}
