"""SimBA (Subramani et al. 2025): normalisation, stalk, similarities, prowl, pounce, methods."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats
from scipy.spatial import distance

from coreval.data.matrix import ScoreMatrix
from coreval.errors import ValidationError
from coreval.methods import available_methods, get_method
from coreval.prediction.simba import SimbaPredictor
from coreval.selection.simba_selector import SimbaSelector
from coreval.simba import (
    SimbaNormaliser,
    classify_pair,
    coverage,
    greedy_coverage_order,
    make_regressor,
    mean_win_rate,
    normalise_scores,
    pounce_mse,
    prowl,
    random_coverage_curves,
    scauc,
    similarity,
    similarity_matrix,
    size_at,
    stalk,
    stalk_summary,
)
from coreval.simba.prowl import proxy_coverage_order

MEASURES = ["pearson", "spearman", "kendall", "cosine", "manhattan", "euclidean", "minkowski",
            "wasserstein", "jensenshannon"]


def factor_matrix(rng, n_models=60, n_cols=12, noise=0.0, missing=0.0):
    """Scores in (0, 1) driven by two latent abilities (a known low-rank truth)."""
    theta = rng.normal(size=(n_models, 2))
    load = rng.normal(size=(2, n_cols))
    y = 0.5 + 0.1 * theta @ load / 2 + noise * rng.normal(size=(n_models, n_cols))
    y = np.clip(y, 0.01, 0.99)
    if missing:
        y[rng.uniform(size=y.shape) < missing] = np.nan
    return y


# ----------------------------------------------------------------------------- normalise
def test_normalisation_chance_and_native_columns():
    y = np.array([[0.25, 10.0, 0.9], [0.625, 30.0, 0.5], [0.1, 20.0, np.nan]])
    norm = SimbaNormaliser(chance={"a": 0.25}).fit(y, ["a", "b", "c"])
    z = norm.transform(y)
    # proportion column with chance 0.25: max(0, (x - .25) / .75)
    np.testing.assert_allclose(z[:, 0], [0.0, 0.5, 0.0])
    # native column (outside [0, 1]) is min-max scaled on the source
    np.testing.assert_allclose(z[:, 1], [0.0, 1.0, 0.5])
    np.testing.assert_allclose(z[:2, 2], [0.9, 0.5])
    assert np.isnan(z[2, 2])
    assert norm.native_.tolist() == [False, True, False]
    # unclipped transform inverts exactly
    raw = np.array([[0.05, 45.0, 1.2]])
    np.testing.assert_allclose(norm.inverse_transform(norm.transform(raw, clip=False)), raw)
    np.testing.assert_allclose(normalise_scores(y, chance=[0.25, 10.0, 0]), z)
    # an explicit native chance of 20 is the midpoint of the 10..30 range: (u - .5) / .5
    np.testing.assert_allclose(normalise_scores(y, chance=[0, 20.0, 0])[:, 1], [0.0, 1.0, 0.0])


def test_normalisation_errors():
    y = np.array([[0.2, 0.3], [0.4, 0.6]])
    with pytest.raises(ValidationError, match="unknown columns"):
        SimbaNormaliser(chance={"zzz": 0.1}).fit(y, ["a", "b"])
    with pytest.raises(ValidationError, match="3 chance levels for 2 columns"):
        SimbaNormaliser(chance=[0.1, 0.1, 0.1]).fit(y, ["a", "b"])
    with pytest.raises(ValidationError, match="at or above the top of the scale"):
        SimbaNormaliser(chance=1.0).fit(y)


# ----------------------------------------------------------------------------- stalk
@pytest.mark.parametrize("fn, label", [
    (lambda x: 0.3 + 0.5 * x, "linear"),
    (lambda x: 2.0 * x ** 1.7, "power-law"),
    (lambda x: 0.1 * np.exp(2.5 * x), "exponential"),
    (lambda x: 0.2 + 0.1 * np.log(x), "logarithmic"),
])
def test_stalk_classifies_exact_relations(fn, label):
    x = np.random.default_rng(0).uniform(0.05, 1.0, 40)
    got, r2, r2_all = classify_pair(x, fn(x))
    assert got == label
    assert r2 == pytest.approx(1.0, abs=1e-8)
    assert set(r2_all) == {"linear", "logarithmic", "exponential", "power-law", "quadratic",
                           "cubic"}


def test_stalk_no_relation_and_threshold():
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=50), rng.uniform(size=50)
    assert classify_pair(x, y)[0] == "none"
    assert classify_pair(x, np.full(50, 0.3))[0] == "constant"
    # R^2 from scipy's linregress for a noisy linear pair, and the 0.5 threshold on it
    y = x + rng.normal(0, 0.25, 50)
    _label, _r2, r2_all = classify_pair(x, y, threshold=0.0)
    assert r2_all["linear"] == pytest.approx(stats.linregress(x, y).rvalue ** 2)


def test_stalk_tables_on_rows_and_columns_with_missing():
    rng = np.random.default_rng(2)
    x = rng.uniform(0.1, 1, 30)
    z = np.column_stack([x, 0.2 + 0.6 * x, x ** 2.5, rng.uniform(size=30)])
    z[:4, 1] = np.nan
    table = stalk(z, ids=list("abcd"))
    assert len(table) == 6
    row = table[(table.a == "a") & (table.b == "b")].iloc[0]
    assert row["label"] == "linear" and row["n"] == 26
    assert table[(table.a == "a") & (table.b == "c")].iloc[0]["label"] == "power-law"
    summary = stalk_summary(table)
    assert summary["n_pairs"] == 6
    assert summary.drop("n_pairs").sum() == pytest.approx(1.0)
    kinds = stalk_summary(table, by="kind")
    assert kinds["power-law"] >= 1 / 6 and kinds.drop("n_pairs").sum() == pytest.approx(1.0)
    rows = stalk(z[:6], axis="rows", min_overlap=3)
    assert len(rows) == 15
    with pytest.raises(ValidationError):
        stalk(z, axis="diagonal")


# ----------------------------------------------------------------------------- similarity
def test_similarities_match_scipy():
    rng = np.random.default_rng(3)
    a, b = rng.uniform(size=25), rng.uniform(size=25)
    n = len(a)
    expected = {
        "pearson": stats.pearsonr(a, b)[0],
        "spearman": stats.spearmanr(a, b)[0],
        "kendall": stats.kendalltau(a, b)[0],
        "cosine": 1 - distance.cosine(a, b),
        "manhattan": 1 - np.abs(a - b).mean(),
        "euclidean": 1 - np.sqrt(((a - b) ** 2).mean()),
        "minkowski": 1 - (np.abs(a - b) ** 3).mean() ** (1 / 3),
        "wasserstein": 1 - stats.wasserstein_distance(a, b),
        "jensenshannon": 1 - distance.jensenshannon(a / a.sum(), b / b.sum(), base=2),
    }
    for m in MEASURES:
        assert similarity(a, b, m) == pytest.approx(expected[m], rel=1e-10), m
        assert similarity(a, a, m) == pytest.approx(1.0, abs=1e-7), m
    # pairwise-complete: NaN entries drop the model from this pair only
    a2 = a.copy()
    a2[[0, 5]] = np.nan
    keep = np.setdiff1d(np.arange(n), [0, 5])
    assert similarity(a2, b, "spearman") == pytest.approx(stats.spearmanr(a[keep], b[keep])[0])
    assert np.isnan(similarity(a2[:3], b[:3], "pearson", min_overlap=3))


def test_similarity_matrix_symmetric_and_unknown():
    z = factor_matrix(np.random.default_rng(4), n_cols=5, missing=0.2)
    s = similarity_matrix(z, "kendall")
    np.testing.assert_allclose(s, s.T)
    np.testing.assert_allclose(np.diag(s), 1.0)
    with pytest.raises(ValidationError, match="unknown similarity"):
        similarity_matrix(z, "hamming")


# ----------------------------------------------------------------------------- prowl
def test_mean_win_rate_closed_form_with_missing():
    z = np.array([[1.0, 0.5], [0.5, 1.0], [0.0, 0.0]])
    np.testing.assert_allclose(mean_win_rate(z), [0.75, 0.75, 0.0])
    z[0, 1] = np.nan
    # model 0: beats 1 on col 0 (only common col) and beats 2 on col 0 -> 1
    # model 1: loses to 0 (0/1), beats 2 on both (2/2) -> 0.5
    np.testing.assert_allclose(mean_win_rate(z), [1.0, 0.5, 0.0])
    np.testing.assert_allclose(mean_win_rate(z, [1]), [0.5, 1.0, 0.0])  # model 0: no pair


def test_identical_columns_give_full_coverage():
    rng = np.random.default_rng(5)
    col = rng.uniform(size=40)
    z = np.tile(col[:, None], (1, 6))
    assert coverage(z, [2]) == pytest.approx(1.0)
    for measure in ("pearson", "wasserstein"):
        res = prowl(z, measure)
        np.testing.assert_allclose(res.coverage, 1.0)
        assert res.size_at_target == 1 and res.scauc == pytest.approx(1.0)
        assert res.n_gamma == 1


def test_coverage_full_set_and_baselines():
    z = factor_matrix(np.random.default_rng(6), n_cols=8, noise=0.05, missing=0.15)
    assert coverage(z, np.arange(8)) == pytest.approx(1.0)
    order_max, c_max = greedy_coverage_order(z, maximise=True)
    _order_min, c_min = greedy_coverage_order(z, maximise=False)
    rand = random_coverage_curves(z, n_runs=30, seed=0)
    assert sorted(order_max) == list(range(8)) and rand.shape == (30, 8)
    # greedy-max picks the best single dataset: compare with brute force
    singles = [coverage(z, [j]) for j in range(8)]
    assert c_max[0] == pytest.approx(max(singles)) and c_min[0] == pytest.approx(min(singles))
    assert scauc(c_max) >= scauc(rand.mean(axis=0)) >= scauc(c_min)
    for curve in (c_max, c_min, rand[0]):
        assert curve[-1] == pytest.approx(1.0)
    np.testing.assert_allclose(random_coverage_curves(z, n_runs=30, seed=0), rand)


def test_size_at_and_scauc():
    curve = np.array([0.5, 0.9, 0.96, 1.0])
    assert size_at(curve) == 3 and size_at(curve, 1.01) is None
    assert scauc(curve) == pytest.approx(curve.mean())


def test_proxy_coverage_clusters_and_beam_optimum():
    # two clusters of identical datasets: greedy covers both with two picks
    s = np.array([[1, 1, 0, 0], [1, 1, 0, 0], [0, 0, 1, 1], [0, 0, 1, 1]], dtype=float)
    order, proxy = proxy_coverage_order(s, 4, gamma=0.95)
    assert len(order) == 2 and {order[0] // 2, order[1] // 2} == {0, 1}
    assert proxy[-1] == pytest.approx(1.0)
    # beam as wide as the pool at k = 2 is exhaustive: equals brute force over pairs
    rng = np.random.default_rng(7)
    sim = rng.uniform(size=(7, 7))
    sim = (sim + sim.T) / 2
    np.fill_diagonal(sim, 1.0)
    best = max(np.maximum(sim[:, i], sim[:, j]).mean()
               for i, j in itertools.combinations(range(7), 2))
    _, beam_proxy = proxy_coverage_order(sim, 2, beam=7)
    _, greedy_proxy = proxy_coverage_order(sim, 2, beam=1)
    assert beam_proxy[-1] == pytest.approx(best) and greedy_proxy[-1] <= best + 1e-12


# ----------------------------------------------------------------------------- pounce
def test_pounce_exact_linear_relation_and_noise():
    rng = np.random.default_rng(8)
    theta = rng.uniform(0.2, 0.8, size=(80, 1))
    z = np.clip(theta @ rng.uniform(0.5, 1.0, size=(1, 5)), 0, 1)
    train, test = np.arange(60), np.arange(60, 80)
    assert pounce_mse(z, [0], train, test, predictor="ridge") < 1e-4
    noisy = pounce_mse(z, [0], train, test, predictor="ridge", noise_var=0.1, seed=1)
    assert noisy > 1e-3
    for name in ("knn", "mlp", "mlp2"):
        assert np.isfinite(pounce_mse(z, [0, 1], train, test, predictor=name))
    with pytest.raises(ValidationError, match="unknown predictor"):
        pounce_mse(z, [0], train, test, predictor="svm")
    with pytest.raises(ValidationError, match="n_neighbors must be a positive integer"):
        make_regressor("knn", n_neighbors=0)
    with pytest.raises(ValidationError, match="hidden must be a positive integer"):
        make_regressor("mlp", hidden=0)
    # a target observed on only 3 training models still gets a kNN fit (k capped at 3)
    z_missing = z.copy()
    z_missing[3:60, 4] = np.nan
    assert np.isfinite(pounce_mse(z_missing, [0], train, test, predictor="knn"))


# ----------------------------------------------------------------------------- methods
def test_registered_methods():
    names = [n for n in available_methods("impute") if n.startswith("simba-")]
    assert sorted(names) == sorted(f"simba-{m}" for m in MEASURES)
    method = get_method("simba-kendall")
    sel = method.make_selector(k=3, seed=0)
    assert isinstance(sel, SimbaSelector) and sel.similarity == "kendall"
    pred = method.make_predictor(seed=0, predictor="knn")
    assert isinstance(pred, SimbaPredictor) and pred.predictor == "knn"


def test_selector_predictor_native_units_and_conformal_coverage():
    rng = np.random.default_rng(9)
    n, d = 400, 6
    theta = rng.normal(size=n)
    base = 0.5 + 0.12 * theta[:, None] * rng.uniform(0.5, 1.0, size=d)
    y = base + 0.02 * rng.normal(size=(n, d))
    y[:, 3] = 100 * y[:, 3] + 7  # a native-scale column (e.g. a percentage)
    ids = [f"b{j}" for j in range(d)]
    source = ScoreMatrix(y[:200], items=ids, level="benchmark")
    target = y[200:]
    sel = SimbaSelector(2, similarity="pearson").fit(source)
    assert len(sel.coreset_) == 2 and len(sel.coreset_.details["coverage"]) == 2
    pred = SimbaPredictor(level=0.9, seed=0).fit(source, sel.coreset_)
    out = pred.predict(target[:, sel.selected_])
    assert out.mean.shape == (200, d) and out.interval == "split-conformal"
    assert list(out.columns) == ids
    rest = np.setdiff1d(np.arange(d), sel.selected_)
    err = np.abs(out.mean[:, rest] - target[:, rest]) / np.nanstd(target[:, rest], axis=0)
    assert np.median(err) < 0.5  # far better than predicting the mean (≈ 0.67)
    inside = (target[:, rest] >= out.lower[:, rest]) & (target[:, rest] <= out.upper[:, rest])
    assert 0.8 <= inside.mean() <= 0.99  # split conformal, nominal 0.9
    np.testing.assert_array_equal(out.mean[:, sel.selected_], target[:, sel.selected_])
    # missing coreset responses are imputed; same seed -> same numbers
    x = target[:5, sel.selected_].copy()
    x[0, 0] = np.nan
    again = SimbaPredictor(level=0.9, seed=0).fit(source, sel.coreset_).predict(x)
    assert np.isfinite(again.mean).all()
    np.testing.assert_allclose(again.mean[1:], out.mean[1:5])


def test_split_conformal_quantile_small_source():
    rng = np.random.default_rng(11)
    y = factor_matrix(rng, n_models=24, n_cols=6, noise=0.03)
    source = ScoreMatrix(y, level="benchmark")
    coreset = SimbaSelector(2).fit(source).coreset_
    pred = SimbaPredictor(level=0.9, seed=3).fit(source, coreset)
    cal = pred.calibration_rows_
    assert len(cal) == 9 and len(pred.train_rows_) == 15  # 9 = ceil(0.9 / 0.1)
    # closed form: the ceil((n + 1) * 0.9)-th smallest |residual| of the calibration models
    out = pred.predict(y[cal][:, coreset.indices])
    rest = np.setdiff1d(np.arange(6), coreset.indices)
    resid = np.sort(np.abs(y[cal][:, rest] - out.mean[:, rest]), axis=0)
    np.testing.assert_allclose(pred.quantile_[rest], resid[8])
    np.testing.assert_allclose(out.upper[:, rest] - out.mean[:, rest],
                               np.broadcast_to(resid[8], (9, len(rest))))


def test_selector_with_missing_and_errors():
    rng = np.random.default_rng(10)
    y = factor_matrix(rng, n_models=40, n_cols=8, missing=0.3)
    source = ScoreMatrix(y, level="benchmark")
    a = SimbaSelector(3, similarity="euclidean", beam=2).fit(source).selected_
    b = SimbaSelector(3, similarity="euclidean", beam=2).fit(source).selected_
    np.testing.assert_array_equal(a, b)
    with pytest.raises(ValidationError, match="larger than the pool"):
        SimbaSelector(9).fit(source)
    with pytest.raises(ValidationError, match="unknown similarity"):
        SimbaSelector(2, similarity="dice").fit(source)
    with pytest.raises(ValidationError, match="beam"):
        SimbaSelector(2, beam=0).fit(source)
    with pytest.raises(ValidationError, match="unknown predictor"):
        SimbaPredictor(predictor="svm").fit(source, SimbaSelector(2).fit(source).coreset_)


# ----------------------------------------------------------------------------- real data
def test_helm_lite_summary_coverage_bounds(load_shared):
    m = load_shared("helm_lite_summary")
    z = normalise_scores(m.values)
    res = prowl(z, "spearman")
    _, c_max = greedy_coverage_order(z)
    _, c_min = greedy_coverage_order(z, maximise=False)
    assert res.coverage[-1] == pytest.approx(1.0)
    assert scauc(c_max) >= res.scauc - 1e-12 and res.scauc >= scauc(c_min) - 1e-12
    # the stored "Mean win rate" column alone already reproduces the ranking
    mwr_col = list(m.items).index("Mean win rate")
    assert coverage(z, [mwr_col]) > 0.95
