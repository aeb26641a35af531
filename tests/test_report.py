"""Report figures, calibration helpers, psychometric diagnostics and harness plots."""

from __future__ import annotations

import io

import arviz as az
import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit
from scipy.stats import norm

import coreval
from coreval.base import Prediction
from coreval.data import simulate
from coreval.errors import ValidationError
from coreval.irt import IRTFit
from coreval.report import (
    calibration_runs,
    coreset_difficulty,
    coverage_table,
    plot_calibration,
    plot_coverage,
    plot_difficulty,
    plot_metric_vs_sources,
    plot_time,
    plot_width_vs_budget,
    predict_levels,
    recommend,
    summarize_calibration,
    width_vs_budget,
)
from coreval.report import irt_plots as ip
from coreval.report.calibration import intervals_from_draws, intervals_from_normal


def _png(ax) -> bytes:
    buf = io.BytesIO()
    ax.figure.savefig(buf, format="png")
    plt.close(ax.figure)
    data = buf.getvalue()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 2000
    return data


# ----------------------------------------------------------------------------- calibration
def test_intervals_from_draws_match_normal_quantiles():
    rng = np.random.default_rng(0)
    draws = rng.normal(0.5, 0.1, size=(40000, 3))
    base = Prediction(mean=np.full(3, 0.5), lower=np.zeros(3), upper=np.ones(3),
                      interval="posterior", draws=draws)
    for level in (0.5, 0.8, 0.95):
        p = intervals_from_draws(base, level)
        z = norm.ppf(0.5 + level / 2)
        np.testing.assert_allclose(p.lower, 0.5 - 0.1 * z, atol=4e-3)
        np.testing.assert_allclose(p.upper, 0.5 + 0.1 * z, atol=4e-3)
        assert p.level == level


def test_intervals_from_normal_closed_form():
    sd = np.array([0.1, 0.02])
    z90 = norm.ppf(0.95)
    base = Prediction(mean=np.array([0.5, 0.3]), lower=np.array([0.5, 0.3]) - z90 * sd,
                      upper=np.array([0.5, 0.3]) + z90 * sd, level=0.9)
    p = intervals_from_normal(base, 0.5)
    np.testing.assert_allclose(p.upper - p.mean, norm.ppf(0.75) * sd)
    assert p.interval == "normal-approx"
    with pytest.raises(ValidationError):
        intervals_from_normal(base, 1.2)


def test_predict_levels_reruns_predictor_and_restores_level():
    sim = simulate(80, 60, seed=3)
    m = sim.matrix
    src, tgt = m.take(np.arange(60)), m.take(np.arange(60, 80))
    fitted = coreval.select(src, "random+", 15, seed=0)
    pred, cs = fitted.predictor, fitted.coreset
    x = tgt.values[:, cs.indices]
    out = predict_levels(fitted, x, (0.5, 0.8, 0.9))
    assert pred.level == 0.9
    base = pred.predict(x)
    np.testing.assert_allclose(out[0.9].lower, base.lower)
    np.testing.assert_allclose(out[0.5].mean, base.mean)
    # nested intervals: higher level, wider
    assert np.all(out[0.5].width <= out[0.8].width + 1e-12)
    assert np.all(out[0.8].width <= out[0.9].width + 1e-12)


def test_predict_levels_keeps_cv_calibration():
    """calibration="cv" intervals are the ones reported at every level (not the predictor's)."""
    sim = simulate(80, 60, seed=3)
    m = sim.matrix
    src, tgt = m.take(np.arange(60)), m.take(np.arange(60, 80))
    fitted = coreval.select(src, "random+", 15, seed=0, calibration="cv", folds=5)
    x = tgt.values[:, fitted.coreset.indices]
    out = predict_levels(fitted, x, (0.5, 0.9))
    assert {p.interval for p in out.values()} == {"cv-residual"}
    np.testing.assert_allclose(out[0.9].lower, fitted.predict_array(x).lower)
    assert np.all(out[0.5].width <= out[0.9].width + 1e-12)


def test_coverage_table_counts():
    truth = np.array([0.1, 0.2, 0.3, 0.4])
    shift = np.array([0.0, 0.0, 0.1, 0.1])      # the last two intervals miss the truth
    preds = {0.5: Prediction(mean=truth, lower=truth - 0.01 + shift, upper=truth + 0.01 + shift,
                             level=0.5),
             0.9: Prediction(mean=truth, lower=truth - 0.01, upper=truth + 0.01, level=0.9)}
    table = coverage_table(truth, preds)
    assert table.loc[table.level == 0.9, "coverage"].item() == 1.0
    assert table.loc[table.level == 0.5, "coverage"].item() == 0.5
    with pytest.raises(ValidationError):
        coverage_table(truth[:2], preds)


def test_calibration_runs_jackknife_plus_covers_on_simulated_data():
    m = simulate(160, 120, seed=5).matrix
    runs = calibration_runs(m, ["random+"], 20, seeds=(0, 1), n_source=80, show_progress=False)
    table = summarize_calibration(runs)
    assert set(table["level"]) == {0.5, 0.8, 0.9, 0.95}
    assert table["n"].iloc[0] == 160
    cov = table.set_index("level")["coverage"]
    # jackknife+ guarantees >= 1 - 2 alpha marginally (Barber et al. 2021, Thm 1)
    assert cov[0.9] >= 0.8 and cov[0.95] >= 0.9
    assert cov.is_monotonic_increasing
    _png(plot_calibration(table))


def test_calibration_runs_go_through_the_harness_and_honour_calibration(tmp_path):
    from coreval import select
    from coreval.data.splits import make_split
    from coreval.errors import ValidationError

    m = simulate(60, 80, seed=7).matrix
    options = {"random+": {"calibration": "cv"}}
    runs = calibration_runs(m, ["random+"], 10, seeds=(1,), n_source=40, levels=(0.5, 0.9),
                            method_options=options, out=tmp_path / "cal.parquet",
                            show_progress=False)
    # the same numbers as fitting and predicting the split by hand, with calibration="cv"
    sp = make_split(m, "random", seed=1, n_source=40)
    source, target = m.take(sp.source), m.take(sp.target)
    fitted = select(source, "random+", 10, seed=1, calibration="cv")
    expected = coverage_table(target.summary_scores(), predict_levels(
        fitted, target.values[:, fitted.coreset.indices], (0.5, 0.9)))
    assert np.allclose(runs["coverage"], expected["coverage"])
    assert np.allclose(runs["width"], expected["width"])
    plain = calibration_runs(m, ["random+"], 10, seeds=(1,), n_source=40, levels=(0.5, 0.9),
                             show_progress=False)
    assert not np.allclose(plain["width"], runs["width"])  # "cv" is not dropped
    assert (tmp_path / "cal.parquet").exists()  # the harness's results, resumable
    with pytest.raises(ValidationError, match="calibration run"):
        calibration_runs(m, ["random+"], 500, seeds=(1,), n_source=40, show_progress=False)


def test_width_vs_budget_shrinks_and_plots():
    m = simulate(100, 200, seed=6).matrix
    src, tgt = m.take(np.arange(70)), m.take(np.arange(70, 100))
    table = width_vs_budget(src, tgt, "random+", [5, 80], show_progress=False)
    assert list(table["k"]) == [5, 80]
    assert table["width"].iloc[1] < table["width"].iloc[0]
    ax = plot_width_vs_budget(table, target_width=0.1)
    assert ax.get_xlabel() == "coreset size k"
    _png(ax)


# ----------------------------------------------------------------------------- psychometrics
def _fake_fit(sim, n_draws: int = 40, noise: float = 0.02, seed: int = 0) -> IRTFit:
    """An IRTFit whose posterior is the true parameters plus small noise (no MCMC needed)."""
    rng = np.random.default_rng(seed)
    a, d, theta = sim.params["a"], sim.params["d"], sim.params["theta"]
    post = {
        "a": a[None, None] + noise * rng.standard_normal((1, n_draws, *a.shape)),
        "d": d[None, None] + noise * rng.standard_normal((1, n_draws, *d.shape)),
        "theta": theta[None, None] + noise * rng.standard_normal((1, n_draws, *theta.shape)),
    }
    m = sim.matrix
    idata = az.from_dict(posterior=post,
                         coords={"item": m.items.astype(str), "model": m.models.astype(str),
                                 "dim": [0]},
                         dims={"a": ["item", "dim"], "d": ["item"], "theta": ["model", "dim"]})
    return IRTFit(model="2pl", method="svi", dims=1, priors="weak", idata=idata, card={})


@pytest.fixture(scope="module")
def corrupted():
    """A 1-D 2PL simulation with one item made constant and one item's key flipped."""
    sim = simulate(300, 40, seed=11, log_a_mean=0.3)
    y = sim.matrix.values.copy()
    y[:, 0] = 1.0                  # near-constant
    y[:, 1] = 1.0 - y[:, 1]        # label error: better models fail it
    return sim, sim.matrix.with_values(y)


def test_item_diagnostics_flags_constant_and_flipped_items(corrupted):
    sim, matrix = corrupted
    table = ip.item_diagnostics(_fake_fit(sim), matrix, ppc_draws=40)
    np.testing.assert_allclose(table["a"], sim.params["a"][:, 0], atol=0.02)
    np.testing.assert_allclose(table["b"], sim.params["b"], rtol=0.1, atol=0.1)
    np.testing.assert_allclose(table["p_value"], matrix.values.mean(0))
    assert table.loc[0, "near_constant"] and table.loc[1, "negative"] and table.loc[1, "misfit"]
    ok = table.iloc[2:]
    assert not ok["negative"].any()
    assert ok["misfit"].mean() < 0.2 and ok["near_constant"].mean() < 0.2
    # maximum 2PL information a^2/4 at theta = b
    assert np.allclose(table["max_info"], table["a"] ** 2 / 4, rtol=0.05)
    _png(ip.plot_item_map(table))


def test_diagnostics_refuse_a_fit_with_guessing(corrupted):
    """Their 2PL curve is not a 3PL's: an error, not a table flagging every item."""
    sim, matrix = corrupted
    fit = _fake_fit(sim)
    post = {name: fit.idata.posterior[name].values for name in ("a", "d", "theta")}
    post["c"] = np.full((1, 40, matrix.n_items), 0.2)
    idata = az.from_dict(posterior=post, coords={
        "item": matrix.items.astype(str), "model": matrix.models.astype(str), "dim": [0]},
        dims={"a": ["item", "dim"], "d": ["item"], "c": ["item"], "theta": ["model", "dim"]})
    three = IRTFit(model="3pl", method="svi", dims=1, priors="weak", idata=idata, card={})
    with pytest.raises(ValidationError, match="guessing parameter"):
        ip.item_diagnostics(three, matrix, ppc_draws=5)
    with pytest.raises(ValidationError, match="guessing parameter"):
        ip.posterior_predictive_scores(three, n_draws=5)
    # a fit of continuous scores: replicating 0/1 answers from it would be meaningless
    beta = IRTFit(model="beta", method="svi", dims=1, priors="weak", idata=_fake_fit(sim).idata,
                  card={})
    with pytest.raises(ValidationError, match="continuous scores"):
        ip.posterior_predictive_scores(beta, n_draws=5)


def test_person_fit_is_standard_normal_under_the_model_and_flags_aberrant():
    rng = np.random.default_rng(1)
    theta = rng.standard_normal(400)
    a, d = np.full(200, 1.5), np.linspace(-3, 3, 200)
    p = expit(np.outer(theta, a) + d)
    y = (rng.random(p.shape) < p).astype(float)
    lz = ip.person_fit(y, p)
    assert abs(lz.mean()) < 0.2 and abs(lz.std() - 1) < 0.2
    aberrant = (d < 0).astype(float)[None] * np.ones((1, 200))   # solves hard items only
    assert ip.person_fit(aberrant, p[:1])[0] < -3


def test_posterior_predictive_and_spectrum(corrupted):
    sim, _ = corrupted
    fit = _fake_fit(sim)
    scores, pvals = ip.posterior_predictive_scores(fit, n_draws=50, seed=0)
    assert scores.shape == (50, 300) and pvals.shape == (50, 40)
    np.testing.assert_allclose(pvals.mean(0), sim.params["p"].mean(0), atol=0.03)
    y = sim.matrix.values
    eig = ip.correlation_spectrum(y)
    keep = y.std(0) > 0
    expected = np.sort(np.linalg.eigvalsh(np.corrcoef(y[:, keep].T)))[::-1]
    np.testing.assert_allclose(eig, expected, atol=1e-8)
    assert eig[0] > 3 * eig[1]            # one dominant dimension
    q3 = ip.residual_correlations(y, sim.params["p"])
    assert np.isnan(np.diag(q3)).all() and np.allclose(q3, q3.T, equal_nan=True)
    assert np.nanmax(np.abs(q3)) < 0.35   # local independence holds for the true p
    _png(ip.plot_eigen_spectrum(eig, reference=eig[::-1]))
    ax = ip.plot_ppc_scores(y.mean(1), scores)
    assert ax.get_xlabel() == "model score"
    _png(ax)


def test_irt_curve_plots_render():
    a, d = np.array([1.0, 2.0]), np.array([0.0, -1.0])
    ax = ip.plot_item_curves(a, d, labels=["x", "y"])
    assert ax.get_ylabel() == "P(correct)" and len(ax.lines) == 2
    np.testing.assert_allclose(ax.lines[0].get_ydata()[100], 0.5)   # theta = 0, d = 0
    _png(ax)
    ax = ip.plot_information(a, d, abilities=np.array([-1.0, 0.0, 1.0]), items=[0, 1])
    assert ax.get_ylabel() == "Fisher information"
    _png(ax)
    ax = ip.plot_standard_error(a, d)
    theta = ax.lines[0].get_xdata()
    info = a[0] ** 2 * expit(theta) * expit(-theta) + a[1] ** 2 * expit(2 * theta - 1) * expit(
        1 - 2 * theta)
    np.testing.assert_allclose(ax.lines[0].get_ydata(), 1 / np.sqrt(info), rtol=1e-6)
    _png(ax)


# ----------------------------------------------------------------------------- harness plots
def _results() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for method, err in (("a", 0.02), ("b", 0.05)):
        for n_source in (20, 40):
            for k in (10, 20):
                for seed in (0, 1):
                    rows.append({"dataset": "d", "method": method, "n_source": n_source, "k": k,
                                 "seed": seed, "rmse": err * 20 / n_source + rng.uniform(0, 1e-3),
                                 "kendall": 0.8, "coverage90": 0.9 if method == "a" else 0.5,
                                 "seconds_select": 0.1, "seconds_fit": 0.2,
                                 "seconds_predict": 0.01})
    return pd.DataFrame(rows)


def test_harness_plots_render_with_labels():
    res = _results()
    ax = plot_metric_vs_sources(res)
    assert ax.get_xlabel() == "number of source models" and ax.get_ylabel() == "rmse (pp)"
    _png(ax)
    ax = plot_time(res)
    assert ax.get_yscale() == "log"
    _png(ax)
    _png(plot_coverage(res))
    with pytest.raises(ValidationError):
        plot_time(res.drop(columns="seconds_fit"))


def test_recommend_picks_lowest_error_with_coverage_floor():
    res = _results()
    res["regime"] = np.where(res.n_source == 20, "few", "many")
    rec = recommend(res)
    assert list(rec["best"]) == ["a", "a"] and list(rec["runner_up"]) == ["b", "b"]
    res.loc[res.method == "a", "rmse"] += 1.0
    assert list(recommend(res)["best"]) == ["b", "b"]
    assert list(recommend(res, min_coverage=0.8)["best"]) == ["a", "a"]


def test_coreset_difficulty_is_one_minus_source_mean():
    m = simulate(30, 20, seed=2).matrix
    rows = np.arange(10)
    table = coreset_difficulty(m, {"x": [list(m.items[:3]), list(m.items[5:7])]},
                               source_rows=rows)
    chosen = table[table.method == "x"]
    expected = 1 - m.values[:10][:, [0, 1, 2, 5, 6]].mean(0)
    np.testing.assert_allclose(chosen["difficulty"], expected)
    assert (table.method == "all items").sum() == 20
    ax = plot_difficulty(table)
    assert ax.get_ylabel() == "density"
    _png(ax)
    with pytest.raises(ValidationError):
        coreset_difficulty(m, {"x": [["nope"]]})


# ----------------------------------------------------------------------------- NaN and ids
def _interval(mean, half=0.1) -> Prediction:
    mean = np.asarray(mean, float)
    return Prediction(mean=mean, lower=mean - half, upper=mean + half, level=0.9,
                      interval="test")


def test_coverage_table_and_plot_leave_out_nan_as_the_harness_does():
    from coreval.harness.metrics import coverage, mean_width
    from coreval.report.plots import plot_true_vs_predicted

    truth = np.array([0.3, 0.5, 0.7, 0.9])
    pred = _interval([0.3, 0.5, np.nan, 0.9])
    row = coverage_table(truth, {0.9: pred}).iloc[0]
    assert row.coverage == coverage(truth, pred.lower, pred.upper) == 1.0
    assert row.width == pytest.approx(mean_width(pred.lower, pred.upper)) == pytest.approx(0.2)
    assert row.n == 3
    ax = plot_true_vs_predicted(truth, pred)
    assert "coverage 100%" in ax.get_title()
    _png(ax)
    # a NaN truth is left out too
    row = coverage_table(np.array([0.3, np.nan, 0.7, 0.9]), {0.9: _interval(truth)}).iloc[0]
    assert row.coverage == 1.0 and row.n == 3


def test_width_vs_budget_reads_target_items_by_id():
    m = simulate(100, 200, seed=6).matrix
    source, target = m.take(np.arange(70)), m.take(np.arange(70, 100))
    perm = np.random.default_rng(0).permutation(m.n_items)
    ok = width_vs_budget(source, target, "random+", [20], show_progress=False)
    permuted = width_vs_budget(source, target.subset(items=m.items[perm]), "random+", [20],
                               show_progress=False)
    pd.testing.assert_frame_equal(ok, permuted)
    with pytest.raises(ValidationError, match="source's items"):
        width_vs_budget(source, target.subset(items=m.items[:150]), "random+", [20],
                        show_progress=False)


def test_harness_plots_leave_out_failed_runs_and_mixed_settings():
    from coreval.report.harness_plots import mean_and_seed_sd

    base = {"dataset": "d", "method": "a", "n_source": 20, "k": 10, "seconds_predict": 1.0}
    runs = pd.DataFrame([{**base, "seed": 0, "seconds_select": 5.0, "seconds_fit": 5.0,
                          "error": None},
                         {**base, "seed": 1, "seconds_select": np.nan, "seconds_fit": np.nan,
                          "error": "boom"},
                         {**base, "seed": 2, "seconds_select": np.nan, "seconds_fit": np.nan,
                          "error": "boom"}])
    ax = plot_time(runs)
    assert ax.lines[0].get_ydata().tolist() == [11.0]  # not 0: the failed runs are left out
    plt.close(ax.figure)
    # two budgets at one source size: the error bar is the seed spread within each (0)
    mixed = pd.DataFrame([{"method": "a", "n_source": 20, "k": k, "seed": s, "rmse": r}
                          for k, r in ((5, 0.10), (100, 0.02)) for s in (0, 1)])
    g = mean_and_seed_sd(mixed, "n_source", "rmse")
    assert g.loc[20, "mean"] == pytest.approx(0.06) and g.loc[20, "sd"] == 0.0
    noisy = mixed.assign(rmse=mixed.rmse + np.where(mixed.seed == 0, 0.01, -0.01))
    assert mean_and_seed_sd(noisy, "n_source", "rmse").loc[20, "sd"] == pytest.approx(
        np.std([0.01, -0.01], ddof=1))
    with pytest.raises(ValidationError, match="coverage90"):
        recommend(_results().drop(columns="coverage90").assign(regime="r"), min_coverage=0.9)


def test_irt_plots_check_ids_labels_and_nan():
    from coreval.report.plots import plot_true_vs_predicted_grid

    m = simulate(150, 30, seed=1).matrix
    fit = coreval.irt.fit("2pl", m, method="mml")
    swapped = m.subset(items=m.items[np.r_[1, 0, 2:30]])
    with pytest.raises(ValidationError, match="items are not the fit's"):
        ip.item_diagnostics(fit, swapped, ppc_draws=5)
    ax = ip.plot_item_curves([1.0, 1.0, 1.0], [-1.0, 0.0, 1.0], items=[2],
                             labels=["q0", "q1", "q2"])
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["q2"]
    plt.close(ax.figure)
    with pytest.raises(ValidationError, match="labels"):
        ip.plot_item_curves([1.0, 1.0, 1.0], [-1.0, 0.0, 1.0], items=[0, 2], labels=["a"])
    with pytest.raises(ValidationError, match="NaN"):
        ip.plot_ppc_scores(np.array([0.5, np.nan]), np.full((3, 2), 0.5))
    with pytest.raises(ValidationError, match="at least one"):
        plot_true_vs_predicted_grid(np.zeros(2), {})
