"""What a fit compiles: one program per stage, the same numbers as numpyro's own SVI loop.

Compiling dominates a first fit on CPU (benchmarks/results/irt_speed.md), so the
engine keeps host-side work (keys, dtype casts, slicing) out of JAX and runs a
whole SVI fit as one compiled program called per chunk. These tests check
that the keys equal ``jax.random.key``'s, that the chunked program gives
numpyro's ``SVI.update`` loop's numbers, and that a fresh process compiles
only the fit's own programs.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from coreval.irt import fit
from coreval.irt._data import initial_values, prepare
from coreval.irt._device import FIT_PRNG_IMPL, prng_key, to_device, wrap_key
from coreval.irt.inference.programs import _Spec
from coreval.irt.inference.svi import _make_svi


@pytest.mark.parametrize("seed", [0, 1, 7, 12345, 2**31 - 1, 2**31, 2**40 + 3])
def test_prng_key_equals_jax_key(seed: int) -> None:
    expected = jax.random.key_data(jax.random.key(seed, impl=FIT_PRNG_IMPL))
    np.testing.assert_array_equal(prng_key(seed), np.asarray(expected))


def test_to_device_keeps_values_and_uses_default_dtypes() -> None:
    x = np.array([[0.5, np.nan], [1.0, 2.0]])
    out = to_device(x)
    assert out.dtype == jax.numpy.float32
    np.testing.assert_array_equal(np.asarray(out), x.astype(np.float32))
    assert to_device(np.array([True, False])).dtype == bool
    assert to_device(np.arange(3)).dtype == jax.numpy.int32


def test_chunked_svi_program_equals_numpyro_update_loop() -> None:
    rng = np.random.default_rng(0)
    theta, a, d = rng.normal(size=(30, 1)), rng.lognormal(0, 0.3, (12, 1)), rng.normal(size=12)
    y = (rng.random((30, 12)) < 1 / (1 + np.exp(-(theta @ a.T + d)))).astype(float)
    y[rng.random(y.shape) < 0.1] = np.nan
    steps, lr, seed = 150, 0.05, 4  # 150 steps: two chunks of the compiled program
    ours = fit("2pl", y, method="svi", priors="hierarchical", seed=seed, show_progress=False, settings={"num_steps": steps, "learning_rate": lr, "num_draws": 3})

    data = prepare(y, "2pl")
    spec = _Spec("2pl", 30, 12, 1, "hierarchical", None)
    init = {k: to_device(v) for k, v in initial_values(data, "2pl", 1).items()}
    yj, mask = to_device(data.y), to_device(data.mask)
    svi = _make_svi(spec, "svi", "normal", lr, init)
    state = svi.init(jax.random.split(wrap_key(prng_key(seed)))[0], yj, mask)
    update = jax.jit(svi.update)
    for _ in range(steps):
        state, _ = update(state, yj, mask)
    median = svi.guide.median(svi.get_params(state))
    point = ours.item_point()
    np.testing.assert_allclose(point["d"], np.asarray(median["d"]), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(point["a"][:, 0], np.asarray(median["a"]).reshape(-1),
                               rtol=1e-4, atol=1e-5)


COMPILES = textwrap.dedent("""
    import logging, sys, warnings
    import numpy as np
    import jax
    warnings.filterwarnings("ignore")
    jax.config.update("jax_log_compiles", True)
    logging.basicConfig(level=logging.WARNING, stream=sys.stdout, format="%(message)s")
    from coreval.irt import fit
    rng = np.random.default_rng(0)
    y = (rng.random((15, 10)) < 0.6).astype(float)
    y[0, 0] = np.nan
    print("== svi")
    fit("2pl", y, method="svi", settings={"num_steps": 120, "num_draws": 4}, seed=0,
        show_progress=False)
    print("== map")
    fit("2pl", y, method="map", settings={"num_steps": 120, "num_draws": 4}, seed=0,
        show_progress=False)
""")


def test_a_fit_compiles_only_its_own_programs(tmp_path) -> None:
    script = tmp_path / "compiles.py"
    script.write_text(COMPILES)
    env = {**os.environ, "COREVAL_JAX_CACHE": "off", "COREVAL_PROGRESS": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run([sys.executable, str(script)], env=env, check=True,
                         capture_output=True, text=True).stdout
    svi_part, map_part = out.split("== svi")[1].split("== map")
    compiled = [set(re.findall(r"XLA compilation of jit\((\w+)\)", part))
                for part in (svi_part, map_part)]
    # Eager jnp operations (jnp.asarray casts, slicing, jax.random on the host) would
    # each add a program here, about 0.05-0.2 s of compiling apiece.
    assert compiled[0] == {"_svi_program", "_loglik"}
    assert compiled[1] == {"_map_init", "_map_chunk", "_hvps", "_map_constrain"}


def test_host_noise_guide_draws_follow_numpyros_autonormal() -> None:
    """``_svi_draw``'s T(loc + scale * noise) draws match ``AutoNormal.sample_posterior``."""
    from coreval.irt.inference.svi import _latent_sites, _svi_draw

    rng = np.random.default_rng(1)
    y = (rng.random((20, 8)) < 0.6).astype(float)
    data = prepare(y, "2pl")
    spec = _Spec("2pl", 20, 8, 1, "hierarchical", None)
    init = {k: to_device(v) for k, v in initial_values(data, "2pl", 1).items()}
    yj, mask = to_device(data.y), to_device(data.mask)
    svi = _make_svi(spec, "svi", "normal", 0.05, init)
    state = svi.init(wrap_key(prng_key(0)), yj, mask)
    update = jax.jit(svi.update)
    for _ in range(50):  # move the scales away from their common initial value
        state, _ = update(state, yj, mask)
    auto, params, n = svi.guide, svi.get_params(state), 20000
    noise = {name: to_device(rng.standard_normal((n, *np.shape(
        params[f"{name}_{auto.prefix}_loc"])))) for name in _latent_sites(auto)}
    ours = jax.jit(lambda st, nz: _svi_draw(svi, spec, n, st, wrap_key(prng_key(1)), nz,
                                            yj, mask))(state, noise)
    theirs = jax.jit(lambda p: auto.sample_posterior(wrap_key(prng_key(2)), p,
                                                     sample_shape=(n,)))(params)
    median = auto.median(params)
    assert set(ours) == set(_latent_sites(auto)) and "a" in ours and "u_a" in ours
    for name, draws in ours.items():
        draws, ref = np.asarray(draws), np.asarray(theirs[name])
        np.testing.assert_allclose(draws[-1], np.asarray(median[name]), rtol=1e-5, atol=1e-6)
        # Monte Carlo agreement of the two samplers' quantiles (n = 20000 each).
        for q in (0.1, 0.5, 0.9):
            spread = np.quantile(ref, 0.9, axis=0) - np.quantile(ref, 0.1, axis=0)
            np.testing.assert_array_less(
                np.abs(np.quantile(draws[:-1], q, axis=0) - np.quantile(ref, q, axis=0)),
                0.05 * spread + 1e-6)
