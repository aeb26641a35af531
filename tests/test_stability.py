"""Nogueira et al. (2018) Φ̂ and Hamming stability against hand computations."""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pytest

from coreval.errors import ValidationError
from coreval.harness.stability import hamming_stability, nogueira_stability, selection_matrix


def test_identical_selections_are_perfectly_stable():
    z = np.array([[1, 1, 0, 0, 1]] * 4)
    assert nogueira_stability(z) == pytest.approx(1.0)
    assert hamming_stability(z) == pytest.approx(1.0)


def test_hand_computed_two_runs():
    # p = (1, .5, .5, 0); s² = 2 p (1 - p) = (0, .5, .5, 0); mean 0.25; k̄/d = .5 -> Φ = 0
    z = np.array([[1, 1, 0, 0], [1, 0, 1, 0]])
    assert nogueira_stability(z) == pytest.approx(0.0)
    assert hamming_stability(z) == pytest.approx(0.5)
    # disjoint halves: s² = 0.5 everywhere -> Φ = 1 - 0.5 / 0.25 = -1 (the minimum for M = 2)
    z = np.array([[1, 1, 0, 0], [0, 0, 1, 1]])
    assert nogueira_stability(z) == pytest.approx(-1.0)
    assert hamming_stability(z) == pytest.approx(0.0)


def test_varying_sizes_hand_computed():
    # M = 3, d = 4; sizes 1, 2, 3 -> k̄ = 2; p = (1, 2/3, 1/3, 0)
    z = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]])
    p = np.array([1, 2 / 3, 1 / 3, 0])
    s2 = 1.5 * p * (1 - p)
    expected = 1 - s2.mean() / (0.5 * 0.5)
    assert nogueira_stability(z) == pytest.approx(expected)
    # Hamming distances: (0,1) 1, (0,2) 2, (1,2) 1 over d = 4
    assert hamming_stability(z) == pytest.approx(1 - (1 + 2 + 1) / 12)


def _kuncheva(a, b, k, d):
    r = np.sum(a & b)
    return (r * d - k * k) / (k * (d - k))


def test_fixed_size_equals_mean_pairwise_kuncheva(rng):
    # For a constant selection size Φ̂ equals the mean pairwise Kuncheva index.
    d, k, m = 30, 7, 6
    z = np.zeros((m, d), bool)
    for i in range(m):
        z[i, rng.choice(d, k, replace=False)] = True
    z[1] = z[0]  # make some overlap
    ref = np.mean([_kuncheva(z[i], z[j], k, d) for i, j in combinations(range(m), 2)])
    assert nogueira_stability(z) == pytest.approx(ref)


def test_random_selections_have_expectation_zero():
    rng = np.random.default_rng(0)
    d, k, m, reps = 50, 10, 5, 400
    phis = []
    for _ in range(reps):
        z = np.zeros((m, d), bool)
        for i in range(m):
            z[i, rng.choice(d, k, replace=False)] = True
        phis.append(nogueira_stability(z))
    phis = np.array(phis)
    # mean within 4 standard errors of 0
    assert abs(phis.mean()) < 4 * phis.std(ddof=1) / np.sqrt(reps)


def test_selection_matrix_and_errors():
    z = selection_matrix([[0, 2], [2, 3]], 4)
    assert z.tolist() == [[True, False, True, False], [False, False, True, True]]
    with pytest.raises(ValidationError, match="outside"):
        selection_matrix([[5]], 4)
    with pytest.raises(ValidationError, match="at least 2 runs"):
        nogueira_stability(np.ones((1, 3)))
    with pytest.raises(ValidationError, match="binary"):
        nogueira_stability(np.array([[0, 2], [1, 0]]))
    with pytest.raises(ValidationError, match="2-D"):
        hamming_stability(np.ones(3))
    assert np.isnan(nogueira_stability(np.zeros((3, 4))))  # nothing selected: undefined
    assert np.isnan(nogueira_stability(np.ones((3, 4))))   # everything selected
