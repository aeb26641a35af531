"""Fisher information of 2PL/3PL items against finite differences of the log-likelihood."""

from __future__ import annotations

import numpy as np
import pytest

from coreval.errors import ValidationError
from coreval.irt.information import (
    directional_information,
    icc,
    information_trace,
    item_information,
    standard_error,
)
from coreval.irt.information import (
    test_information as total_information,
)


def _loglik(theta, y, a, d, c=None):
    """Bernoulli log-likelihood of one response y per item, written independently."""
    z = np.atleast_2d(theta) @ np.atleast_2d(a).T + d if np.ndim(a) == 2 else theta * a + d
    p = 1.0 / (1.0 + np.exp(-z))
    if c is not None:
        p = c + (1.0 - c) * p
    return y * np.log(p) + (1.0 - y) * np.log(1.0 - p)


def _fd_fisher_1d(theta, a, d, c=None, h=1e-3):
    """E_y[-d^2 l / d theta^2] with the second derivative by central differences."""
    out = np.zeros((theta.size, a.size))
    for k, t in enumerate(theta):
        p1 = 1.0 / (1.0 + np.exp(-(a * t + d)))
        p = p1 if c is None else c + (1.0 - c) * p1
        for y, prob in ((1.0, p), (0.0, 1.0 - p)):
            second = (_loglik(t + h, y, a, d, c) - 2 * _loglik(t, y, a, d, c)
                      + _loglik(t - h, y, a, d, c)) / h**2
            out[k] += prob * (-second)
    return out


@pytest.fixture
def items(rng):
    a = rng.uniform(0.3, 2.5, 7)
    d = rng.normal(0.0, 1.5, 7)
    c = rng.uniform(0.05, 0.35, 7)
    return a, d, c


def test_2pl_information_matches_finite_difference_curvature(items):
    a, d, _ = items
    theta = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(item_information(theta, a, d), _fd_fisher_1d(theta, a, d),
                               rtol=1e-4, atol=1e-7)


def test_3pl_information_matches_finite_difference_curvature(items):
    a, d, c = items
    theta = np.linspace(-3, 3, 13)
    np.testing.assert_allclose(item_information(theta, a, d, c), _fd_fisher_1d(theta, a, d, c),
                               rtol=1e-4, atol=1e-7)


def test_3pl_information_equals_expected_squared_score(items):
    """Fisher information is also E[(dl/dtheta)^2]; derivative by finite differences."""
    a, d, c = items
    theta, h = np.linspace(-2, 2, 5), 1e-6
    expected = np.zeros((theta.size, a.size))
    for k, t in enumerate(theta):
        p = icc(np.array([t]), a, d, c)[0]
        for y, prob in ((1.0, p), (0.0, 1.0 - p)):
            score = (_loglik(t + h, y, a, d, c) - _loglik(t - h, y, a, d, c)) / (2 * h)
            expected[k] += prob * score**2
    np.testing.assert_allclose(item_information(theta, a, d, c), expected, rtol=1e-6)


def test_3pl_reduces_to_2pl_at_zero_guessing(items):
    a, d, _ = items
    theta = np.linspace(-4, 4, 9)
    np.testing.assert_allclose(item_information(theta, a, d, np.zeros_like(a)),
                               item_information(theta, a, d), rtol=1e-12)
    np.testing.assert_allclose(icc(theta, a, d, np.zeros_like(a)), icc(theta, a, d), rtol=1e-12)


def test_test_information_and_standard_error(items):
    a, d, c = items
    theta = np.linspace(-3, 3, 7)
    info = item_information(theta, a, d, c)
    np.testing.assert_allclose(total_information(theta, a, d, c), info.sum(axis=1))
    np.testing.assert_allclose(standard_error(theta, a, d, c), 1 / np.sqrt(info.sum(axis=1)))
    # The 2PL item information peaks at theta = b = -d/a with value a^2 / 4.
    b = -d / a
    peak = np.diag(item_information(b, a, d))
    np.testing.assert_allclose(peak, a**2 / 4)


def test_multidimensional_information_matrix_matches_finite_difference_hessian(rng):
    a = rng.uniform(0.2, 1.5, (6, 3))
    d = rng.normal(size=6)
    theta = rng.normal(size=(4, 3))
    info = item_information(theta, a, d)
    assert info.shape == (4, 6, 3, 3)
    h = 1e-4
    for n in range(theta.shape[0]):
        p = icc(theta[n:n + 1], a, d)[0]
        fd = np.zeros((6, 3, 3))
        for i in range(3):
            for k in range(3):
                ei, ek = np.eye(3)[i] * h, np.eye(3)[k] * h
                for y, prob in ((1.0, p), (0.0, 1.0 - p)):
                    def ll(t, y=y):
                        return _loglik(t, y, a, d)[0]
                    t0 = theta[n]
                    second = (ll(t0 + ei + ek) - ll(t0 + ei - ek) - ll(t0 - ei + ek)
                              + ll(t0 - ei - ek)) / (4 * h * h)
                    fd[:, i, k] += prob * (-second)
        np.testing.assert_allclose(info[n], fd, rtol=1e-4, atol=1e-7)
    total = total_information(theta, a, d)
    np.testing.assert_allclose(information_trace(total), np.trace(total, axis1=1, axis2=2))
    u = np.array([1.0, 2.0, 2.0])
    direction = directional_information(theta, a, d, u)
    unit = u / 3.0
    np.testing.assert_allclose(direction, np.einsum("i,njik,k->nj", unit, info, unit))
    se = standard_error(theta, a, d)
    np.testing.assert_allclose(se, np.sqrt(np.diagonal(np.linalg.inv(total), axis1=1, axis2=2)))


def test_one_column_a_matches_unidimensional(items):
    a, d, c = items
    theta = np.linspace(-2, 2, 5)
    matrix = item_information(theta[:, None], a[:, None], d, c)
    np.testing.assert_allclose(matrix[..., 0, 0], item_information(theta, a, d, c))


def test_jax_arrays_give_the_same_numbers(items):
    jnp = pytest.importorskip("jax.numpy")
    a, d, c = items
    theta = np.linspace(-2, 2, 5)
    out = item_information(jnp.asarray(theta), jnp.asarray(a), jnp.asarray(d), jnp.asarray(c))
    assert type(out).__module__.startswith("jax")
    np.testing.assert_allclose(np.asarray(out), item_information(theta, a, d, c), rtol=1e-5)


def test_shape_errors_are_one_line(items):
    a, d, c = items
    with pytest.raises(ValidationError, match="d"):
        item_information(np.zeros(3), a, d[:-1])
    with pytest.raises(ValidationError, match="theta"):
        item_information(np.zeros((3, 2)), a[:, None], d)
    with pytest.raises(ValidationError, match="c must"):
        icc(np.zeros(3), a, d, c[:2])
