"""Compiled programs are the same in every process, so JAX's persistent cache is reused.

Checked against numpyro's own ``Trace_ELBO`` (same loss value) and across
processes with different string-hash seeds (same compiled programs: the second
process adds nothing to the cache the first one filled).
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import optax
import pytest
from numpyro.infer import SVI, Trace_ELBO
from numpyro.infer.autoguide import AutoNormal

from coreval.irt.elbo import OrderedTraceELBO
from coreval.jax_cache import default_cache_dir, enable_compilation_cache


def _toy_model(y):
    mu = numpyro.sample("mu", dist.Normal(0.0, 10.0))
    u = numpyro.sample("u", dist.Gamma(1.0, 1.0))
    with numpyro.plate("items", y.shape[1]):
        d = numpyro.sample("d", dist.Normal(mu, 1.0 / jnp.sqrt(u)))
    with numpyro.plate("models", y.shape[0]):
        theta = numpyro.sample("theta", dist.Normal(0.0, 1.0))
    numpyro.sample("y", dist.Bernoulli(logits=theta[:, None] + d).to_event(2), obs=y)


def test_ordered_elbo_equals_numpyro_trace_elbo() -> None:
    rng = np.random.default_rng(0)
    y = (rng.random((12, 7)) < 0.6).astype(np.float32)
    guide = AutoNormal(_toy_model, init_scale=0.3)
    ours = SVI(_toy_model, guide, optax.adam(0.1), OrderedTraceELBO())
    ref = SVI(_toy_model, guide, optax.adam(0.1), Trace_ELBO())
    state = ours.init(jax.random.PRNGKey(1), y)
    params = ours.get_params(state)
    loss_ours = jax.jit(lambda key: ours.loss.loss(key, params, _toy_model, guide, y))
    loss_ref = jax.jit(lambda key: ref.loss.loss(key, params, _toy_model, guide, y))
    for seed in range(3):
        key = jax.random.PRNGKey(seed)
        a, b = float(loss_ours(key)), float(loss_ref(key))
        assert a == pytest.approx(b, rel=1e-5)
    # ... and the optimisation reaches the same place
    s_ours, s_ref = ours.init(jax.random.PRNGKey(2), y), ref.init(jax.random.PRNGKey(2), y)
    step_ours, step_ref = jax.jit(ours.update), jax.jit(ref.update)
    for _ in range(50):
        s_ours, _ = step_ours(s_ours, y)
        s_ref, _ = step_ref(s_ref, y)
    for name, value in ours.get_params(s_ours).items():
        np.testing.assert_allclose(value, ref.get_params(s_ref)[name], rtol=1e-4, atol=1e-5)


def test_default_cache_dir_follows_environment(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("COREVAL_JAX_CACHE", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("COREVAL_JAX_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert default_cache_dir() == tmp_path / "coreval" / "jax"
    monkeypatch.setenv("COREVAL_JAX_CACHE", "off")
    assert default_cache_dir() is None
    if not jax.config.jax_compilation_cache_dir and not os.environ.get(
            "JAX_COMPILATION_CACHE_DIR"):
        assert enable_compilation_cache() is None  # off: JAX's configuration untouched
        assert not jax.config.jax_compilation_cache_dir


FIT_SCRIPT = textwrap.dedent("""
    import sys, warnings
    import numpy as np
    warnings.filterwarnings("ignore")
    from coreval.jax_cache import enable_compilation_cache
    enable_compilation_cache(sys.argv[1], min_compile_seconds=0.0)
    from coreval.irt import fit
    rng = np.random.default_rng(0)
    y = (rng.random((20, 15)) < 0.6).astype(float)
    y[0, 0] = np.nan
    r = fit("2pl", y, method="svi", priors="hierarchical",
            settings={"num_steps": 20, "num_draws": 5}, seed=0, show_progress=False)
    print(repr(float(r.item_point()["d"].sum())))
""")


def _run(script: Path, cache: Path, hash_seed: str) -> str:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "COREVAL_PROGRESS": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run([sys.executable, str(script), str(cache)], env=env, check=True,
                         capture_output=True, text=True)
    return out.stdout.strip().splitlines()[-1]


def test_second_process_reuses_the_compiled_svi_programs(tmp_path) -> None:
    script = tmp_path / "fit_once.py"
    script.write_text(FIT_SCRIPT)
    cache = tmp_path / "cache"
    first = _run(script, cache, "1")
    svi_programs = {p.name for p in cache.iterdir() if p.name.startswith("jit__svi")}
    assert {n.split("-")[0] for n in svi_programs} == {"jit__svi_program"}
    # numpyro's Trace_ELBO orders its terms by a set of site names, whose order changes
    # with the hash seed; the programs (and so the cache keys) must not.
    second = _run(script, cache, "2")
    assert {p.name for p in cache.iterdir() if p.name.startswith("jit__svi")} == svi_programs
    assert second == first  # same seed, same numbers, across processes


def test_cli_commands_turn_the_cache_on(tmp_path) -> None:
    rng = np.random.default_rng(0)
    data = tmp_path / "wide.csv"
    rows = ["model," + ",".join(f"q{j}" for j in range(12))]
    rows += [f"m{i}," + ",".join(str(int(v)) for v in rng.random(12) < 0.6) for i in range(10)]
    data.write_text("\n".join(rows) + "\n")
    cache = tmp_path / "cli-cache"
    env = {**os.environ, "COREVAL_JAX_CACHE": str(cache), "COREVAL_PROGRESS": "0"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-m", "coreval.cli", "fit", str(data), "--model", "2pl",
                          "--method", "map", "--out", str(tmp_path / "model")],
                         env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert any(p.name.startswith("jit__") for p in cache.iterdir())


def test_compiled_programs_are_dropped_once_they_hold_too_many_mappings(monkeypatch) -> None:
    """The harness's guard against XLA running out of memory mappings in long runs."""
    import coreval.jax_cache as jc

    cleared = []
    monkeypatch.setattr(jax, "clear_caches", lambda: cleared.append(True))
    monkeypatch.setattr(jc, "memory_map_usage", lambda: (40_000, 65_530))
    assert jc.release_compiled_programs() and cleared == [True]  # above half the limit
    monkeypatch.setattr(jc, "memory_map_usage", lambda: (20_000, 65_530))
    assert not jc.release_compiled_programs() and cleared == [True]
    monkeypatch.setattr(jc, "memory_map_usage", lambda: None)  # no /proc: nothing to do
    assert not jc.release_compiled_programs(share=0.0) and cleared == [True]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="counts mappings in /proc")
def test_dropping_compiled_programs_unmaps_them() -> None:
    """Each compiled shape holds mappings until JAX's caches are cleared (the real effect)."""
    from coreval.jax_cache import memory_map_usage, release_compiled_programs

    before = memory_map_usage()[0]
    f = jax.jit(lambda x: jnp.tanh(x @ x.T).sum())
    for n in range(1, 101):  # 100 shapes, 100 programs
        f(jnp.ones((n, 3))).block_until_ready()
    grown = memory_map_usage()[0]
    assert grown - before > 200
    assert release_compiled_programs(share=0.0)
    assert memory_map_usage()[0] < grown - 200
