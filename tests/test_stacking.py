"""Stacking: out-of-fold meta-weights with the selection re-run per fold, conformal interval."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.model_selection import KFold

from coreval.data import simulate
from coreval.errors import ValidationError
from coreval.methods import get_method
from coreval.pipeline import fit_method, resolve_calibration
from coreval.prediction.stacking import COMPONENTS, StackingPredictor, stack_weights


def test_nnls_weights_give_a_useless_component_no_weight():
    rng = np.random.default_rng(0)
    y = rng.uniform(0.2, 0.8, 60)
    good = y + rng.normal(0, 0.01, 60)
    fair = y + rng.normal(0, 0.05, 60)
    misfit = 1.0 - y + rng.normal(0, 0.05, 60)   # anti-correlated with the truth
    w, b = stack_weights(np.column_stack([good, fair, misfit]), y, "nnls")
    assert b == 0.0 and (w >= 0).all()
    assert w[2] < 0.02 and w[0] > w[1]
    assert abs(w.sum() - 1.0) < 0.05


def test_meta_learners_and_their_errors():
    rng = np.random.default_rng(1)
    y = rng.uniform(size=40)
    p = np.column_stack([y + rng.normal(0, 0.02, 40), np.full(40, 0.5)])
    w, b = stack_weights(p, y, "ridge")
    assert w[0] > 0.8 and np.isfinite(b)
    np.testing.assert_allclose(stack_weights(p, y, "average")[0], [0.5, 0.5])
    with pytest.raises(ValidationError, match="meta must be one of"):
        stack_weights(p, y, "lasso")
    with pytest.raises(ValidationError, match="do not match"):
        stack_weights(p[:3], y, "nnls")


def test_weights_are_learnt_from_folds_that_rerun_the_selection():
    m = simulate(n_models=70, n_items=80, seed=3).matrix
    source, target = m.take(np.arange(40)), m.take(np.arange(40, 70))
    method = get_method("stack-mrmr")
    names = ("mean", "ridge", "kernel-ridge")
    fitted = fit_method(method, source, 8, seed=4, components=names)
    stack = fitted.predictor
    y = source.summary_scores()
    oof = np.empty((40, len(names)))
    for train, held in KFold(5, shuffle=True, random_state=4).split(np.arange(40)):
        sub = source.take(train)
        coreset = method.make_selector(k=8, seed=4).fit(sub).coreset_
        for j, name in enumerate(names):
            comp = COMPONENTS[name](4, stack.irt).fit(sub, coreset)
            oof[held, j] = comp.predict(source.values[np.ix_(held, coreset.indices)]).mean
    w, _ = stack_weights(oof, y, "nnls")
    np.testing.assert_allclose(stack.weights_, w, atol=1e-10)
    assert set(stack.component_rmse_) == set(names)
    # the stack's own interval is kept: its residuals already re-ran the selection
    assert fitted.calibration == "native"
    pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
    assert pred.interval == "cv-residual"
    truth = target.summary_scores()
    comps = stack.component_predictions(target.values[:, fitted.coreset.indices])
    rmse = np.sqrt(np.mean((pred.mean - truth) ** 2))
    worst = np.sqrt(np.mean((comps - truth[:, None]) ** 2, axis=0)).max()
    assert rmse <= worst
    assert np.mean((truth >= pred.lower) & (truth <= pred.upper)) >= 0.75


def test_the_pipeline_interval_scale_reaches_the_stack_interval():
    from coreval.base.conformal import (
        resolve_conformal_scale,
        split_conformal_interval,
        variance_function_scale,
    )

    m = simulate(n_models=70, n_items=80, seed=3).matrix
    source, target = m.take(np.arange(40)), m.take(np.arange(40, 70))
    names = ("mean", "ridge", "kernel-ridge")
    x_of = lambda f: target.values[:, f.coreset.indices]  # noqa: E731
    constant = fit_method(get_method("stack-mrmr"), source, 8, seed=4, components=names,
                          interval_scale="constant")
    scaled = fit_method(get_method("stack-mrmr"), source, 8, seed=4, components=names,
                        interval_scale="quadratic")
    stack = scaled.predictor
    assert stack.interval_scale_ == "quadratic"
    assert constant.predictor.interval_scale_ == "constant"
    np.testing.assert_allclose(stack.oof_means_ + stack.residuals_,
                               source.summary_scores()[stack.oof_rows_])
    pred = scaled.predict_array(x_of(scaled))
    fit = (stack.oof_means_, stack.residuals_)
    lower, upper = split_conformal_interval(
        pred.mean, stack.residuals_, 0.9, pred_scale=variance_function_scale(pred.mean, *fit),
        residual_scale=variance_function_scale(stack.oof_means_, *fit))
    np.testing.assert_allclose(pred.lower, np.clip(lower, 0, 1))
    np.testing.assert_allclose(pred.upper, np.clip(upper, 0, 1))
    other = constant.predict_array(x_of(constant))
    np.testing.assert_allclose(other.mean, pred.mean)
    assert not np.allclose(other.upper - other.lower, pred.upper - pred.lower)
    # an explicit predictor option wins over the pipeline's
    explicit = fit_method(get_method("stack-mrmr"), source, 8, seed=4, components=names,
                          interval_scale="quadratic", predictor__interval_scale="constant")
    assert explicit.predictor.interval_scale_ == "constant"
    # "auto" chooses from the stacked out-of-fold residuals
    auto = fit_method(get_method("stack-mrmr"), source, 8, seed=4, components=names,
                      interval_scale="auto")
    assert auto.predictor.interval_scale == "auto"
    assert auto.predictor.interval_scale_ == resolve_conformal_scale(
        "auto", auto.predictor.oof_means_ + auto.predictor.residuals_,
        auto.predictor.oof_means_, (0.0, 1.0))
    with pytest.raises(ValidationError, match="interval_scale must be one of"):
        fit_method(get_method("stack-mrmr"), source, 8, seed=4, components=names,
                   predictor__interval_scale="wide")


@pytest.mark.slow  # every component with its IRT choices, in 5 meta-folds: ~7 min
def test_irt_components_stack_on_binary_data():
    m = simulate(n_models=60, n_items=60, seed=5).matrix
    source, target = m.take(np.arange(36)), m.take(np.arange(36, 60))
    fitted = fit_method(get_method("stack-random"), source, 12, seed=0)
    stack = fitted.predictor
    assert list(stack.components_) == list(COMPONENTS)
    assert (stack.weights_ >= 0).all() and stack.weights_.sum() > 0.5
    pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
    truth = target.summary_scores()
    comps = stack.component_predictions(target.values[:, fitted.coreset.indices])
    errors = np.sqrt(np.mean((comps - truth[:, None]) ** 2, axis=0))
    assert np.sqrt(np.mean((pred.mean - truth) ** 2)) <= errors.max()
    assert np.all(np.isfinite(pred.lower)) and np.all(pred.lower <= pred.upper)


def test_continuous_scores_drop_the_binary_components():
    m = simulate(n_models=40, n_items=40, model="beta", seed=2).matrix
    stack = StackingPredictor(meta_folds=0)
    fitted = fit_method(get_method("stack-random"), m, 8, seed=0, meta_folds=0)
    assert list(fitted.predictor.components_) == ["mean", "ridge", "kernel-ridge"]
    assert stack.needs_binary is False
    assert StackingPredictor(components=("gp-irt",)).needs_binary is True


def test_bad_options_are_named():
    m = simulate(n_models=30, n_items=40, seed=0).matrix
    with pytest.raises(ValidationError, match="unknown stacking components"):
        fit_method(get_method("stack-random"), m, 5, components=("ridge", "xgboost"))
    with pytest.raises(ValidationError, match="meta_folds must be 0"):
        fit_method(get_method("stack-random"), m, 5, meta_folds=1)
    with pytest.raises(ValidationError, match="meta_folds must be 0"):
        fit_method(get_method("stack-random"), m, 5, meta_folds=2.7)
    with pytest.raises(ValidationError, match=r"components repeat: \['mean'\]"):
        fit_method(get_method("stack-random"), m, 5, components=("mean", "ridge", "mean"))


def test_irt_options_reach_the_gp_irt_component_and_the_anchor_selector():
    # model="2pl" must change the stack's own gp-IRT component, not only the anchor
    # selector's fit (the two share one spec, so one fit through the cache)
    method = get_method("stack-irt-anchors")
    assert method.make_selector(5, model="2pl").irt.model == "2pl"
    assert method.make_predictor(model="2pl").irt.model == "2pl"
    m = simulate(n_models=30, n_items=30, seed=1).matrix
    fitted = fit_method(method, m, 8, seed=0, model="2pl", meta_folds=0,
                        components=("mean", "gp-irt"), selection="method")
    assert fitted.predictor.components_["gp-irt"].irt == fitted.selector.irt
    assert fitted.predictor.components_["gp-irt"].irt.model == "2pl"


def test_the_folds_gp_irt_components_fit_the_irt_model_chosen_on_all_sources(irt_fit_calls):
    """``model="auto"``/``priors="auto"`` is chosen once; each fold's gp-IRT fits the choice."""
    m = simulate(n_models=24, n_items=40, seed=1).matrix
    calls = irt_fit_calls
    fitted = fit_method(get_method("stack-random"), m, 8, seed=0, meta_folds=3,
                        components=("mean", "gp-irt"), fit_method="map", num_steps=300,
                        num_draws=1, learning_rate=0.1)
    chosen = fitted.predictor.resolved_options()
    assert set(chosen) == {"model", "priors"}
    assert len([c for c in calls if c[2] >= 19]) == 5  # the choice's 4 fits + the final one
    folds = [c for c in calls if c[2] <= 16]  # each fold: its 16 models and λ's 12
    assert len(folds) == 3 * 2 and {c[:2] for c in folds} == {(chosen["model"],
                                                              chosen["priors"])}


@pytest.mark.parametrize("name, expected", [("mrmr+", "cv"), ("anchor-points++", "cv"),
                                            ("random++", "native"), ("irt-bayes", "native"),
                                            ("stack-mrmr", "native"), ("cat-fisher", "native")])
def test_auto_calibration_follows_what_the_method_is(name, expected):
    method = get_method(name)
    selector = method.make_selector(k=5)
    predictor = method.make_predictor()
    assert resolve_calibration("auto", method, selector, predictor) == expected
    assert resolve_calibration("native", method, selector, predictor) == "native"


@pytest.mark.parametrize("name, expected", [("metabench", "cv"), ("gp-irt", "cv"),
                                            ("mrmr++", "native"), ("anchor-points", "native")])
def test_auto_calibration_on_a_random_coreset_follows_the_predictor(name, expected):
    """On random items, ``"cv"`` only where the predictor's own interval is incomplete
    (metabench's GAM keeps the IRT fit in its jackknife+, gp-IRT's residuals are in
    sample); a ridge refit's jackknife+ and a mean's split conformal stay."""
    from coreval.pipeline import random_variant

    method, _ = random_variant(get_method(name), {})
    selector = method.make_selector(k=5)
    predictor = method.make_predictor()
    assert not selector.uses_source_models
    assert resolve_calibration("auto", method, selector, predictor) == expected


def test_a_single_out_of_fold_fold_warns_that_residuals_are_in_sample():
    rng = np.random.default_rng(3)
    y = rng.uniform(size=12)
    p = np.column_stack([y + rng.normal(0, 0.05, 12), np.full(12, 0.5)])
    stack = StackingPredictor(meta="nnls")
    stack.weights_, stack.intercept_ = stack_weights(p, y, "nnls")
    stack.clip_ = False
    with pytest.warns(UserWarning, match="one out-of-fold fold"):
        resid = stack._cross_fitted_residuals(p, y, np.zeros(12, dtype=int))
    np.testing.assert_allclose(resid, y - p @ stack.weights_ - stack.intercept_)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stack._cross_fitted_residuals(p, y, np.arange(12) % 3)


def test_the_folds_anchor_selectors_reuse_the_irt_model_chosen_on_all_sources(irt_fit_calls):
    """stack-irt-anchors: each fold's selector fits the choice too, instead of choosing."""
    m = simulate(n_models=24, n_items=40, seed=1).matrix
    calls = irt_fit_calls
    fitted = fit_method(get_method("stack-irt-anchors"), m, 8, seed=0, meta_folds=3,
                        selection="method", components=("mean", "gp-irt"), fit_method="map",
                        num_steps=300, num_draws=1, learning_rate=0.1)
    chosen = fitted.selector.resolved_options()
    assert chosen == fitted.predictor.resolved_options()
    assert len([c for c in calls if c[2] >= 19]) == 5  # the choice's 4 fits + the final one
    folds = [c for c in calls if c[2] <= 16]  # each fold: its 16 models and λ's 12
    assert len(folds) == 3 * 2 and {c[:2] for c in folds} == {(chosen["model"],
                                                              chosen["priors"])}
