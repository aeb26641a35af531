"""The misfit term's shape: its factor, the bank's use of it, the replay, and ``auto``."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from scipy.special import expit

from conftest import two_ability_matrix
from coreval.adaptive import ItemBank, estimate, init, update
from coreval.adaptive.estimate import fitted_moments, misfit_sd, score_moments
from coreval.adaptive.misfit import (
    MISFIT_SHAPES,
    misfit_factor,
    padded_paths,
    stopped_coverage,
    stopped_widths,
    width_stop_misfit,
)
from coreval.errors import ValidationError

FIT = {"fit_method": "map", "num_steps": 300, "num_draws": 30}


def test_misfit_factor_values_and_bounds():
    rho = np.array([1.0, 0.5, 0.5, 0.25, 0.0])
    m = np.array([0.5, 0.5, 0.1, 1.0, 0.3])
    np.testing.assert_allclose(misfit_factor("share", rho, m), rho)
    np.testing.assert_allclose(misfit_factor("bernoulli-sd", rho, m),
                               [1.0, 0.5, 0.5 * np.sqrt(0.36), 0.0, 0.0])
    np.testing.assert_allclose(misfit_factor("bernoulli-var", rho, m),
                               [1.0, 0.5, 0.5 * 0.36, 0.0, 0.0])
    # every shape is at most the share, and scores outside [0, 1] are clipped
    grid = np.linspace(-0.5, 1.5, 41)
    for shape in MISFIT_SHAPES:
        g = misfit_factor(shape, 0.7, grid)
        assert ((g >= 0) & (g <= 0.7 + 1e-12)).all()
    with pytest.raises(ValidationError, match="misfit shape must be one of share"):
        misfit_factor("logit", rho, m)


def _bank(n_items: int = 40, shift: float = 0.0, tau: float = 0.05,
          shape: str = "share") -> tuple[ItemBank, np.ndarray]:
    rng = np.random.default_rng(1)
    a, d = rng.lognormal(0.2, 0.3, n_items), rng.normal(shift, 0.8, n_items)
    bank = ItemBank(items=[f"q{i}" for i in range(n_items)], a=a, d=d, tau=tau,
                    misfit_shape=shape)
    y = (rng.random(n_items) < expit(a * 0.3 + d)).astype(float)
    return bank, y


@pytest.mark.parametrize("shape", MISFIT_SHAPES)
def test_the_bank_adds_tau_times_the_shape_factor(shape):
    """Variance with the misfit = variance without it + (τ g(ρ, m))², m the fitted mean;
    the interval's draws carry the same spread; nothing is left once all is answered."""
    bank, y = _bank(shape=shape)
    state = update(init(bank), [f"q{i}" for i in range(10)], y[:10])
    mean, var = fitted_moments(state)
    want = 0.05 * misfit_factor(shape, 30 / 40, mean)
    assert misfit_sd(state) == pytest.approx(float(want))
    assert score_moments(state) == pytest.approx((mean, var + float(want) ** 2))
    draws = estimate(state, num_draws=20000).draws[:, 0]
    assert draws.var() == pytest.approx(var + float(want) ** 2, rel=0.05)
    full = update(state, [f"q{i}" for i in range(10, 40)], y[10:])
    assert misfit_sd(full) == 0.0 and score_moments(full)[1] == pytest.approx(0.0, abs=1e-12)


def test_bernoulli_shapes_shrink_the_misfit_of_a_model_near_zero():
    """On items a model almost always fails the predicted score is near 0: the Bernoulli
    shapes leave a small share of ``τ ρ``, the share shape all of it."""
    bank, y = _bank(shift=-5.0)
    state = update(init(bank), ["q0", "q1"], y[:2])
    share = misfit_sd(state)
    assert share == pytest.approx(0.05 * 38 / 40)
    sd = misfit_sd(init(replace(bank, misfit_shape="bernoulli-sd")))
    var = misfit_sd(init(replace(bank, misfit_shape="bernoulli-var")))
    assert var < sd < 0.3 * 0.05
    with pytest.raises(ValidationError, match="misfit_shape must be one of"):
        replace(bank, misfit_shape="logit")


def test_width_stop_under_a_shape_is_replayed_from_tests_run_without_misfit():
    """Tests run with τ > 0 and the ``bernoulli-var`` shape stop exactly where the tests
    run to the budget with τ = 0 say they stop, once the shares are multiplied by the
    shape's factor: the replay that ``misfit_shape="auto"`` relies on."""
    import coreval

    source, target, truth = two_ability_matrix()
    tau, width = 0.2, 0.15
    stopped = coreval.select(source, "cat-score", 40, seed=0, width=width, tau=tau,
                             misfit_shape="bernoulli-var", **FIT)
    stopped.predict_array(target)
    assert stopped.predictor.bank_.misfit_shape == "bernoulli-var"
    full = coreval.select(source, "cat-score", 40, seed=0, tau=0.0, **FIT)
    full.predict_array(target)
    means, variances, shares = padded_paths(full.predictor.paths_,
                                            full.predictor.bank_.n_items + 1)
    scales = misfit_factor("bernoulli-var", shares, means)
    steps, _ = stopped_coverage(tau, truth, means, variances, scales, width=width)
    np.testing.assert_array_equal(steps, stopped.predictor.items_used_)
    # the share shape stops later: its misfit is never smaller
    share_steps, _ = stopped_coverage(tau, truth, means, variances, shares, width=width)
    assert (share_steps >= steps).all() and share_steps.mean() > steps.mean()


@pytest.mark.parametrize("spread", [1.0, 3.0])
def test_auto_keeps_the_calibrated_shape_that_asks_fewest_items(spread):
    """``misfit_shape="auto"`` learns τ per shape on the held-out source tests and keeps
    the one whose replayed stops ask the fewest items; recomputed here from the stored
    trajectories. Fixing that shape gives the same τ. The choice follows the data: the
    share shape with abilities of spread 1, a Bernoulli one with spread 3, where many
    models score near 0 or 1."""
    import coreval

    source, target, truth = two_ability_matrix(spread)
    width = 0.15
    auto = coreval.select(source, "cat-score", 40, seed=0, width=width,
                          misfit_shape="auto", **FIT)
    pred = auto.predict_array(target)
    assert (auto.predictor.misfit_shape_ == "share") == (spread == 1.0)
    found = auto.predictor.shape_criterion_
    assert set(found) == set(MISFIT_SHAPES)
    held_out, means, variances, shares = auto.predictor.misfit_paths_[1]
    for shape, (tau, items, mean_width) in found.items():
        scales = misfit_factor(shape, shares, means)
        assert tau == pytest.approx(width_stop_misfit(held_out, means, variances, scales,
                                                      width=width))
        steps, covered = stopped_coverage(tau, held_out, means, variances, scales,
                                          width=width)
        need = np.ceil((len(held_out) + 1) * 0.9)
        assert covered.sum() >= min(need, len(held_out))
        assert items == pytest.approx(steps.mean())
        assert mean_width == pytest.approx(stopped_widths(tau, variances, scales,
                                                          steps).mean())
    best = min(MISFIT_SHAPES, key=lambda s: (found[s][1], found[s][2],
                                             MISFIT_SHAPES.index(s)))
    assert auto.predictor.misfit_shape_ == best
    assert auto.predictor.tau_ == found[best][0]
    assert auto.predictor.bank_.misfit_shape == best
    assert np.mean((pred.lower <= truth) & (truth <= pred.upper)) >= 0.8
    fixed = coreval.select(source, "cat-score", 40, seed=0, width=width, misfit_shape=best,
                           **FIT)
    assert fixed.predictor.tau_ == pytest.approx(auto.predictor.tau_)
    assert fixed.predictor.shape_criterion_ is None


@pytest.mark.parametrize("spread", [1.0, 3.0])
def test_auto_without_width_keeps_the_narrowest_calibrated_interval(spread):
    """At a fixed budget ``auto`` keeps the narrowest mean interval among the shapes, each
    calibrated on the held-out source tests (share with spread 1, bernoulli-sd with 3)."""
    import coreval

    source, _, _ = two_ability_matrix(spread)
    auto = coreval.select(source, "cat-fisher", 8, seed=0, misfit_shape="auto", **FIT)
    found = auto.predictor.shape_criterion_
    rmse = {values[1] for values in found.values()}
    assert len(rmse) == 1  # τ does not move the estimate, so the RMSE is the same
    assert auto.predictor.misfit_shape_ == min(
        MISFIT_SHAPES, key=lambda s: (found[s][2], MISFIT_SHAPES.index(s)))
    assert (auto.predictor.misfit_shape_ == "share") == (spread == 1.0)
    assert all(values[0] > 0 for values in found.values())


def test_misfit_shape_errors_are_named():
    from typer.testing import CliRunner

    import coreval
    from coreval.cli import app

    source, _, _ = two_ability_matrix()
    with pytest.raises(ValidationError, match="misfit_shape='auto' needs tau='cv'"):
        coreval.select(source, "cat-fisher", 8, seed=0, tau=0.0, misfit_shape="auto", **FIT)
    with pytest.raises(ValidationError, match="misfit_shape must be one of share"):
        coreval.select(source, "cat-fisher", 8, seed=0, misfit_shape="logit", **FIT)
    result = CliRunner().invoke(app, ["adapt", "lsat", "--responses", "x.csv",
                                      "--misfit-shape", "logit"])
    assert result.exit_code != 0
    assert "--misfit-shape must be share, bernoulli-sd, bernoulli-var or auto" in result.output
