"""What a fit compiles: one program per stage, the same numbers as numpyro's own SVI loop.

Compiling dominates a first fit on CPU (benchmarks/results/irt_speed.md), so the
engine keeps host-side work (keys, dtype casts, slicing) out of JAX and runs a
whole SVI fit as one compiled program called per chunk. These tests check
that the keys equal ``jax.random.PRNGKey``'s, that the chunked program gives
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
from coreval.irt.inference import _make_svi, _Spec, _to_device, prng_key


@pytest.mark.parametrize("seed", [0, 1, 7, 12345, 2**31 - 1])
def test_prng_key_equals_jax_prngkey(seed: int) -> None:
    np.testing.assert_array_equal(np.asarray(prng_key(seed)),
                                  np.asarray(jax.random.PRNGKey(seed)))


def test_to_device_keeps_values_and_uses_default_dtypes() -> None:
    x = np.array([[0.5, np.nan], [1.0, 2.0]])
    out = _to_device(x)
    assert out.dtype == jax.numpy.float32
    np.testing.assert_array_equal(np.asarray(out), x.astype(np.float32))
    assert _to_device(np.array([True, False])).dtype == bool
    assert _to_device(np.arange(3)).dtype == jax.numpy.int32


def test_chunked_svi_program_equals_numpyro_update_loop() -> None:
    rng = np.random.default_rng(0)
    theta, a, d = rng.normal(size=(30, 1)), rng.lognormal(0, 0.3, (12, 1)), rng.normal(size=12)
    y = (rng.random((30, 12)) < 1 / (1 + np.exp(-(theta @ a.T + d)))).astype(float)
    y[rng.random(y.shape) < 0.1] = np.nan
    steps, lr, seed = 150, 0.05, 4  # 150 steps: two chunks of the compiled program
    ours = fit("2pl", y, method="svi", priors="hierarchical", num_steps=steps,
               learning_rate=lr, num_draws=3, seed=seed, show_progress=False)

    data = prepare(y, "2pl")
    spec = _Spec("2pl", 30, 12, 1, "hierarchical", None)
    init = {k: _to_device(v) for k, v in initial_values(data, "2pl", 1).items()}
    yj, mask = _to_device(data.y), _to_device(data.mask)
    svi = _make_svi(spec, "svi", "normal", lr, init)
    state = svi.init(jax.random.split(jax.random.PRNGKey(seed))[0], yj, mask)
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
    fit("2pl", y, method="svi", num_steps=120, num_draws=4, seed=0, show_progress=False)
    print("== map")
    fit("2pl", y, method="map", num_steps=120, num_draws=4, seed=0, show_progress=False)
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
