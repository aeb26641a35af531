"""The blend of two completers whose weight is validated on simulated sparse rows."""

from __future__ import annotations

import numpy as np
import pytest

from coreval.errors import ValidationError
from coreval.lowrank import Completion, complete_bias_als
from coreval.lowrank.blend import (
    choose_blend_weight,
    column_spread,
    complete_blend,
    reveal_cells,
    sparse_row_interval,
)


def matrix(rng, n_rows=30, n_cols=20, observed=0.8):
    """Percentage scores with a low-rank logit and some missing cells."""
    logit = (rng.normal(0, 0.8, n_rows)[:, None] + rng.normal(0, 0.8, n_cols)[None, :]
             + rng.normal(0, 1, (n_rows, 2)) @ rng.normal(0, 0.6, (2, n_cols))
             + rng.normal(0, 0.05, (n_rows, n_cols)))
    full = 100 / (1 + np.exp(-logit))
    return full, np.where(rng.random(full.shape) < observed, full, np.nan)


def test_reveal_cells_keeps_k_cells_of_each_row_and_hides_the_rest(rng):
    _, values = matrix(rng)
    rows = [3, 7, 11]
    train, hidden = reveal_cells(values, rows, 4, np.random.default_rng(0))
    obs = ~np.isnan(values)
    kept = ~np.isnan(train)
    assert (kept[rows].sum(axis=1) == 4).all()
    assert (kept <= obs).all()  # nothing unobserved appears
    others = np.setdiff1d(np.arange(values.shape[0]), rows)
    assert np.array_equal(kept[others], obs[others])
    assert np.array_equal(hidden, obs & ~kept)  # every column keeps other rows' cells
    again, _ = reveal_cells(values, rows, 4, np.random.default_rng(0))
    assert np.array_equal(np.isnan(again), np.isnan(train))


def test_reveal_cells_leaves_out_hidden_cells_of_columns_with_no_other_score():
    values = np.array([[10.0, 20.0, 30.0], [40.0, np.nan, 60.0], [70.0, np.nan, 90.0]])
    # row 0 is the only one scored on column 1: when it is hidden, nothing predicts it
    for seed in range(10):
        train, hidden = reveal_cells(values, [0], 1, np.random.default_rng(seed))
        assert not hidden[:, 1].any()
        assert np.array_equal(hidden[0, [0, 2]], np.isnan(train[0, [0, 2]]))
        assert not hidden[1:].any()


@pytest.mark.parametrize("rows, k, message", [
    ([0], 0, "positive integer"),
    ([], 2, "at least one row"),
    ([0, 0], 2, "distinct"),
    ([99], 2, "distinct indices below"),
    ([0], 25, "no more than k = 25"),
])
def test_reveal_cells_rejects_bad_requests(rng, rows, k, message):
    _, values = matrix(rng)
    with pytest.raises(ValidationError, match=message):
        reveal_cells(values, rows, k, rng)


def test_choose_blend_weight_by_hand():
    truth = np.array([0.0, 10.0, 20.0, 30.0])
    weight, medae = choose_blend_weight(truth + 3.0, truth - 1.0, truth, (0.0, 0.5, 0.75, 1.0))
    assert weight == 0.75  # 0.25 * 3 + 0.75 * (-1) = 0
    assert np.allclose(medae, [3.0, 1.0, 0.0, 1.0])


@pytest.mark.parametrize("args, message", [
    ((np.ones(3), np.ones(2), np.ones(3)), "same non-empty"),
    ((np.array([1.0, np.nan]), np.ones(2), np.ones(2)), "finite"),
    ((np.ones(2), np.ones(2), np.ones(2), (0.5, 1.5)), r"\[0, 1\]"),
])
def test_choose_blend_weight_rejects_bad_input(args, message):
    with pytest.raises(ValidationError, match=message):
        choose_blend_weight(*args)


@pytest.mark.parametrize("options, message", [
    ({"weights": (0.5, 1.5)}, r"\[0, 1\]"),
    ({"weights": ()}, "non-empty"),
    ({"level": 1.0}, r"level must lie in \(0, 1\)"),
    ({"validation_rows": [0], "k_reveal": 40}, "no more than k = 40"),
    ({"n_draws": 0}, "n_draws must be a positive integer"),
    ({"n_draws": 2.0}, "n_draws must be a positive integer"),
    ({"n_draws": True}, "n_draws must be a positive integer"),
])
def test_complete_blend_rejects_bad_options_before_fitting(rng, options, message):
    _, values = matrix(rng)
    calls = []

    def completer(train):
        calls.append(1)
        return complete_bias_als(train, n_ensemble=1)

    with pytest.raises(ValidationError, match=message):
        complete_blend(values, completer, completer, **{"validation_rows": [0, 1], **options})
    assert not calls


def test_complete_blend_validates_on_sparse_rows_then_blends_full_fits(rng):
    full, values = matrix(rng)
    seen = []

    def fake(offset):
        def complete(train):
            seen.append((offset, (~np.isnan(train)).sum(axis=1)))
            nan = np.full_like(full, np.nan)
            return Completion(full + offset, nan, nan, "none")
        return complete

    rows = [0, 1, 2, 3, 4]
    comp = complete_blend(values, fake(3.0), fake(-1.0), validation_rows=rows, k_reveal=5,
                          n_draws=1, weights=(0.0, 0.25, 0.5, 0.75, 1.0))
    assert comp.details["weight"] == 0.75
    assert comp.details["medae"]["0.75"] == pytest.approx(0.0, abs=1e-12)
    assert np.allclose(comp.mean, full)  # 0.25 (full + 3) + 0.75 (full - 1)
    first_fit, second_fit = comp.details["components"]
    assert np.allclose(first_fit.mean, full + 3.0) and np.allclose(second_fit.mean, full - 1.0)
    # the chosen blend has no validation error, so the conformal interval has no width
    assert comp.interval == "conformal" and np.allclose(comp.upper - comp.lower, 0.0)
    # each completer runs once on the sparse rows, then once on the matrix as given
    assert [o for o, _ in seen] == [3.0, -1.0, 3.0, -1.0]
    assert (seen[0][1][rows] == 5).all()
    assert np.array_equal(seen[2][1], (~np.isnan(values)).sum(axis=1))


def test_complete_blend_pools_the_errors_of_several_draws(rng):
    """Each draw reveals other cells; the weight minimises the median |error| of all draws'
    hidden cells pooled, and the first draw is the single-draw validation's."""
    full, values = matrix(rng)
    trains = []

    def fake(offset):
        def complete(train):
            trains.append(~np.isnan(train))
            # the error depends on the draw: rows that reveal column 0 are predicted worse
            bump = np.where(~np.isnan(train[:, :1]), 4.0 * offset, 0.0)
            nan = np.full_like(full, np.nan)
            return Completion(full + offset + bump, nan, nan, "none")
        return complete

    rows = [0, 1, 2, 3, 4, 5]
    single = complete_blend(values, fake(3.0), fake(-1.0), validation_rows=rows,
                            k_reveal=5, n_draws=1, weights=(0.0, 0.25, 0.5, 0.75, 1.0),
                            seed=4)
    first_draw = trains[0]
    trains.clear()
    comp = complete_blend(values, fake(3.0), fake(-1.0), validation_rows=rows, k_reveal=5,
                          n_draws=3, weights=(0.0, 0.25, 0.5, 0.75, 1.0), seed=4)
    # three validation draws of each completer, then the two final fits
    assert len(trains) == 3 * 2 + 2
    validation = trains[0:6:2]
    assert np.array_equal(validation[0], first_draw)
    assert not np.array_equal(validation[0][rows], validation[1][rows])
    assert comp.details["n_validation_cells"] == sum(
        int((~np.isnan(values[rows]) & ~v[rows]).sum()) for v in validation)
    assert len(comp.details["draw_weights"]) == 3
    assert single.details["draw_weights"] == [single.details["weight"]]
    # the pooled choice by hand
    a, b, t = [], [], []
    for v in validation:
        hid = ~np.isnan(values) & ~v
        hid[np.setdiff1d(np.arange(values.shape[0]), rows)] = False
        bump = np.where(v[:, :1], 4.0, 0.0)
        a.append((full + 3.0 + 3.0 * bump)[hid])
        b.append((full - 1.0 - 1.0 * bump)[hid])
        t.append(values[hid])
    expect, medae = choose_blend_weight(np.concatenate(a), np.concatenate(b),
                                        np.concatenate(t), (0.0, 0.25, 0.5, 0.75, 1.0))
    assert comp.details["weight"] == expect
    assert np.allclose(list(comp.details["medae"].values()), medae)


def test_complete_blend_prefers_the_completer_that_predicts_sparse_rows(rng):
    """Low-rank rows: Bias-ALS with lambda 0.1 recovers a sparse row from 5 cells, one with
    lambda 300 shrinks it to the column means; the validated weight follows, and the blend
    predicts new sparse rows about as well as the better completer."""
    full, values = matrix(rng, n_rows=50, n_cols=30, observed=0.9)
    new = np.arange(40, 50)
    test, hidden = reveal_cells(values, new, 5, np.random.default_rng(1))
    good = lambda tr: complete_bias_als(tr, lam=0.1, n_ensemble=2)  # noqa: E731
    poor = lambda tr: complete_bias_als(tr, lam=300.0, n_ensemble=2)  # noqa: E731
    comp = complete_blend(test, poor, good, validation_rows=np.arange(30, 40), k_reveal=5)
    assert comp.details["weight"] >= 0.7, comp.details
    err = {name: np.median(np.abs(f(test).mean - full)[hidden])
           for name, f in (("good", good), ("poor", poor))}
    blended = np.median(np.abs(comp.mean - full)[hidden])
    assert err["good"] < 0.7 * err["poor"], err
    assert blended < 1.15 * err["good"], (blended, err)
    # new rows exchangeable with the validation rows: the conformal interval covers ~90 %
    inside = (comp.lower <= full) & (full <= comp.upper)
    assert 0.8 <= inside[hidden].mean() <= 0.98, inside[hidden].mean()


def test_sparse_row_interval_by_hand():
    values = np.array([[0.0, 1000.0], [10.0, 1200.0], [20.0, np.nan]])
    spread = column_spread(values)
    assert np.allclose(spread, [np.std([0, 10, 20]), 100.0])
    # scores |r| / s: 0.1, 0.2, ..., 1.0 (ten cells of column 1); at level 0.8 the
    # ceil(11 * 0.8) = 9th smallest, 0.9
    residuals = np.arange(1, 11) * 10.0
    mean = np.array([[5.0, 1100.0], [99.0, 1150.0], [1.0, 1300.0]])
    lower, upper = sparse_row_interval(mean, values, residuals, np.ones(10, dtype=int), 0.8)
    q = 0.9
    assert np.allclose(upper[:, 1] - mean[:, 1], q * 100.0)  # a rating column: no clipping
    assert np.allclose(lower[:, 1], mean[:, 1] - q * 100.0)
    assert np.allclose(upper[:, 0], np.minimum(mean[:, 0] + q * spread[0], 100.0))
    assert np.allclose(lower[:, 0], np.maximum(mean[:, 0] - q * spread[0], 0.0))
    assert upper[1, 0] == 100.0 and lower[2, 0] == 0.0
    # an empty or constant column has spread 1
    assert np.allclose(column_spread(np.array([[np.nan, 3.0], [np.nan, 3.0]])), [1.0, 1.0])
