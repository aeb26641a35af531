"""Shared fixtures. Real data lives in ../shared/data; tests that need it skip when absent."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("COREVAL_SHARED_DIR", REPO.parent / "shared"))

os.environ.setdefault("COREVAL_PROGRESS", "0")
# CLI tests must not fill the user's JAX compilation cache (tests/test_jax_cache.py uses its own)
os.environ.setdefault("COREVAL_JAX_CACHE", "off")


def signed_2pl_matrix(n_models: int, n_items: int, *, neg_share: float, seed: int):
    """Binary 2PL responses; a ``neg_share`` of the items discriminate negatively.

    Items that stronger models get wrong more often (label noise, adversarial items): the
    misfit that a positive-discrimination IRT model cannot represent.
    """
    from scipy.special import expit

    from coreval.data.matrix import ScoreMatrix

    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_models)
    a = np.exp(rng.normal(0.3, 0.3, size=n_items))
    a[rng.random(n_items) < neg_share] *= -1.0
    d = rng.normal(0.0, 1.0, size=n_items)
    y = (rng.random((n_models, n_items)) < expit(np.outer(theta, a) + d)).astype(float)
    return ScoreMatrix(y)


def two_ability_matrix(spread: float = 1.0):
    """Two independent abilities, each driving half of 80 binary items: no 1-D model fits.

    Returns the first 100 of 160 models as a source matrix, the other 60 rows and their
    full scores. A larger ``spread`` of the abilities puts more models near scores of 0
    and 1.
    """
    from scipy.special import expit

    from coreval.data.matrix import ScoreMatrix

    rng = np.random.default_rng(5)
    theta = rng.normal(size=(160, 2)) * spread
    a = np.zeros((2, 80))
    a[0, :40], a[1, 40:] = rng.lognormal(0.3, 0.3, 40), rng.lognormal(0.3, 0.3, 40)
    p = expit(theta @ a + rng.normal(size=80))
    m = ScoreMatrix((rng.random(p.shape) < p).astype(float), name="two-abilities")
    return m.take(np.arange(100)), m.values[100:], m.take(np.arange(100, 160)).summary_scores()


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    """The ../shared folder (data + anchors); skip when it is not present."""
    if not (SHARED / "data").is_dir():
        pytest.skip(f"needs the shared data folder {SHARED}/data, which is absent "
                    "(set COREVAL_SHARED_DIR to use another location)")
    return SHARED


@pytest.fixture(scope="session")
def anchors_dir(shared_dir: Path) -> Path:
    path = shared_dir / "anchors"
    if not path.is_dir():
        pytest.skip(f"needs reference numbers in {path}, which is absent")
    return path


@pytest.fixture(scope="session")
def load_shared(shared_dir: Path):
    """Return a loader ``load_shared(name) -> ScoreMatrix`` for ``shared/data/<name>.npz``."""
    from coreval.data.npz import read_npz

    cache: dict[str, object] = {}

    def _load(name: str):
        path = shared_dir / "data" / f"{name}.npz"
        if not path.exists():
            pytest.skip(f"needs {path}, which is absent")
        if name not in cache:
            cache[name] = read_npz(path)
        return cache[name]

    return _load


@pytest.fixture
def irt_fit_calls(monkeypatch) -> list[tuple[str, str, int]]:
    """``(model, priors, number of models)`` of every IRT fit made while the test runs."""
    import coreval.irt.inference as inference

    calls: list[tuple[str, str, int]] = []
    fit = inference.fit

    def counted(model, data, **kwargs):
        calls.append((model, kwargs["priors"], data.n_models))
        return fit(model, data, **kwargs)

    monkeypatch.setattr(inference, "fit", counted)
    return calls


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(scope="module", autouse=True)
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module.

    One pytest process compiles hundreds of IRT programs (models × dimensions × fit
    methods × shapes); kept all at once, their executables' memory mappings add up, and
    the full suite crashed inside XLA late in the run. Clearing them per module keeps the
    process's footprint that of one module.
    """
    yield
    import sys

    if "jax" in sys.modules:
        import gc

        sys.modules["jax"].clear_caches()
        gc.collect()
