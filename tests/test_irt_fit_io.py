"""IRTFit: save/load round trip, model card, prediction, LOO, and the MML wrapper (LSAT-7)."""

from __future__ import annotations

import hashlib
import json

import arviz as az
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.irt import IRTFit, fit, score_new_model

pytestmark = pytest.mark.filterwarnings("ignore::FutureWarning", "ignore::UserWarning")


@pytest.fixture(scope="module")
def fitted() -> tuple[IRTFit, ScoreMatrix]:
    rng = np.random.default_rng(0)
    theta = rng.normal(size=(40, 1))
    z = theta @ rng.lognormal(0, 0.3, (25, 1)).T + rng.normal(size=25)
    values = (rng.random(z.shape) < expit(z)).astype(float)
    values[rng.random(z.shape) < 0.1] = np.nan
    matrix = ScoreMatrix(values, name="toy", models=[f"m{i}" for i in range(40)],
                         items=[f"q{j}" for j in range(25)])
    return fit("2pl", matrix, method="map", show_progress=False, settings={"num_steps": 300, "num_draws": 30}), matrix


def test_save_load_round_trip(fitted, tmp_path) -> None:
    result, matrix = fitted
    path = result.save(tmp_path / "models" / "toy-2pl")
    assert sorted(p.name for p in path.iterdir()) == ["card.json", "items.csv", "posterior.nc"]
    loaded = IRTFit.load(path)
    assert (loaded.model, loaded.method, loaded.dims, loaded.priors) == ("2pl", "map", 1, "weak")
    pd.testing.assert_frame_equal(loaded.items, result.items)
    assert list(loaded.item_ids) == list(matrix.items)
    assert list(loaded.model_ids) == list(matrix.models)
    for name, draws in result.item_draws().items():
        np.testing.assert_array_equal(loaded.item_draws()[name], draws)
        np.testing.assert_array_equal(loaded.item_point()[name], result.item_point()[name])
    np.testing.assert_array_equal(loaded.idata.log_likelihood["y"].values,
                                  result.idata.log_likelihood["y"].values)
    theta = np.linspace(-2, 2, 5)[:, None]
    np.testing.assert_allclose(loaded.predict_mean(theta), result.predict_mean(theta))
    csv = pd.read_csv(path / "items.csv")
    assert list(csv.columns) == ["item", "a", "d", "b", "a_sd", "d_sd"]
    # Saving again needs force=True; it replaces the folder atomically and leaves no
    # temporary folders behind.
    with pytest.raises(ValidationError, match="force=True"):
        result.save(path)
    result.save(path, force=True)
    assert sorted(p.name for p in path.parent.iterdir()) == ["toy-2pl"]


def test_model_card_provenance_and_diagnostics(fitted) -> None:
    result, matrix = fitted
    card = result.card
    assert card["data"]["name"] == "toy"
    assert card["data"]["shape"] == [40, 25]
    assert card["data"]["observed_fraction"] == pytest.approx(matrix.observed.mean())
    assert card["data"]["sha256"] == hashlib.sha256(
        np.ascontiguousarray(matrix.values).tobytes()).hexdigest()
    diag = card["diagnostics"]
    assert diag["steps"] == 300 and np.isfinite(diag["final_loss"]) and diag["seconds"] > 0
    assert diag["posterior"] == "laplace"
    assert {"coreval_version", "date", "settings"} <= set(card)
    json.dumps(card)


def test_predict_mean_is_the_2pl_curve(fitted) -> None:
    result, _ = fitted
    point = result.item_point()
    theta = np.array([[-1.0], [0.0], [1.5]])
    expected = expit(theta @ point["a"].T + point["d"])
    np.testing.assert_allclose(result.predict_mean(theta), expected, rtol=1e-5, atol=1e-7)
    sub = result.predict_mean(theta[:, 0], items=["q3", "q0"])
    np.testing.assert_allclose(sub, expected[:, [3, 0]], rtol=1e-5, atol=1e-7)
    assert result.abilities().shape == (40, 1)
    assert result.item_draws()["a"].shape == (30, 25, 1)


def test_map_point_estimate_is_the_mode_not_the_laplace_mean(fitted) -> None:
    result, matrix = fitted
    # The same fit without Laplace draws stores the mode itself as its only draw.
    mode_only = fit("2pl", matrix, method="map", show_progress=False, settings={"num_steps": 300, "num_draws": 1})
    point = result.item_point()
    np.testing.assert_allclose(point["a"], mode_only.item_draws()["a"][0], rtol=1e-5)
    np.testing.assert_allclose(point["d"], mode_only.item_draws()["d"][0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(point["b"], -point["d"] / point["a"][:, 0], rtol=1e-5)
    np.testing.assert_allclose(result.abilities(), mode_only.abilities("mean"), rtol=1e-5,
                               atol=1e-6)
    # a = exp(z) with z Gaussian under Laplace: E[a] = exp(mode + s²/2), so the draw
    # mean lies above the mode on average over the items.
    assert np.mean(np.log(result.item_point("mean")["a"] / point["a"])) > 0.0
    np.testing.assert_array_equal(result.items["a"], point["a"][:, 0])
    with pytest.raises(ValidationError, match="statistic must be one of"):
        result.item_point("mode")


def test_svi_point_estimate_is_the_guide_median(fitted) -> None:
    _, matrix = fitted
    result = fit("2pl", matrix, method="svi", show_progress=False, settings={"num_steps": 300, "num_draws": 4000})
    point, median = result.item_point(), result.item_point("median")
    # Exact guide median vs the median of 4000 guide draws: Monte Carlo error only.
    spread = result.items["a_sd"].to_numpy()
    assert np.max(np.abs(point["a"][:, 0] - median["a"][:, 0]) / spread) < 0.1
    assert "point_estimate" in result.idata.groups()


def test_loo_runs_on_the_pointwise_log_likelihood(fitted) -> None:
    result, matrix = fitted
    loo = az.loo(result.idata)
    n_obs = int(matrix.observed.sum())
    assert loo.n_data_points == n_obs
    total = result.idata.sample_stats["loglik_total"].values
    assert np.isfinite(loo.elpd_loo) and loo.elpd_loo < total.mean()


def test_scoring_a_fitted_model_uses_the_laplace_draws(fitted) -> None:
    result, matrix = fitted
    responses = pd.Series(matrix.values[0], index=matrix.items).dropna()
    post = score_new_model(result, responses, num_draws=50)
    assert post.item_draw_index.max() < result.n_draws
    assert abs(post.mean[0] - result.abilities()[0, 0]) < 2 * post.sd[0]


def test_mml_wrapper_matches_mirt_on_lsat7(shared_dir, anchors_dir) -> None:
    table = pd.read_csv(shared_dir / "data" / "psychometrics" / "LSAT7.csv")
    patterns = table.drop(columns="freq").to_numpy(dtype=float)
    values = np.repeat(patterns, table["freq"].to_numpy(), axis=0)
    ref = json.loads((anchors_dir / "lsat_mirt_reference.json").read_text())["LSAT7_2PL"]
    result = fit("2pl", values, method="mml", show_progress=False)
    np.testing.assert_allclose(result.items["a"], ref["a"], atol=2e-2)
    np.testing.assert_allclose(result.items["d"], ref["d"], atol=2e-2)
    assert result.card["diagnostics"]["loglik"] == pytest.approx(ref["logLik"], abs=0.05)
    assert {"a_sd", "d_sd"} <= set(result.items.columns)
    assert result.n_draws == 500  # draws from the asymptotic normal of the estimates


def test_large_fits_keep_totals_without_the_pointwise_arrays(fitted, monkeypatch,
                                                             tmp_path) -> None:
    """Above LOGLIK_CAP the pointwise log-likelihood and its index arrays are omitted,
    and the per-draw totals (masked sums) equal those of the pointwise path."""
    import coreval.irt.inference.idata as inference

    result, matrix = fitted
    monkeypatch.setattr(inference, "LOGLIK_CAP", 10)
    big = fit("2pl", matrix, method="map", seed=0,
              show_progress=False, settings={"num_steps": 300, "num_draws": 30})
    assert "log_likelihood" not in big.idata.groups()
    assert "constant_data" not in big.idata.groups()
    assert big.card["diagnostics"]["log_likelihood"].startswith("omitted")
    np.testing.assert_allclose(big.idata.sample_stats["loglik_total"].values,
                               result.idata.sample_stats["loglik_total"].values, rtol=1e-5)
    big.save(tmp_path / "big")
    assert IRTFit.load(tmp_path / "big").n_draws == 30
