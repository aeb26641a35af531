"""The eigenvalue tail bounds every greedy residual-variance trace from below."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from coreval.errors import ValidationError
from coreval.gaussian.diagnostics import eigenvalue_tail
from coreval.gaussian.greedy import greedy_entropy, greedy_mi, residual_variance
from coreval.report.plots import plot_spectral_diagnostic


@pytest.mark.parametrize("seed", range(5))
def test_greedy_residual_never_beats_the_spectral_bound(seed):
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(30, 4))
    cov = w @ w.T + np.diag(rng.uniform(0.05, 0.3, 30))
    tail = eigenvalue_tail(cov)
    assert tail[0] == 1.0 and tail[-1] == pytest.approx(0.0, abs=1e-12)
    for result in (greedy_entropy(cov, 10), greedy_mi(cov, 10)):
        r = result.residual_variance
        assert np.all(r >= tail[1:11] - 1e-9)
        # the trace agrees with a direct computation of the residual variance
        assert r[-1] == pytest.approx(residual_variance(cov, result.selected, ridge=0.0), rel=1e-6)


def test_bound_is_tight_for_a_diagonal_covariance():
    cov = np.diag([5.0, 3.0, 1.0, 1.0])
    tail = eigenvalue_tail(cov)
    np.testing.assert_allclose(tail, [1.0, 0.5, 0.2, 0.1, 0.0])
    np.testing.assert_allclose(greedy_entropy(cov, 2).residual_variance, tail[1:3])


def test_plot_renders(tmp_path):
    cov = np.eye(5) + 0.5
    ax = plot_spectral_diagnostic(cov, {"entropy": greedy_entropy(cov, 3).residual_variance})
    ax.figure.savefig(tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000
    assert ax.get_xlabel() == "number of selected benchmarks k"
    with pytest.raises(ValidationError, match="square"):
        eigenvalue_tail(np.ones((2, 3)))
