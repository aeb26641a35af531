"""Signed D = 1 discriminations (``priors="signed"``): recovery, identification, downstream use."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt import fit, score_new_model
from coreval.irt.fit_spec import PRIOR_FAMILIES, IRTFitSpec
from coreval.irt.logistic import grid_ability_draws
from coreval.irt.priors import PRIORS


def _signed_2pl(n_models: int = 200, n_items: int = 120, neg_share: float = 0.25,
                seed: int = 0) -> tuple[ScoreMatrix, np.ndarray, np.ndarray, np.ndarray]:
    """2PL data, ``neg_share`` of the items with a negative discrimination."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=n_models)
    a = np.exp(rng.normal(0.0, 0.4, size=n_items))
    a[rng.random(n_items) < neg_share] *= -1.0
    d = rng.normal(0.0, 1.0, size=n_items)
    y = (rng.random((n_models, n_items)) < expit(np.outer(theta, a) + d)).astype(float)
    return ScoreMatrix(y), theta, a, d


@pytest.fixture(scope="module")
def signed_data():
    return _signed_2pl()


def _check_recovery(a_hat: np.ndarray, a_true: np.ndarray) -> None:
    clear = np.abs(a_true) > 0.5
    assert np.all(np.sign(a_hat[clear]) == np.sign(a_true[clear])), (
        f"{int(np.sum(np.sign(a_hat[clear]) != np.sign(a_true[clear])))} of {int(clear.sum())} "
        "clearly non-zero discriminations recovered with the wrong sign")
    assert np.corrcoef(a_hat, a_true)[0, 1] > 0.9


def test_signed_family_is_registered() -> None:
    assert "signed" in PRIORS and "signed" in PRIOR_FAMILIES
    assert IRTFitSpec(priors="signed").priors == "signed"
    assert IRTFitSpec(priors="signed").key() != IRTFitSpec().key()


@pytest.mark.parametrize("method", ["map", "svi"])
def test_signed_recovers_sign_and_size(signed_data, method: str) -> None:
    matrix, theta, a, _ = signed_data
    result = fit("2pl", matrix, method=method, priors="signed", seed=0, show_progress=False,
                 settings={"num_steps": 1500, "learning_rate": 0.05, "num_draws": 50})
    a_hat = result.item_point()["a"][:, 0]
    _check_recovery(a_hat, a)
    # orientation: the latent scale still means "more able" (positive on average)
    assert np.corrcoef(result.abilities()[:, 0], theta)[0, 1] > 0.9
    table = result.items
    assert "reversed" in table.columns
    np.testing.assert_array_equal(table["reversed"].to_numpy(), a_hat < 0)
    assert np.all(np.isfinite(result.item_draws()["a"]))


def test_hierarchical_family_stays_positive(signed_data) -> None:
    """The truncated family cannot represent these items (the reason for "signed")."""
    matrix, _, a, _ = signed_data
    result = fit("2pl", matrix, method="map", priors="hierarchical", seed=0, show_progress=False,
                 settings={"num_steps": 1500, "learning_rate": 0.05, "num_draws": 1})
    a_hat = result.item_point()["a"][:, 0]
    assert np.all(a_hat >= 0)
    assert "reversed" not in result.items.columns
    assert np.corrcoef(a_hat, a)[0, 1] < 0.9


def test_signed_laplace_draws_and_scoring(signed_data) -> None:
    matrix, _, a, d = signed_data
    result = fit("2pl", matrix, method="map", priors="signed", seed=1, show_progress=False,
                 settings={"num_steps": 1500, "learning_rate": 0.05, "num_draws": 40})
    draws = result.item_draws()
    assert draws["a"].shape[0] == 40 and (draws["a"] < 0).any()
    # a new model answering like a strong model (negative items answered "wrongly")
    rng = np.random.default_rng(5)
    y_new = (rng.random(len(a)) < expit(2.0 * a + d)).astype(float)
    post = score_new_model(result, y_new, num_draws=40, seed=0)
    assert float(np.mean(post.draws)) > 1.0
    grid = grid_ability_draws(y_new[None], draws["a"], draws["d"], rng=rng)
    assert grid.shape == (1, 40) and float(grid.mean()) > 1.0
    # its reflection (every answer flipped) scores as a weak model, not a strong one
    grid_flip = grid_ability_draws(1.0 - y_new[None], draws["a"], draws["d"], rng=rng)
    assert float(grid_flip.mean()) < -1.0


@pytest.mark.filterwarnings("ignore:All-NaN slice")  # one chain: no R-hat
def test_signed_nuts_runs() -> None:
    matrix, _, a, _ = _signed_2pl(n_models=60, n_items=20, seed=2)
    result = fit("2pl", matrix, method="nuts", priors="signed", seed=0, show_progress=False,
                 settings={"num_warmup": 150, "num_samples": 100, "num_chains": 1})
    a_hat = result.item_point()["a"][:, 0]
    assert np.corrcoef(a_hat, a)[0, 1] > 0.8


def test_signed_rejects_mml(signed_data) -> None:
    with pytest.raises(ValidationError, match="priors='signed'"):
        fit("2pl", signed_data[0], method="mml", priors="signed", show_progress=False)
