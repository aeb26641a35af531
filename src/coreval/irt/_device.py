"""Host-side helpers that keep a fit from compiling more than its own programs.

Compiling dominates the first IRT fit of a process on CPU
(benchmarks/results/irt_speed.md). Three things here cut it:

* :func:`to_device` casts on the host and uses ``jax.device_put``; ``jnp.asarray``
  of a NumPy array compiles a small program per dtype and rank.
* Fits draw their random numbers from JAX's ``unsafe_rbg`` key implementation
  (:data:`FIT_PRNG_IMPL`), whose key splitting and bit generation are single XLA
  operations; the default ``threefry2x32`` unrolls into many kernels per split and
  draw. For a 2PL SVI fit of ``arc_challenge`` (init, steps and draws in one
  program) lowering and compiling took 3.7 s instead of 4.6 s. JAX documents the price: ``unsafe_rbg`` streams are the same for the
  same seed on the same JAX version and backend (so a fit is reproducible there),
  but may differ across JAX/XLA versions and between CPU and GPU, and their split
  keys carry no statistical guarantee beyond what Monte Carlo noise in SVI
  needs. Keys are passed in and out of compiled programs as their raw
  ``uint32`` data (:func:`prng_key`, :func:`wrap_key`), so no key is ever built
  eagerly.
* :data:`JIT_OPTIONS` compile the fit's programs at XLA's backend optimisation
  level 1 instead of 2: about 0.3-0.4 s less compiling of an SVI fit, and the
  compiled SVI and MAP steps measured as fast as at level 2 (see
  benchmarks/results/irt_speed.md).
"""

from __future__ import annotations

from typing import Any

import jax
import numpy as np

#: JAX key implementation of every random draw inside an IRT fit (see module docstring).
FIT_PRNG_IMPL = "unsafe_rbg"
#: ``jax.jit`` keyword arguments of the fit's compiled programs.
JIT_OPTIONS: dict[str, Any] = {"compiler_options": {"xla_backend_optimization_level": 1}}


def to_device(x: np.ndarray) -> jax.Array:
    """Put a host array on the device with JAX's default dtypes, without compiling.

    ``jnp.asarray`` of a NumPy array runs a small compiled program per dtype and
    rank (about 0.05 s each on CPU, a noticeable share of a first fit); casting
    on the host and ``jax.device_put`` compiles nothing.
    """
    x = np.asarray(x)
    if x.dtype != bool:  # float64/int64 become float32/int32 unless jax_enable_x64
        kind = np.int64 if np.issubdtype(x.dtype, np.integer) else np.float64
        x = x.astype(jax.dtypes.canonicalize_dtype(kind), copy=False)
    return jax.device_put(x)


def prng_key(seed: int) -> np.ndarray:
    """Raw data of ``jax.random.key(seed, impl=FIT_PRNG_IMPL)``, built on the host.

    An ``unsafe_rbg`` key seeded with ``0 <= seed < 2**31`` is the four ``uint32``
    words ``(0, seed, 0, seed)``; building them with NumPy avoids compiling JAX's
    seeding program. Other seeds go through ``jax.random.key``.
    """
    seed = int(seed)
    if not 0 <= seed < 2**31:
        return np.asarray(jax.random.key_data(jax.random.key(seed, impl=FIT_PRNG_IMPL)))
    return np.array([0, seed, 0, seed], dtype=np.uint32)


def wrap_key(data: jax.Array) -> jax.Array:
    """The typed key of raw key ``data`` (:func:`prng_key`); call it inside compiled code."""
    return jax.random.wrap_key_data(data, impl=FIT_PRNG_IMPL)


def host_rng(data: Any) -> np.random.Generator:
    """A NumPy generator seeded by raw key ``data``: for draws made on the host."""
    return np.random.default_rng(np.asarray(data, dtype=np.uint32))
