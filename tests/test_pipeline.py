"""fit_method: one code path for API and harness, and selection-aware ("cv") intervals."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.model_selection import KFold

from coreval.base import Coreset, FitCache, Selector
from coreval.data import ScoreMatrix, make_split, simulate
from coreval.errors import ValidationError
from coreval.methods import Component, Method, get_method, register_method
from coreval.pipeline import fit_method, random_is_better
from coreval.prediction.gam import GAMPredictor
from coreval.prediction.irt_bayes import IRTBayesPredictor
from coreval.prediction.ridge import KernelRidgePredictor
from coreval.prediction.stacking import StackingPredictor
from coreval.saved_selection import load_selection, save_selection


def _coverage(fitted, target) -> float:
    pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
    truth = target.summary_scores()
    return float(np.mean((truth >= pred.lower) & (truth <= pred.upper)))


def test_cv_residuals_equal_a_manual_refit_of_the_whole_pipeline():
    m = simulate(n_models=60, n_items=80, seed=1).matrix
    source = m.take(np.arange(30))
    method = get_method("mrmr+")
    fitted = fit_method(method, source, 8, seed=2, calibration="cv", folds=5, repeats=2,
                        selection="method")
    y = source.summary_scores()
    expected = np.empty((2, 30))
    for r, fold_seed in enumerate([2, int(np.random.default_rng(2).integers(0, 2**31 - 1))]):
        for train, held in KFold(5, shuffle=True, random_state=fold_seed).split(np.arange(30)):
            sub = source.take(train)
            sel = method.make_selector(k=8, seed=2).fit(sub)
            pred = method.make_predictor(seed=2).fit(sub, sel.coreset_)
            expected[r, held] = np.abs(y[held] - pred.predict(
                source.values[np.ix_(held, sel.coreset_.indices)]).mean)
    assert not np.allclose(expected[0], expected[1])  # two assignments to folds
    np.testing.assert_allclose(fitted.cv_residuals, expected)
    out = fitted.predict_array(m.values[30:, fitted.coreset.indices])
    assert out.interval == "cv-residual"
    native = fitted.predictor.predict(m.values[30:, fitted.coreset.indices])
    np.testing.assert_allclose(out.mean, native.mean)


def test_cv_calibration_repairs_undercoverage_of_a_supervised_selector():
    """mRMR picks items with the source models' scores, so jackknife+ residuals are optimistic."""
    native, cv = [], []
    for seed in range(3):
        m = simulate(n_models=240, n_items=300, seed=seed).matrix
        split = make_split(m, "random", seed=seed, n_source=40)
        source, target = m.take(split.source), m.take(split.target)
        for calibration, store in (("native", native), ("cv", cv)):
            fitted = fit_method(get_method("mrmr+"), source, 15, seed=seed,
                                calibration=calibration)
            store.append(_coverage(fitted, target))
    assert np.mean(cv) >= 0.85
    assert np.mean(cv) > np.mean(native) + 0.03


def test_calibration_errors():
    m = simulate(n_models=30, n_items=40, seed=0).matrix
    with pytest.raises(ValidationError, match="calibration must be"):
        fit_method(get_method("random+"), m, 5, calibration="bootstrap")
    for bad in (0, 1.5, True):
        with pytest.raises(ValidationError, match="repeats must be"):
            fit_method(get_method("mrmr+"), m, 5, calibration="cv", repeats=bad)
    # a bad fold count is an error, not a silent fall-back to the uncalibrated interval
    for bad in (0, 1, -5, None, "a", 2.5):
        with pytest.raises(ValidationError, match="folds must be"):
            fit_method(get_method("mrmr++"), m, 5, folds=bad)
    fitted = fit_method(get_method("random+"), m, 5)
    for bad in (np.array(1.0), [{"a": 1}] * 5):
        with pytest.raises(ValidationError, match="responses must be"):
            fitted.predict(bad)


@pytest.mark.parametrize("name", ["bias-als-random", "simba-cosine"])
def test_intervals_at_another_level_equal_a_refit_at_that_level(name):
    # these predictors calibrate at fit time; an interval at another level must be the
    # one a fit at that level gives, not the fitted level's relabelled
    m = simulate(60, 24, model="beta", seed=2).matrix
    m = ScoreMatrix(m.values, models=m.models, items=m.items, level="benchmark")
    source, target = m.take(np.arange(50)), m.take(np.arange(50, 60))
    fitted = fit_method(get_method(name), source, 6, seed=0)
    x = target.values[:, fitted.coreset.indices]
    at_half = fitted.predict_levels(x, [0.5])[0.5]
    refit = fit_method(get_method(name), source, 6, seed=0, level=0.5).predict_array(x)
    np.testing.assert_allclose(at_half.lower, refit.lower)
    np.testing.assert_allclose(at_half.upper, refit.upper)
    own = fitted.predict_array(x)
    assert np.nanmean(own.upper - own.lower) > np.nanmean(at_half.upper - at_half.lower)


class RelevanceSelector(Selector):
    """A supervised selector that reads the source scores: the items most (or, with
    ``worst``, least) correlated with the summary score."""

    def __init__(self, k: int = 10, seed: int = 0, worst: bool = False) -> None:
        self.k = k
        self.seed = seed
        self.worst = worst

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        y = source.summary_scores()
        relevance = np.abs([np.corrcoef(col, y)[0, 1] if col.std() > 0 else 0.0
                            for col in source.values.T])
        order = np.argsort(relevance if self.worst else -relevance, kind="stable")
        return Coreset.from_indices(source, order[:k], method="relevance", seed=self.seed)


register_method(Method("_test-least-relevant++",
                       Component(RelevanceSelector, fixed={"worst": True}),
                       Component(KernelRidgePredictor)), replace=True)
register_method(Method("_test-most-relevant++", Component(RelevanceSelector),
                       Component(KernelRidgePredictor)), replace=True)
_FAST_STACK = Component(StackingPredictor, fixed={"components": ("mean", "ridge")})
register_method(Method("_test-least-relevant-stack",
                       Component(RelevanceSelector, fixed={"worst": True}), _FAST_STACK),
                replace=True)
register_method(Method("_test-most-relevant-stack", Component(RelevanceSelector), _FAST_STACK),
                replace=True)

register_method(Method("_test-least-relevant-bayes",
                       Component(RelevanceSelector, fixed={"worst": True}),
                       Component(IRTBayesPredictor)), replace=True)
register_method(Method("_test-least-relevant-gam",
                       Component(RelevanceSelector, fixed={"worst": True}),
                       Component(GAMPredictor)), replace=True)


@pytest.fixture(scope="module")
def leaderboard():
    """A simulated leaderboard whose first 20 items are coin flips (label noise)."""
    m = simulate(n_models=90, n_items=120, seed=4).matrix
    values = m.values.copy()
    values[:, :20] = np.random.default_rng(0).random((90, 20)) < 0.5
    m = ScoreMatrix(values, models=m.models, items=m.items, name="noisy")
    split = make_split(m, "random", seed=0, n_source=40)
    return m.take(split.source), m.take(split.target)


def test_auto_selection_replaces_a_harmful_selector_by_the_same_predictor_on_random_items(
        leaderboard, tmp_path):
    source, target = leaderboard
    with pytest.warns(UserWarning, match="random coreset of 12 items predicts held-out"):
        fitted = fit_method(get_method("_test-least-relevant++"), source, 12, seed=3)
    assert fitted.selection == "random"
    assert fitted.selection_rmse["random"] < fitted.selection_rmse["method"]
    # exactly random++ (random items, kernel ridge) with the same seed
    reference = fit_method(get_method("random++"), source, 12, seed=3)
    np.testing.assert_array_equal(fitted.coreset.indices, reference.coreset.indices)
    x = target.values
    np.testing.assert_allclose(fitted.predict_array(x[:, fitted.coreset.indices]).mean,
                               reference.predict_array(x[:, reference.coreset.indices]).mean)
    kept = fit_method(get_method("_test-least-relevant++"), source, 12, seed=3,
                      selection="method")
    assert kept.selection == "method" and kept.selection_rmse is None
    truth = target.summary_scores()
    errors = [np.sqrt(np.mean((f.predict_array(x[:, f.coreset.indices]).mean - truth) ** 2))
              for f in (fitted, kept)]
    assert errors[0] < errors[1]  # the check helped on the held-out targets too
    save_selection(fitted, tmp_path / "sel")
    loaded = load_selection(tmp_path / "sel")
    assert loaded.selection == "random" and loaded.selection_rmse == fitted.selection_rmse
    np.testing.assert_allclose(loaded.predict_array(x[:, loaded.coreset.indices]).mean,
                               fitted.predict_array(x[:, fitted.coreset.indices]).mean)


def test_auto_selection_keeps_the_method_when_it_predicts_held_out_sources_better(
        leaderboard):
    source, _ = leaderboard
    fitted = fit_method(get_method("_test-most-relevant++"), source, 12, seed=0, folds=5)
    scores = fitted.selection_rmse
    assert set(scores) == {"method", "random"}
    # the calibration reuses the method's own out-of-fold residuals of the check
    manual = fit_method(get_method("_test-most-relevant++"), source, 12, seed=0, folds=5,
                        selection="method", calibration="cv")
    assert fitted.selection == "method"
    np.testing.assert_allclose(fitted.cv_residuals, manual.cv_residuals)
    # a random coreset and a posterior interval are not checked
    assert fit_method(get_method("random++"), source, 12).selection_rmse is None
    forced = fit_method(get_method("mrmr++"), source, 12, selection="random")
    assert forced.selection == "random" and not forced.coreset.uses_source_models


def test_auto_selection_of_a_stack_compares_its_own_out_of_fold_residuals(leaderboard):
    source, target = leaderboard
    x, truth = target.values, target.summary_scores()
    with pytest.warns(UserWarning, match="random coreset of 12 items predicts held-out"):
        fitted = fit_method(get_method("_test-least-relevant-stack"), source, 12, seed=3)
    published = fit_method(get_method("_test-least-relevant-stack"), source, 12, seed=3,
                           selection="method")
    forced = fit_method(get_method("_test-least-relevant-stack"), source, 12, seed=3,
                        selection="random")
    assert fitted.selection == "random" and forced.selection == "random"
    # the comparison is on the stacks' own cross-fitted residuals (5 meta-folds), not a new
    # out-of-fold run: the method's RMSE is the published stack's out-of-fold RMSE
    assert fitted.selection_rmse["method"] == pytest.approx(100 * published.predictor.rmse_)
    assert fitted.selection_rmse["random"] == pytest.approx(100 * forced.predictor.rmse_)
    np.testing.assert_array_equal(fitted.coreset.indices, forced.coreset.indices)
    np.testing.assert_allclose(fitted.predict_array(x[:, fitted.coreset.indices]).upper,
                               forced.predict_array(x[:, forced.coreset.indices]).upper)
    errors = [np.sqrt(np.mean((f.predict_array(x[:, f.coreset.indices]).mean - truth) ** 2))
              for f in (fitted, published)]
    assert errors[0] < errors[1]
    kept = fit_method(get_method("_test-most-relevant-stack"), source, 12, seed=0)
    assert kept.selection == "method" and set(kept.selection_rmse) == {"method", "random"}
    assert kept.calibration == "native"  # the stack's conformal interval is kept


def test_a_random_coreset_pipeline_is_fitted_once_per_cache(leaderboard, monkeypatch):
    """A stack's selection check asks for the fit of the random stack; with one cache (a
    harness split) it is made once, and the numbers are those of separate fits."""
    import coreval.pipeline as pipeline

    source, target = leaderboard
    made: list[str] = []
    real = pipeline._fit_pipeline

    def counted(method, *args, **kwargs):
        made.append(type(method.make_selector(k=12)).__name__)
        return real(method, *args, **kwargs)

    monkeypatch.setattr(pipeline, "_fit_pipeline", counted)
    cache = FitCache()
    forced = fit_method(get_method("_test-least-relevant-stack"), source, 12, seed=3,
                        selection="random", cache=cache)
    kept = fit_method(get_method("_test-most-relevant-stack"), source, 12, seed=0,
                      cache=cache)
    assert made == ["RandomSelector", "RelevanceSelector", "RandomSelector"]  # seeds differ
    checked = fit_method(get_method("_test-most-relevant-stack"), source, 12, seed=3,
                         cache=cache)
    assert made[3:] == ["RelevanceSelector"]  # its random stack is the first one's
    alone = fit_method(get_method("_test-most-relevant-stack"), source, 12, seed=3)
    assert checked.selection_rmse == alone.selection_rmse and checked.selection == "method"
    x = target.values[:, checked.coreset.indices]
    np.testing.assert_array_equal(checked.predict_array(x).upper, alone.predict_array(x).upper)
    assert forced.seconds["fit"] > 0 and kept.selection == "method"
    # a pipeline whose selector reads the scores is not kept: fitting it again refits it
    made.clear()
    for _ in range(2):
        fit_method(get_method("_test-most-relevant++"), source, 12, seed=0, cache=cache,
                   selection="method", calibration="native")
    assert made == ["RelevanceSelector", "RelevanceSelector"]


def test_a_shared_cache_tells_matrices_apart_by_their_item_groups():
    """Item groups set the summary score, so a cached fit must not serve another grouping."""
    import pandas as pd

    m = simulate(n_models=40, n_items=30, seed=4).matrix
    groups = np.where(np.arange(m.n_items) < 5, "small", "large")  # unequal: scores differ
    grouped = ScoreMatrix(m.values, models=m.models, items=m.items,
                          item_meta=pd.DataFrame({"group": groups}, index=m.items))
    assert not np.allclose(m.summary_scores(), grouped.summary_scores())
    cache = FitCache()
    x = m.values[30:]
    for source in (m.take(np.arange(30)), grouped.take(np.arange(30))):
        shared = fit_method(get_method("random++"), source, 6, seed=0, cache=cache)
        alone = fit_method(get_method("random++"), source, 6, seed=0)
        np.testing.assert_array_equal(shared.predict_array(x[:, shared.coreset.indices]).mean,
                                      alone.predict_array(x[:, alone.coreset.indices]).mean)


def test_auto_selection_of_irt_bayes_compares_its_misfit_folds(leaderboard):
    """irt-bayes is checked on the out-of-fold residuals of its own misfit folds."""
    source, target = leaderboard
    x, truth = target.values, target.summary_scores()
    cache = FitCache()  # the three fits share their IRT fits, as in one harness split
    options = {"num_steps": 400, "choose_dims": False, "cache": cache}
    method = get_method("_test-least-relevant-bayes")
    with pytest.warns(UserWarning, match="random coreset of 12 items predicts held-out"):
        fitted = fit_method(method, source, 12, seed=3, **options)
    published = fit_method(method, source, 12, seed=3, selection="method", **options)
    forced = fit_method(method, source, 12, seed=3, selection="random", **options)
    assert fitted.selection == "random" and forced.selection == "random"
    # every source model has a complete coreset, so the compared rows are all of them and
    # the RMSEs are the two fits' own blended out-of-fold RMSEs
    assert len(published.predictor.oof_rows_) == source.n_models
    assert fitted.selection_rmse["method"] == pytest.approx(100 * published.predictor.cv_rmse_)
    assert fitted.selection_rmse["random"] == pytest.approx(100 * forced.predictor.cv_rmse_)
    np.testing.assert_array_equal(fitted.coreset.indices, forced.coreset.indices)
    errors = [np.sqrt(np.mean((f.predict_array(x[:, f.coreset.indices]).mean - truth) ** 2))
              for f in (fitted, published)]
    assert errors[0] < errors[1]
    # a random coreset reads no source scores: nothing to check
    default = fit_method(get_method("irt-bayes"), source, 12, seed=3, **options)
    assert default.selection == "method" and default.selection_rmse is None


def test_auto_selection_of_metabench_compares_its_gam_on_random_items(leaderboard):
    """metabench's GAM is checked like the regression refits: out of fold, same folds."""
    source, target = leaderboard
    x, truth = target.values, target.summary_scores()
    cache = FitCache()  # the fits share the IRT fits of the source and of its folds
    method = get_method("_test-least-relevant-gam")
    with pytest.warns(UserWarning, match="random coreset of 12 items predicts held-out"):
        fitted = fit_method(method, source, 12, seed=3, cache=cache)
    published = fit_method(method, source, 12, seed=3, selection="method", cache=cache)
    forced = fit_method(method, source, 12, seed=3, selection="random", cache=cache)
    assert fitted.selection == "random" and published.selection == "method"
    assert fitted.selection_rmse["random"] < fitted.selection_rmse["method"]
    np.testing.assert_array_equal(fitted.coreset.indices, forced.coreset.indices)
    np.testing.assert_allclose(fitted.predict_array(x[:, fitted.coreset.indices]).mean,
                               forced.predict_array(x[:, forced.coreset.indices]).mean)
    errors = [np.sqrt(np.mean((f.predict_array(x[:, f.coreset.indices]).mean - truth) ** 2))
              for f in (fitted, published)]
    assert errors[0] < errors[1]  # the check helped on the held-out targets too
    # the GAM's jackknife+ leaves out the IRT fit behind θ̂, so even on random items the
    # interval is the out-of-fold one: the check's own run of the random coreset, reused
    assert fitted.calibration == "cv" and fitted.cv_residuals.shape == (1, source.n_models)
    assert 100 * np.sqrt(np.mean(fitted.cv_residuals ** 2)) == pytest.approx(
        fitted.selection_rmse["random"])
    assert fitted.predict_array(x[:, fitted.coreset.indices]).interval == "cv-residual"
    assert 100 * fitted.model_check.cv_rmse == pytest.approx(fitted.selection_rmse["random"])
    assert published.model_check.ridge_rmse is not None
    # the published metabench (Fisher items from the IRT fit) goes through the same check
    default = fit_method(get_method("metabench"), source, 12, seed=3, cache=cache)
    assert set(default.selection_rmse) == {"method", "random"}


def test_selection_errors(leaderboard):
    source, _ = leaderboard
    with pytest.raises(ValidationError, match="selection must be one of"):
        fit_method(get_method("mrmr+"), source, 5, selection="best")


def test_random_is_better_is_the_one_standard_error_rule():
    own = np.array([4.0, 9.0, 1.0, 16.0])
    # d = (3, 8, 0, 15): mean 6.5, sd 6.56, se 3.28 -> better by two standard errors
    assert random_is_better(own, np.array([1.0, 1.0, 1.0, 1.0]))
    # d = (3, 8, 0, -9): mean 0.5 < se 3.6 -> within noise, the method is kept
    assert not random_is_better(own, np.array([1.0, 1.0, 1.0, 25.0]))
    assert not random_is_better(own, own)  # equal errors keep the method
    assert not random_is_better(np.array([5.0]), np.array([0.0]))  # one model: no evidence


class _FakeTimer:
    """A clock that moves only when a fit says how long it took."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now

    def fit(self, seconds: float, value, inner=()):
        def run():
            for step in inner:
                step()
            self.now += seconds
            return value
        return run


def test_each_reused_fit_counts_once_per_run():
    """A run reports what it would cost with an empty cache: each fit once."""
    timer = _FakeTimer()
    cache = FitCache(timer=timer)
    # "auto" holds two validation fits; the chosen spec's full fit is made beside it
    val_a = lambda: cache.get_or_fit("val-a", timer.fit(2.0, "A"))  # noqa: E731
    val_b = lambda: cache.get_or_fit("val-b", timer.fit(3.0, "B"))  # noqa: E731
    start = cache.clock()
    assert cache.get_or_fit("auto", timer.fit(0.5, "a", inner=(val_a, val_b))) == "a"
    assert cache.clock() - start == pytest.approx(5.5)
    # within the same run, reusing the choice or one of its fits costs nothing more
    before = cache.clock()
    assert cache.get_or_fit("auto", timer.fit(99.0, "x")) == "a"
    assert cache.get_or_fit("val-a", timer.fit(99.0, "x")) == "A"
    assert cache.clock() - before == 0.0
    # a new run that reuses a validation fit and then the choice counts each once
    cache.begin_run()
    before = cache.clock()
    assert cache.get_or_fit("val-b", timer.fit(99.0, "x")) == "B"
    assert cache.clock() - before == pytest.approx(3.0)
    assert cache.get_or_fit("auto", timer.fit(99.0, "x")) == "a"
    assert cache.clock() - before == pytest.approx(5.5)  # auto's own 0.5 and val-a's 2
    # a fit made in a run that reuses an older one: its cost includes the older one's
    cache.begin_run()
    before = cache.clock()
    made = cache.get_or_fit("full", timer.fit(4.0, "F", inner=(val_a,)))
    assert made == "F" and cache.clock() - before == pytest.approx(6.0)
    cache.begin_run()
    before = cache.clock()
    assert cache.get_or_fit("full", timer.fit(99.0, "x")) == "F"
    assert cache.clock() - before == pytest.approx(6.0)
    assert (cache.hits, cache.misses) == (6, 4)


def test_reused_fits_count_with_the_seconds_they_took(monkeypatch):
    """A harness cell that reuses another cell's fit reports what it costs on its own."""
    import time

    import coreval.gaussian.correlation as correlation

    original = correlation.estimate_correlation

    def slow(*args, **kwargs):
        time.sleep(0.3)
        return original(*args, **kwargs)

    monkeypatch.setattr(correlation, "estimate_correlation", slow)
    rng = np.random.default_rng(0)
    scores = rng.normal(size=(40, 12)) + rng.normal(size=(40, 1))
    source = ScoreMatrix(scores, level="benchmark", kind="continuous")
    shared = FitCache()
    seconds = [fit_method(get_method("gauss-mi"), source, k, seed=0,
                          cache=shared).seconds["select"]
               for k in (3, 5)]
    assert shared.hits >= 1 and min(seconds) >= 0.3


def test_bernoulli_interval_scale_is_the_scaled_conformal_interval_of_the_cv_residuals():
    from coreval.base.conformal import bernoulli_scale, split_conformal_interval

    m = simulate(n_models=70, n_items=80, seed=3).matrix
    source, target = m.take(np.arange(30)), m.values[30:]
    fitted = fit_method(get_method("mrmr+"), source, 8, seed=0, calibration="cv", folds=5,
                        selection="method", interval_scale="bernoulli")
    assert fitted.interval_scale == "bernoulli"
    assert fitted.cv_means.shape == fitted.cv_residuals.shape == (1, 30)
    # the out-of-fold predictions are those behind the residuals
    np.testing.assert_allclose(np.abs(source.summary_scores() - fitted.cv_means[0]),
                               fitted.cv_residuals[0])
    out = fitted.predict_array(target[:, fitted.coreset.indices])
    lower, upper = split_conformal_interval(out.mean, fitted.cv_residuals, 0.9,
                                            pred_scale=bernoulli_scale(out.mean),
                                            residual_scale=bernoulli_scale(fitted.cv_means))
    np.testing.assert_allclose(out.lower, np.clip(lower, 0, 1))
    np.testing.assert_allclose(out.upper, np.clip(upper, 0, 1))
    constant = fit_method(get_method("mrmr+"), source, 8, seed=0, calibration="cv", folds=5,
                          selection="method", interval_scale="constant")
    other = constant.predict_array(target[:, constant.coreset.indices])
    np.testing.assert_allclose(other.mean, out.mean)
    assert not np.allclose(other.upper - other.lower, out.upper - out.lower)


def test_quadratic_interval_scale_fits_a_variance_function_to_the_cv_residuals():
    from coreval.base.conformal import split_conformal_interval, variance_function_scale

    m = simulate(n_models=70, n_items=80, seed=3).matrix
    source, target = m.take(np.arange(30)), m.values[30:]
    fitted = fit_method(get_method("mrmr+"), source, 8, seed=0, calibration="cv", folds=5,
                        selection="method", interval_scale="quadratic")
    assert fitted.interval_scale == "quadratic"
    out = fitted.predict_array(target[:, fitted.coreset.indices])
    fit = (fitted.cv_means, fitted.cv_residuals)
    lower, upper = split_conformal_interval(
        out.mean, fitted.cv_residuals, 0.9, pred_scale=variance_function_scale(out.mean, *fit),
        residual_scale=variance_function_scale(fitted.cv_means, *fit))
    np.testing.assert_allclose(out.lower, np.clip(lower, 0, 1))
    np.testing.assert_allclose(out.upper, np.clip(upper, 0, 1))
    # another level re-uses the same scales
    wide = fitted.predict_array(target[:, fitted.coreset.indices], level=0.95)
    assert np.all(wide.upper - wide.lower >= out.upper - out.lower - 1e-12)


def test_quadratic_interval_scale_is_constant_with_too_few_out_of_fold_residuals():
    from coreval.pipeline import resolve_interval_scale

    m = simulate(n_models=40, n_items=30, seed=2).matrix
    assert resolve_interval_scale("quadratic", np.zeros((1, 5)), np.zeros((1, 5)),
                                  m) == "constant"
    # any score range: percent scores too
    assert resolve_interval_scale("quadratic", np.zeros((1, 6)), np.zeros((1, 6)),
                                  m.with_values(m.values * 100.0)) == "quadratic"


def test_interval_scale_validation_and_auto_on_scores_outside_the_unit_interval():
    m = simulate(n_models=40, n_items=30, seed=2).matrix
    with pytest.raises(ValidationError, match="interval_scale must be one of"):
        fit_method(get_method("mrmr+"), m, 5, interval_scale="wide")
    wide = m.with_values(m.values * 100.0)  # e.g. scores in percent
    with pytest.raises(ValidationError, match=r"needs scores in \[0, 1\]"):
        fit_method(get_method("mrmr+"), wide, 5, calibration="cv", folds=4,
                   interval_scale="bernoulli")
    fitted = fit_method(get_method("mrmr+"), wide, 5, calibration="cv", folds=4,
                        interval_scale="auto")
    assert fitted.interval_scale == "constant"


def test_calibration_folds_reuse_the_runs_irt_model_choice(irt_fit_calls):
    """gp-irt's ``model="auto"``/``priors="auto"`` is chosen once; its folds fit the choice.

    Without :func:`coreval.pipeline.choice_refit` every calibration fold would make the
    choice again (four validation fits per fold); with it each fold fits the chosen
    spec only: on all the fold's models and for λ's validation fit.
    """
    source = simulate(n_models=24, n_items=60, seed=2).matrix
    fast = {"fit_method": "map", "num_steps": 300, "num_draws": 1, "learning_rate": 0.1}
    calls = irt_fit_calls
    fitted = fit_method(get_method("gp-irt"), source, 12, seed=0, folds=3, **fast)
    assert fitted.calibration == "cv" and fitted.cv_residuals.shape == (1, 24)
    chosen = fitted.selector.resolved_options()
    assert set(chosen) == {"model", "priors"}
    assert fitted.predictor.resolved_options() == chosen
    outer = [c for c in calls if c[2] >= 19]  # all 24 sources, and λ's 19 (every 5th out)
    assert len(outer) == 5  # four candidates' validation fits + the chosen one on all
    folds = [c for c in calls if c[2] <= 16]  # a fold's 16 models, and λ's 12 of them
    assert len(folds) == 3 * 2 and {c[:2] for c in folds} == {(chosen["model"],
                                                              chosen["priors"])}
    # a choice the user made is the user's: nothing is pinned over it
    calls.clear()
    fit_method(get_method("gp-irt"), source, 12, seed=0, folds=3, model="2pl",
               priors="signed", **fast)
    assert {c[:2] for c in calls} == {("2pl", "signed")} and len(calls) == 2 + 3 * 2


def test_choice_refit_pins_what_both_components_chose_alike(monkeypatch):
    """Options the two fitted components resolved differently, or the user set, stay open."""
    from types import SimpleNamespace

    import coreval.pipeline as pipeline

    def fitted(**chosen):
        return SimpleNamespace(resolved_options=lambda: dict(chosen))

    monkeypatch.setattr(pipeline, "fold_refit", lambda method, k, *, seed, cache, options:
                        ("refit with", options))
    method = get_method("gp-irt")

    def pinned(selector, predictor, options):
        return pipeline.choice_refit(method, 5, 0, None, options, selector, predictor,
                                     "own refit")

    assert pinned(fitted(), fitted(), {"seed": 1}) == "own refit"
    assert pinned(fitted(model="3pl"), fitted(model="2pl"), {}) == "own refit"
    assert pinned(fitted(model="3pl"), fitted(), {"model": "2pl"}) == "own refit"
    assert pinned(fitted(model="3pl"), fitted(model="auto"), {}) == "own refit"
    assert pinned(fitted(model="3pl"), fitted(model="3pl", priors="signed"),
                  {"model": "auto", "num_steps": 9}) == (
        "refit with", {"model": "3pl", "priors": "signed", "num_steps": 9})
