"""Model criticism of the IRT methods (gp-irt, metabench, irt-bayes): FittedMethod.model_check."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import signed_2pl_matrix
from coreval.data.matrix import ScoreMatrix
from coreval.methods import get_method
from coreval.pipeline import fit_method
from coreval.report.score_card import score_card
from coreval.saved_selection import load_selection, save_selection

#: A short SVI fit: enough for the 2PL on these small matrices.
FAST = {"num_steps": 600}
#: gp-irt with one fixed model (no per-run choice between candidates: faster, and the test
#: is about the check, not the choice).
FIXED_2PL = {"model": "2pl", "priors": "hierarchical"}




def _fit(method: str, matrix: ScoreMatrix, k: int, **options):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = fit_method(get_method(method), matrix, k, seed=0, **options)
    worse = [str(w.message) for w in caught if issubclass(w.category, UserWarning)
             and "worse than" in str(w.message)]
    return fitted, worse


def test_gp_irt_on_2pl_data_passes_the_check() -> None:
    fitted, worse = _fit("gp-irt", signed_2pl_matrix(60, 100, neg_share=0.0, seed=2), 20,
                         **FAST, **FIXED_2PL)
    check = fitted.model_check
    assert not worse, worse
    assert check.model == "2PL, 1 dimension"
    assert check.ppc.pvalue > 0.05 and check.ppc.outside_share < 0.25
    assert check.ppc.parameter_draws > 1  # SVI draws: a posterior, not a plug-in check
    # the out-of-fold RMSE is that of the calibration residuals of the whole method
    assert check.cv_rmse == pytest.approx(float(np.sqrt(np.mean(fitted.cv_residuals ** 2))))
    assert check.ridge_rmse is not None and check.cv_rmse <= check.ridge_rmse
    assert not check.misfit and not check.worse_than_ridge
    assert not any(note.startswith("**caution**") for note in check.notes())


def test_gp_irt_with_positive_discriminations_on_negative_items_warns() -> None:
    """40 % negatively discriminating items: a positive-discrimination 2PL cannot fit them."""
    fitted, worse = _fit("gp-irt", signed_2pl_matrix(60, 100, neg_share=0.4, seed=3), 20,
                         **FAST, **FIXED_2PL)
    check = fitted.model_check
    assert len(worse) == 1
    assert f"{100 * check.cv_rmse:.2f} pp" in worse[0]
    assert f"{100 * check.ridge_rmse:.2f} pp" in worse[0]
    assert check.worse_than_ridge and check.misfit
    assert check.ppc.negative_share > 0.2
    cautions = [note for note in check.notes() if note.startswith("**caution**")]
    assert len(cautions) == 2
    summary = check.summary()
    assert summary["worse_than_ridge"] is True and summary["ppc_pvalue"] < 0.05


def test_metabench_point_estimate_gives_a_plug_in_check() -> None:
    fitted, _ = _fit("metabench", signed_2pl_matrix(60, 100, neg_share=0.0, seed=5), 20)
    check = fitted.model_check
    assert check.ppc.parameter_draws == 1 and check.ppc.replicates == 100
    assert "plug-in predictive check" in check.notes()[0]
    assert check.cv_rmse is not None and check.ridge_rmse is not None


def test_irt_bayes_reports_its_own_check_and_other_methods_none() -> None:
    matrix = signed_2pl_matrix(40, 60, neg_share=0.0, seed=4)
    fitted, _ = _fit("irt-bayes", matrix, 12, **FAST, model="2pl", choose_dims=False)
    check = fitted.model_check
    assert check.ppc is fitted.predictor.ppc_
    # its misfit folds (the method's predictions, blend included) and the ridge on them
    assert check.cv_rmse == pytest.approx(fitted.predictor.cv_rmse_)
    assert check.ridge_rmse == pytest.approx(fitted.predictor.ridge_cv_rmse_)
    random_pp, _ = _fit("random++", matrix, 12)
    assert random_pp.model_check is None


def test_model_check_is_saved_and_reported(tmp_path) -> None:
    matrix = signed_2pl_matrix(60, 100, neg_share=0.4, seed=3)
    fitted, _ = _fit("gp-irt", matrix, 20, **FAST, **FIXED_2PL)
    loaded = load_selection(save_selection(fitted, tmp_path / "sel"))
    assert loaded.model_check.summary() == fitted.model_check.summary()
    np.testing.assert_array_equal(loaded.model_check.ppc.item_pvalues,
                                  fitted.model_check.ppc.item_pvalues)
    responses = matrix.values[0, fitted.coreset.indices]
    card = score_card(matrix, responses, fitted=fitted)
    assert any(note.startswith("**caution**: model check (2PL, 1 dimension)")
               for note in card.notes)


def test_predictive_check_in_blocks_equals_one_block(monkeypatch) -> None:
    """The replicates are simulated in blocks on a large matrix; the draws are the same."""
    from types import SimpleNamespace

    from coreval.irt import criticism

    rng = np.random.default_rng(0)
    n_models, n_items, n_draws = 30, 50, 40
    theta = rng.normal(size=(1, n_draws, n_models, 1))
    draws = {"a": np.exp(rng.normal(0.0, 0.3, (n_draws, n_items, 1))),
             "d": rng.normal(size=(n_draws, n_items)),
             "c": rng.uniform(0.0, 0.2, (n_draws, n_items))}
    fit = SimpleNamespace(link="3pl", idata=SimpleNamespace(posterior={
        "theta": SimpleNamespace(values=theta)}), item_draws=lambda: draws)
    y = (rng.random((n_models, n_items)) < 0.6).astype(float)
    y[3, 7] = np.nan
    whole = criticism.posterior_predictive_check(fit, y, seed=1)
    monkeypatch.setattr(criticism, "BLOCK_CELLS", 3 * n_models * n_items)  # blocks of 3
    blocks = criticism.posterior_predictive_check(fit, y, seed=1)
    assert whole.parameter_draws == n_draws and whole.replicates == 100
    assert blocks.pvalue == whole.pvalue and blocks.outside_share == whole.outside_share
    np.testing.assert_array_equal(blocks.item_pvalues, whole.item_pvalues)
