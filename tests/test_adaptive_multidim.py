"""Adaptive tests over a bank with D ≥ 2 abilities (adaptive Gauss-Hermite quadrature).

The posterior is checked against brute-force integration on a fine product grid (an
independent computation), against the 1-D quadrature when the second dimension carries
nothing, and end to end on simulated two-dimensional data.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.special import expit

from coreval.adaptive import (
    ItemBank,
    fisher_information,
    init,
    next_items,
    score_moments,
    score_variance_reduction,
    theta_sd,
    update,
)
from coreval.errors import ValidationError


def _two_dim_bank(rng, n_items=200, n_draws=1, guessing=False):
    """Items loading mostly on one of two dimensions, draws scattered around them."""
    a = np.abs(rng.normal(1.0, 0.4, (n_items, 2)))
    a[: n_items // 2, 1] *= 0.1
    a[n_items // 2:, 0] *= 0.1
    d = rng.normal(0.0, 1.0, n_items)
    a_draws = a + rng.normal(0.0, 0.1, (n_draws, n_items, 2)) * (n_draws > 1)
    d_draws = d + rng.normal(0.0, 0.1, (n_draws, n_items)) * (n_draws > 1)
    c = rng.uniform(0.1, 0.25, (n_draws, n_items)) if guessing else None
    return ItemBank(items=[f"i{j}" for j in range(n_items)], a=a_draws, d=d_draws, c=c)


def _brute_force(bank, asked, y):
    """θ's posterior mean and SD and the full score's mean by a 401 × 401 grid over
    [-6, 6]², summed over the draws (the joint posterior over draws and abilities)."""
    g = np.linspace(-6.0, 6.0, 401)
    nodes = np.array(np.meshgrid(g, g, indexing="ij")).reshape(2, -1).T
    p = bank.probs_at(nodes)                                      # (S, G, N)
    pa = p[:, :, asked]
    loglik = np.log(np.where(y == 1.0, pa, 1.0 - pa)).sum(axis=2) - 0.5 * (nodes**2).sum(1)
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    marginal = w.sum(axis=0)
    mean = marginal @ nodes
    sd = np.sqrt(marginal @ (nodes - mean) ** 2)
    rest = np.setdiff1d(np.arange(bank.n_items), asked)
    score = (bank.weights[asked] @ y
             + np.einsum("sg,sgn,n->", w, p[:, :, rest], bank.weights[rest]))
    return mean, sd, score


@pytest.mark.parametrize("n_draws, guessing", [(1, False), (3, False), (2, True)])
@pytest.mark.parametrize("n_answers", [5, 40, 150])
def test_adaptive_quadrature_matches_a_fine_grid(n_draws, guessing, n_answers):
    rng = np.random.default_rng(n_answers + 10 * n_draws)
    bank = _two_dim_bank(rng, n_draws=n_draws, guessing=guessing)
    theta = np.array([1.0, -0.5])
    y_all = (rng.random(bank.n_items) < bank.probs_at(theta)[0]).astype(float)
    asked = rng.permutation(bank.n_items)[:n_answers]
    state = init(bank)
    for i in asked:
        state = update(state, [int(i)], [y_all[i]])
    mean, sd, score = _brute_force(bank, asked, y_all[asked])
    got_mean, got_sd = state.theta_moments()
    np.testing.assert_allclose(got_mean, mean, atol=2e-3)
    np.testing.assert_allclose(got_sd, sd, rtol=1e-2)
    assert score_moments(state)[0] == pytest.approx(score, abs=2e-4)


def test_nodes_per_axis_follow_the_node_budget():
    from coreval.adaptive.bank import laplace_nodes

    assert [laplace_nodes(d) for d in (1, 2, 3, 4, 5)] == [7, 7, 4, 3, 3]
    with pytest.raises(ValidationError, match="dims must be at least 1"):
        laplace_nodes(0)


@pytest.mark.parametrize("n_answers", [10, 60, 150])
def test_three_dimensional_quadrature_matches_a_fine_grid(n_answers):
    """D = 3 with 4 nodes per axis (64, ``laplace_nodes``) against a 61³ product grid."""
    rng = np.random.default_rng(20 + n_answers)
    n_items = 180
    a = np.abs(rng.normal(1.0, 0.3, (n_items, 3))) * np.repeat(np.eye(3), n_items // 3, 0)
    a = a + 0.15 * np.abs(rng.normal(size=(n_items, 3)))
    bank = ItemBank(items=[f"i{j}" for j in range(n_items)], a=a[None],
                    d=rng.normal(0.0, 1.0, (1, n_items)))
    y_all = (rng.random(n_items) < bank.probs_at(np.array([0.8, -0.4, 0.2]))[0]).astype(float)
    asked = rng.permutation(n_items)[:n_answers]
    state = update(init(bank), asked, y_all[asked])
    g = np.linspace(-5.0, 5.0, 61)
    nodes = np.array(np.meshgrid(g, g, g, indexing="ij")).reshape(3, -1).T
    p = bank.probs_at(nodes)[0]                                   # (G, N)
    pa = p[:, asked]
    y = y_all[asked]
    loglik = np.log(np.where(y == 1.0, pa, 1.0 - pa)).sum(axis=1) - 0.5 * (nodes**2).sum(1)
    w = np.exp(loglik - loglik.max())
    w /= w.sum()
    mean = w @ nodes
    sd = np.sqrt(w @ (nodes - mean) ** 2)
    rest = np.setdiff1d(np.arange(n_items), asked)
    score = bank.weights[asked] @ y + w @ p[:, rest] @ bank.weights[rest]
    got_mean, got_sd = state.theta_moments()
    assert state.nodes.shape == (64, 3)
    np.testing.assert_allclose(got_mean, mean, atol=0.01)
    np.testing.assert_allclose(got_sd, sd, rtol=0.03)
    assert score_moments(state)[0] == pytest.approx(score, abs=1e-3)


def test_batch_updates_equal_one_at_a_time():
    rng = np.random.default_rng(3)
    bank = _two_dim_bank(rng, n_draws=2)
    y = (rng.random(12) < 0.6).astype(float)
    items = np.arange(12)
    one = init(bank)
    for i in items:
        one = update(one, [int(i)], [y[i]])
    batch = update(init(bank), items, y)
    np.testing.assert_allclose(batch.theta_moments()[0], one.theta_moments()[0], atol=1e-6)
    assert score_moments(batch)[0] == pytest.approx(score_moments(one)[0], abs=1e-8)


def test_an_empty_second_dimension_gives_the_one_dimensional_answers():
    rng = np.random.default_rng(4)
    n = 120
    a = rng.lognormal(0.0, 0.3, (2, n))
    d = rng.normal(0.0, 1.0, (2, n))
    one = ItemBank(items=[str(i) for i in range(n)], a=a, d=d)
    two = ItemBank(items=[str(i) for i in range(n)], a=np.stack([a, np.zeros_like(a)], -1), d=d)
    y = (rng.random(n) < expit(a[0] * 0.7 + d[0])).astype(float)
    s1, s2 = init(one), init(two)
    for _ in range(25):
        # the same items in the same order: the rules must agree on them
        pick1, pick2 = next_items(s1, "score"), next_items(s2, "score")
        assert pick1[0] == pick2[0]
        assert np.argmax(fisher_information(s1)) == np.argmax(fisher_information(s2))
        s1, s2 = update(s1, pick1, y[pick1]), update(s2, pick1, y[pick1])
    mean1, sd1 = s1.theta_moments()
    mean2, sd2 = s2.theta_moments()
    assert mean2[0] == pytest.approx(mean1, abs=0.01)
    assert sd2[0] == pytest.approx(sd1, rel=0.03)
    assert sd2[1] == pytest.approx(1.0, abs=1e-6)  # nothing was learnt about θ₂
    assert score_moments(s2)[0] == pytest.approx(score_moments(s1)[0], abs=1e-3)
    np.testing.assert_allclose(score_variance_reduction(s2), score_variance_reduction(s1),
                               rtol=0.05, atol=1e-7)


def test_the_d_rule_turns_to_the_dimension_still_unmeasured():
    """After many answers to items of dimension 1, D-optimality asks about dimension 2."""
    rng = np.random.default_rng(5)
    bank = _two_dim_bank(rng)
    first = np.arange(60)                                        # dimension-1 items
    state = update(init(bank), first, (rng.random(60) < 0.5).astype(float))
    _, sd = state.theta_moments()
    assert sd[0] < 0.35 and sd[1] > 0.9
    best = state.unasked[np.argmax(fisher_information(state))]
    assert best >= bank.n_items // 2                             # a dimension-2 item


def test_theta_sd_stops_on_every_axis():
    rng = np.random.default_rng(6)
    bank = _two_dim_bank(rng)
    state = update(init(bank), np.arange(60), (rng.random(60) < 0.5).astype(float))
    assert not theta_sd(0.5)(state)                             # θ₂ is still wide
    state = update(state, np.arange(100, 160), (rng.random(60) < 0.5).astype(float))
    assert theta_sd(0.5)(state)


def test_bank_shapes_are_checked():
    with pytest.raises(ValidationError, match=r"a \(2, 3, 2\) must be"):
        ItemBank(items=["x", "y"], a=np.ones((2, 3, 2)), d=np.zeros((2, 2)))
    bank = ItemBank(items=["x", "y"], a=np.ones((1, 2, 2)), d=np.zeros((1, 2)))
    assert bank.dims == 2 and bank.probs is None
    with pytest.raises(ValidationError, match="abilities must have 2 coordinates"):
        bank.probs_at(np.zeros(3))


def test_a_two_dimensional_bank_predicts_two_dimensional_models_better():
    """End to end: cat-score on a 2-D fit of the source models beats the 1-D fit on data
    simulated from two independent abilities (its items split between them)."""
    from coreval.base import FitCache
    from coreval.data.matrix import ScoreMatrix
    from coreval.irt.source_fit import BAYES_FIT
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    rng = np.random.default_rng(1)
    n_models, n_items = 160, 80
    a = np.abs(rng.normal(1.5, 0.3, (n_items, 2)))
    a[: n_items // 2, 1] = 0.0
    a[n_items // 2:, 0] = 0.0
    theta = rng.normal(size=(n_models, 2))
    y = (rng.random((n_models, n_items)) < expit(theta @ a.T + rng.normal(0, 1, n_items)))
    matrix = ScoreMatrix(y.astype(float))
    source, target = matrix.take(np.arange(80)), matrix.take(np.arange(80, n_models))
    truth = target.summary_scores()
    rmse = {}
    for dims in (1, 2):
        fitted = fit_method(get_method("cat-score"), source, 12, seed=0, cache=FitCache(),
                            irt=BAYES_FIT.replace(dims=dims), tau=0.0)
        assert fitted.predictor.bank_.dims == dims
        pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
        rmse[dims] = float(np.sqrt(np.mean((pred.mean - truth) ** 2)))
        if dims == 2:
            inside = (truth >= pred.lower) & (truth <= pred.upper)
            assert inside.mean() >= 0.8
    assert rmse[2] < 0.85 * rmse[1], rmse


def test_cli_adapt_replays_answers_through_a_two_dimensional_bank(tmp_path):
    import json

    import pandas as pd
    from typer.testing import CliRunner

    from coreval.cli import app
    from coreval.data.matrix import ScoreMatrix
    from coreval.data.npz import write_npz

    rng = np.random.default_rng(8)
    a = np.abs(rng.normal(1.5, 0.3, (40, 2)))
    a[:20, 1] = 0.0
    a[20:, 0] = 0.0
    y = (rng.random((61, 40)) < expit(rng.normal(size=(61, 2)) @ a.T)).astype(float)
    write_npz(ScoreMatrix(y[:60]), tmp_path / "src.npz")
    items = ScoreMatrix(y[:60]).items
    pd.DataFrame({"item": items, "score": y[60]}).to_csv(tmp_path / "rec.csv", index=False)
    runner = CliRunner()
    args = ["adapt", str(tmp_path / "src.npz"), "--responses", str(tmp_path / "rec.csv"),
            "--fit-method", "map", "--num-steps", "300", "--width", "0", "--max-items", "12",
            "--tau", "0", "--rule", "fisher"]
    out = runner.invoke(app, [*args, "--dims", "2"])
    assert out.exit_code == 0, out.output
    chosen = runner.invoke(app, [*args, "--choose-dims"])
    assert chosen.exit_code != 0 and "choose_dims needs tau='cv'" in chosen.output, chosen.output
    result = json.loads(out.output)
    assert result["items_used"] == 12 and result["lower"] <= result["score"] <= result["upper"]
    assert len(set(result["items"])) == 12
    # D-optimality spreads the items over both dimensions' halves of the bank
    positions = [list(items).index(i) for i in result["items"]]
    assert 0 < sum(p < 20 for p in positions) < 12


def _two_ability_matrix(rng, n_models, n_items, dims=2):
    """Items split into ``dims`` blocks, each loading on one of ``dims`` abilities."""
    from coreval.data.matrix import ScoreMatrix

    block = np.repeat(np.eye(dims), -(-n_items // dims), axis=0)[:n_items]
    a = np.abs(rng.normal(1.5, 0.3, (n_items, dims))) * block
    theta = rng.normal(size=(n_models, dims))
    y = rng.random((n_models, n_items)) < expit(theta @ a.T + rng.normal(0, 1, n_items))
    return ScoreMatrix(y.astype(float))


@pytest.mark.parametrize("k, width", [(10, None), (20, 0.35)])
def test_choose_dims_takes_the_two_dimensional_bank_on_two_dimensional_data(k, width):
    from coreval.base import FitCache
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    source = _two_ability_matrix(np.random.default_rng(2), 70, 40)
    fitted = fit_method(get_method("cat-score"), source, k, seed=0, cache=FitCache(),
                        fit_method="map", num_steps=300, tau_folds=3, choose_dims=True,
                        width=width)
    predictor = fitted.predictor
    crit = predictor.dims_criterion_
    assert set(crit) == {1, 2} and crit[2] < crit[1], crit
    assert (predictor.dims_width_ is None) == (width is None)
    assert predictor.irt_spec_.dims == 2 and predictor.bank_.dims == 2
    if width is None:  # the criterion is the held-out tests' RMSE, of the order of the error
        assert 0.0 < crit[2] < 0.2
    else:              # the mean items of the replayed stops, within the budget
        assert 1.0 <= crit[2] <= k


def test_choose_dims_up_to_three_takes_three_on_three_ability_data():
    """``max_dims=3``: the held-out tests (width stop) need fewest items with the 3-D bank."""
    from coreval.base import FitCache
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    source = _two_ability_matrix(np.random.default_rng(4), 90, 45, dims=3)
    fitted = fit_method(get_method("cat-score"), source, 25, seed=0, cache=FitCache(),
                        fit_method="map", num_steps=300, tau_folds=3, choose_dims=True,
                        max_dims=3, width=0.3)
    predictor = fitted.predictor
    crit = predictor.dims_criterion_
    assert set(crit) == {1, 2, 3} and crit[3] < min(crit[1], crit[2]), crit
    assert predictor.irt_spec_.dims == 3 and predictor.bank_.dims == 3


@pytest.mark.parametrize("max_dims", [1, 2.5, True])
def test_max_dims_is_checked(max_dims):
    from coreval.base import FitCache
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    source = _two_ability_matrix(np.random.default_rng(3), 30, 20)
    with pytest.raises(ValidationError, match="max_dims must be an integer of at least 2"):
        fit_method(get_method("cat-score"), source, 5, seed=0, cache=FitCache(),
                   fit_method="map", num_steps=100, choose_dims=True, max_dims=max_dims)


def test_choose_dims_breaks_a_tie_at_the_budget_by_the_narrower_interval():
    from coreval.base import FitCache
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    # a width no test reaches: every held-out test of both banks runs to the budget, so
    # the items tie and the mean width at the stop decides
    source = _two_ability_matrix(np.random.default_rng(2), 70, 40)
    fitted = fit_method(get_method("cat-score"), source, 12, seed=0, cache=FitCache(),
                        fit_method="map", num_steps=300, tau_folds=3, choose_dims=True,
                        width=1e-3)
    predictor = fitted.predictor
    assert predictor.dims_criterion_ == {1: 12.0, 2: 12.0}
    widths = predictor.dims_width_
    assert set(widths) == {1, 2} and 0.0 < widths[2] < widths[1] < 1.0, widths
    assert predictor.irt_spec_.dims == 2


def test_choose_dims_needs_the_misfit_folds():
    from coreval.base import FitCache
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    source = _two_ability_matrix(np.random.default_rng(3), 30, 20)
    with pytest.raises(ValidationError, match="choose_dims needs tau='cv'"):
        fit_method(get_method("cat-score"), source, 5, seed=0, cache=FitCache(),
                   fit_method="map", num_steps=100, tau=0.0, choose_dims=True)
