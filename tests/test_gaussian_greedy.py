"""Greedy entropy / MI / variance selection: closed forms, the direct O(kN^3) procedure, costs."""

from __future__ import annotations

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from coreval.errors import ValidationError
from coreval.gaussian.greedy import (
    exchange_variance,
    greedy_entropy,
    greedy_mi,
    greedy_mi_direct,
    greedy_variance,
    residual_variance,
    set_value,
)


def _corr(rng: np.random.Generator, n: int, rank: int | None = None,
          jitter: float = 0.1) -> np.ndarray:
    a = rng.normal(size=(n, rank or n))
    s = a @ a.T + jitter * np.eye(n)
    d = 1 / np.sqrt(np.diag(s))
    return s * np.outer(d, d)


def _cond_var(cov: np.ndarray, v: int, given: list[int]) -> float:
    if not given:
        return float(cov[v, v])
    g = np.asarray(given)
    return float(cov[v, v] - cov[v, g] @ np.linalg.solve(cov[np.ix_(g, g)], cov[g, v]))


def test_entropy_is_greedy_max_conditional_variance(rng):
    for _ in range(20):
        n = int(rng.integers(4, 25))
        cov = _corr(rng, n) * rng.uniform(0.5, 2.0, n)[:, None] ** 0  # correlation
        scale = rng.uniform(0.5, 2.0, n)
        cov = cov * np.outer(scale, scale)
        res = greedy_entropy(cov, min(n, 8))
        chosen: list[int] = []
        for j in res.selected:
            rest = [v for v in range(n) if v not in chosen]
            variances = [_cond_var(cov, v, chosen) for v in rest]
            assert _cond_var(cov, j, chosen) == pytest.approx(max(variances), rel=1e-8)
            chosen.append(int(j))
        # residual variance after the last pick, closed form
        assert res.residual_variance[-1] == pytest.approx(
            residual_variance(cov, chosen, ridge=0.0), rel=1e-6, abs=1e-10)


def test_entropy_first_pick_tie_break_is_lowest_index():
    rng = np.random.default_rng(0)
    corr = _corr(rng, 10)
    noisy = corr.copy()
    np.fill_diagonal(noisy, 1.0)
    noisy[6, 6] = np.nextafter(1.0, 2.0)  # 1 + 2.2e-16, as rounding leaves it in the reference
    noisy[2, 2] = np.nextafter(1.0, 0.0)
    assert greedy_entropy(noisy, 1).selected[0] == 0
    assert greedy_entropy(noisy, 1, tie_tol=0.0).selected[0] == 6  # plain argmax


def test_mi_fast_equals_direct_on_many_matrices():
    rng = np.random.default_rng(1)
    for _ in range(60):
        n = int(rng.integers(3, 40))
        corr = _corr(rng, n, rank=int(rng.integers(1, n + 1)),
                     jitter=float(10 ** rng.uniform(-6, 0)))
        k = int(rng.integers(1, n + 1))
        with threadpool_limits(1):  # small matrices: threads only add contention
            fast, direct = greedy_mi(corr, k), greedy_mi_direct(corr, k)
        np.testing.assert_array_equal(fast.selected, direct.selected)
        np.testing.assert_allclose(fast.gains, direct.gains, rtol=1e-6, atol=1e-8)


def test_mi_pick_maximises_the_mi_gain(rng):
    corr = _corr(rng, 12, rank=6)
    res = greedy_mi(corr, 5)
    chosen: list[int] = []
    for j in res.selected:
        rest = [v for v in range(12) if v not in chosen]
        gains = [set_value(corr, [*chosen, v], "mi") - set_value(corr, chosen, "mi")
                 for v in rest]
        assert rest[int(np.argmax(gains))] == j
        chosen.append(int(j))


def test_variance_pick_maximises_the_explained_variance(rng):
    """Each pick is the brute-force argmax of the drop of sum_j Var(j | S), computed by solves."""
    for _ in range(15):
        n = int(rng.integers(4, 20))
        cov = _corr(rng, n, rank=int(rng.integers(1, n + 1)), jitter=0.05)
        cov = cov * np.outer(*(2 * [rng.uniform(0.5, 2, n)]))
        res = greedy_variance(cov, min(n, 6))
        chosen: list[int] = []
        for j, gain in zip(res.selected, res.gains, strict=True):
            total = sum(_cond_var(cov, v, chosen) for v in range(n) if v not in chosen)
            rest = [v for v in range(n) if v not in chosen]
            drops = [total - sum(_cond_var(cov, u, [*chosen, v]) for u in range(n)
                                 if u not in (*chosen, v)) for v in rest]
            assert gain == pytest.approx(max(drops), rel=1e-6)
            assert rest[int(np.argmax(drops))] == j
            chosen.append(int(j))
        assert set_value(cov, chosen, "variance") == pytest.approx(
            np.trace(cov) - total + max(drops), rel=1e-6)
        assert res.residual_variance[-1] == pytest.approx(
            residual_variance(cov, chosen, ridge=0.0), rel=1e-6, abs=1e-10)


def test_variance_with_an_observed_mask_is_the_expected_posterior_variance(rng):
    """Mask given: each pick minimises sum over rows of the targets' conditional variance
    given the picks the row has (brute force per row); a full mask gives the plain picks."""
    n = 9
    cov = _corr(rng, n, rank=4, jitter=0.1)
    observed = rng.random((25, n)) < 0.6
    observed[:, 2] = False
    observed[:2, 2] = True  # column 2: reported by 2 of 25 rows
    res = greedy_variance(cov, 4, observed=observed)
    chosen: list[int] = []

    def expected(picks: list[int]) -> float:
        total = 0.0
        for row in observed:
            given = [p for p in picks if row[p]]
            total += sum(_cond_var(cov, t, given) for t in np.flatnonzero(row)
                         if t not in picks)
        return total

    for j in res.selected:
        rest = [v for v in range(n) if v not in chosen]
        values = [expected([*chosen, v]) for v in rest]
        assert rest[int(np.argmin(values))] == j
        chosen.append(int(j))
    # each mandatory prefix reports its own residual variance
    with_mandatory = greedy_variance(cov, 4, observed=observed, mandatory=[2, 5])
    np.testing.assert_allclose(with_mandatory.residual_variance[:2],
                               [expected([2]) / expected([]), expected([2, 5]) / expected([])])
    full = greedy_variance(cov, 4, observed=np.ones((3, n), dtype=bool))
    np.testing.assert_array_equal(full.selected, greedy_variance(cov, 4).selected)
    with pytest.raises(ValidationError, match="costs"):
        greedy_variance(cov, 2, observed=observed, costs=np.ones(n), budget=2.0)
    with pytest.raises(ValidationError, match="columns"):
        greedy_variance(cov, 2, observed=observed[:, :4])


def _total_cond_var(cov: np.ndarray, picks: list[int], observed=None) -> float:
    rows = np.ones((1, cov.shape[0]), dtype=bool) if observed is None else observed
    total = 0.0
    for row in rows:
        given = [p for p in picks if row[p]]
        total += sum(_cond_var(cov, t, given) for t in np.flatnonzero(row) if t not in picks)
    return total


@pytest.mark.parametrize("masked", [False, True])
def test_exchange_reaches_a_swap_local_optimum_no_worse_than_greedy(rng, masked):
    """Against brute force: no single swap improves the exchanged set, it is never worse
    than greedy, and on some of these covariances it is strictly better."""
    strictly_better = 0
    for _ in range(25):
        n = int(rng.integers(6, 11))
        cov = _corr(rng, n, rank=int(rng.integers(2, n)), jitter=0.05)
        observed = rng.random((12, n)) < 0.7 if masked else None
        k = int(rng.integers(2, 5))
        start = greedy_variance(cov, k, observed=observed).selected
        res = exchange_variance(cov, start, observed=observed)
        picks = [int(j) for j in res.selected]
        value = _total_cond_var(cov, picks, observed)
        greedy_value = _total_cond_var(cov, [int(j) for j in start], observed)
        assert value <= greedy_value * (1 + 1e-9) and res.rule == "exchange"
        strictly_better += value < greedy_value * (1 - 1e-6)
        for i in range(k):
            for c in set(range(n)) - set(picks):
                swapped = [*picks[:i], c, *picks[i + 1:]]
                assert _total_cond_var(cov, swapped, observed) >= value * (1 - 1e-8)
        # the prefixes' residuals and gains describe the returned order
        base = _total_cond_var(cov, [], observed)
        np.testing.assert_allclose(res.residual_variance[-1], value / base, rtol=1e-6)
        np.testing.assert_allclose(res.gains.sum(), base - value, rtol=1e-6)
    assert strictly_better > 0


def test_exchange_keeps_mandatory_picks_and_the_budget(rng):
    n = 9
    cov = _corr(rng, n, rank=3, jitter=0.05)
    res = exchange_variance(cov, greedy_variance(cov, 4, mandatory=[7]).selected,
                            mandatory=[7])
    assert res.selected[0] == 7 and np.isnan(res.gains[0])
    costs = np.arange(1.0, n + 1)
    start = greedy_variance(cov, 3, costs=costs, budget=12.0).selected
    res = exchange_variance(cov, start, costs=costs, budget=12.0)
    assert costs[res.selected].sum() <= 12.0
    assert _total_cond_var(cov, list(res.selected)) <= _total_cond_var(cov, list(start)) + 1e-9
    with pytest.raises(ValidationError, match="start with the mandatory"):
        exchange_variance(cov, [1, 7], mandatory=[7])
    with pytest.raises(ValidationError, match="distinct"):
        exchange_variance(cov, [1, 1])


def test_variance_prefers_the_hub_that_entropy_skips():
    """A column correlated with all others explains most variance; entropy picks a loner."""
    n = 6
    cov = np.eye(n)
    cov[0, 1:4] = cov[1:4, 0] = 0.8  # column 0 predicts 1-3
    cov[1:4, 1:4] += 0.6 * (1 - np.eye(3))
    cov[5, 5] = 1.5  # the largest variance, uncorrelated: entropy's first pick
    assert greedy_entropy(cov, 1).selected[0] == 5
    assert greedy_variance(cov, 1).selected[0] == 0


def test_lazy_entropy_equals_eager(rng):
    for _ in range(30):
        n = int(rng.integers(3, 40))
        cov = _corr(rng, n) * np.outer(*(2 * [rng.uniform(0.5, 2, n)]))
        k = int(rng.integers(1, n + 1))
        eager = greedy_entropy(cov, k, tie_tol=0.0)
        lazy = greedy_entropy(cov, k, lazy=True)
        np.testing.assert_array_equal(eager.selected, lazy.selected)
        assert lazy.residual_variance[-1] == pytest.approx(eager.residual_variance[-1],
                                                           abs=1e-8)
    for lazy in (False, True):  # the same error on both paths
        with pytest.raises(ValidationError, match="3 mandatory benchmarks exceed k=2"):
            greedy_entropy(np.eye(5), 2, mandatory=[0, 1, 2], lazy=lazy)


def test_mandatory_benchmarks_come_first(rng):
    corr = _corr(rng, 10)
    for fn in (greedy_entropy, greedy_mi):
        res = fn(corr, 4, mandatory=[7, 2])
        assert list(res.selected[:2]) == [7, 2] and len(set(res.selected)) == 4
    np.testing.assert_array_equal(greedy_mi(corr, 4, mandatory=[7, 2]).selected,
                                  greedy_mi_direct(corr, 4, mandatory=[7, 2]).selected)


def test_costs_validation(rng):
    corr = _corr(rng, 5)
    with pytest.raises(ValidationError, match="positive"):
        greedy_mi(corr, 3, costs=[1, 1, -1, 1, 1], budget=3)
    with pytest.raises(ValidationError, match="cheapest"):
        greedy_mi(corr, 3, costs=[2, 2, 2, 2, 2], budget=1)
    with pytest.raises(ValidationError, match="budget"):
        greedy_mi(corr, 3, costs=[1, 1, 1, 1, 1])
    with pytest.raises(ValidationError, match="mandatory"):
        greedy_mi(corr, 3, costs=[5, 1, 1, 1, 1], budget=2, mandatory=[0])
    with pytest.raises(ValidationError, match="6 costs for 5"):
        greedy_entropy(corr, 3, costs=[1] * 5 + [1], budget=2)


def test_cost_effective_greedy_respects_budget_and_uniform_costs_match_plain(rng):
    corr = _corr(rng, 15, rank=5)
    costs = rng.uniform(0.5, 3.0, 15)
    res = greedy_mi(corr, 15, costs=costs, budget=4.0)
    assert costs[res.selected].sum() <= 4.0 + 1e-9
    plain = greedy_mi(corr, 4)
    uniform = greedy_mi(corr, 15, costs=np.ones(15), budget=4.0)
    np.testing.assert_array_equal(uniform.selected[:4], plain.selected)


def test_best_singleton_beats_cost_effective_when_it_should():
    # 0 and 1 are strongly correlated but expensive; (2, 3) and (4, 5) weakly, and cheap:
    # the gain/cost rule spends on 2 and 4 (MI 0.094) and can then not afford 0 (MI 1.16)
    corr = np.eye(6)
    for i, j, r in ((0, 1, 0.95), (2, 3, 0.3), (4, 5, 0.3)):
        corr[i, j] = corr[j, i] = r
    costs = np.array([100.0, 100.0, 1.0, 1.0, 1.0, 1.0])
    res = greedy_mi(corr, 6, costs=costs, budget=100.0)
    assert res.rule == "best-singleton" and list(res.selected) == [0]
    assert set_value(corr, [0], "mi") > set_value(corr, [2, 4], "mi")


def test_set_values_closed_form(rng):
    corr = _corr(rng, 6)
    s = [1, 4]
    ent = 0.5 * (2 * np.log(2 * np.pi * np.e) + np.linalg.slogdet(corr[np.ix_(s, s)])[1])
    assert set_value(corr, s, "entropy") == pytest.approx(ent)
    c = [0, 2, 3, 5]
    mi = 0.5 * (np.linalg.slogdet(corr[np.ix_(s, s)])[1]
                + np.linalg.slogdet(corr[np.ix_(c, c)])[1] - np.linalg.slogdet(corr)[1])
    assert set_value(corr, s, "mi") == pytest.approx(mi)


@pytest.mark.parametrize("rule", [greedy_mi, greedy_mi_direct, greedy_entropy, greedy_variance])
def test_a_singular_covariance_still_gives_distinct_picks(rule):
    # three copies of one benchmark and an independent one: once a copy is chosen the
    # other copies add nothing (every MI gain is -inf), but each is still picked once
    cov = np.array([[1, 1, 1, 0], [1, 1, 1, 0], [1, 1, 1, 0], [0, 0, 0, 1.0]])
    picks = rule(cov, 4).selected
    assert sorted(picks.tolist()) == [0, 1, 2, 3]


def test_bad_inputs():
    with pytest.raises(ValidationError, match="square"):
        greedy_mi(np.ones((3, 4)), 1)
    with pytest.raises(ValidationError, match="k=5"):
        greedy_entropy(np.eye(3), 5)
    with pytest.raises(ValidationError, match="k must be a positive integer"):
        greedy_entropy(np.eye(3), 2.0)
    with pytest.raises(ValidationError, match="symmetric"):
        greedy_entropy(np.array([[1.0, 0.5], [0.1, 1.0]]), 1)


@pytest.mark.shared
def test_mi_fast_equals_direct_on_mteb_fold(load_shared):
    from coreval.gaussian.correlation import estimate_correlation

    values = load_shared("mteb").values
    folds = np.array_split(np.random.default_rng(42).permutation(len(values)), 10)
    corr = estimate_correlation(values[np.concatenate(folds[:9])], min_observed=1).correlation
    with threadpool_limits(1):
        np.testing.assert_array_equal(greedy_mi(corr, 15).selected,
                                      greedy_mi_direct(corr, 15).selected)


def test_budgeted_selection_fills_k_where_gains_turn_negative(rng):
    # small variances (raw accuracies): differential-entropy gains are negative from the
    # start; strongly correlated columns: later entropy and MI gains are negative too
    a = rng.normal(size=(5, 8))
    small = a @ a.T / 8 * 0.01
    assert len(greedy_entropy(small, 3, costs=np.ones(5), budget=3).selected) == 3
    np.testing.assert_array_equal(
        greedy_entropy(small, 3, costs=np.ones(5), budget=3).selected,
        greedy_entropy(small, 3).selected)
    z = rng.normal(size=(200, 1))
    corr = np.corrcoef((z + 0.15 * rng.normal(size=(200, 6))).T)
    for fn in (greedy_entropy, greedy_mi):
        np.testing.assert_array_equal(fn(corr, 4, costs=np.ones(6), budget=4).selected,
                                      fn(corr, 4).selected)


def test_budgeted_selection_keeps_k_when_the_mandatory_fill_it(rng):
    a = rng.normal(size=(5, 5))
    cov = a @ a.T
    for fn in (greedy_entropy, greedy_mi, greedy_variance):
        res = fn(cov, 2, mandatory=[0, 1], costs=np.ones(5), budget=10)
        np.testing.assert_array_equal(res.selected, [0, 1])


def test_k_is_checked_on_every_path():
    with pytest.raises(ValidationError, match="k=6"):
        greedy_mi_direct(np.eye(5), 6)
    with pytest.raises(ValidationError, match="exceed k=1"):
        greedy_mi_direct(np.eye(5), 1, mandatory=[0, 1])
    with pytest.raises(ValidationError, match="k"):
        greedy_entropy(np.eye(5), 2.5, lazy=True)


def test_pick_ignores_nan_gains_and_prefers_an_infinite_one():
    from coreval.gaussian.greedy import _pick

    free = np.ones(4, dtype=bool)
    assert _pick(np.array([1.0, np.nan, 3.0, 2.0]), 0.0, free) == 2
    assert _pick(np.array([1.0, np.nan, 3.0, 2.0]), 1e-9, free) == 2
    assert _pick(np.array([1.0, np.inf, 3.0, np.inf]), 0.0, free) == 1
    assert _pick(np.full(4, np.nan), 0.0, np.array([False, True, True, False])) == 1
