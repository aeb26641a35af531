"""MML (Bock-Aitkin EM + Newton / L-BFGS-B) against R mirt, simulation and calculus."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad
from scipy.stats import norm

from coreval.errors import ValidationError
from coreval.irt.mml import MMLResult, fit_mml, marginal_loglik


def _lsat(shared_dir, name: str) -> tuple[np.ndarray, np.ndarray]:
    path = shared_dir / "data" / "psychometrics" / f"{name}.csv"
    if not path.exists():
        pytest.skip(f"needs {path}, which is absent")
    table = pd.read_csv(path)
    items = [col for col in table.columns if col != "freq"]
    return table[items].to_numpy(float), table["freq"].to_numpy(float)


@pytest.fixture(scope="module")
def mirt_ref(anchors_dir) -> dict:
    path = anchors_dir / "lsat_mirt_reference.json"
    if not path.exists():
        pytest.skip(f"needs {path}, which is absent")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def lsat7_fit(shared_dir) -> MMLResult:
    y, freq = _lsat(shared_dir, "LSAT7")
    return fit_mml(y, weights=freq)


def _simulate_2pl(rng, n: int, n_items: int):
    a = rng.lognormal(0.0, 0.3, n_items)
    d = rng.normal(0.0, 1.0, n_items)
    theta = rng.normal(size=n)
    prob = 1.0 / (1.0 + np.exp(-(np.outer(theta, a) + d)))
    return (rng.random((n, n_items)) < prob).astype(float), a, d


def _num_hessian(fun, x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """Central second differences of a scalar function (independent of the fitted code)."""
    n = x.size
    hess = np.zeros((n, n))
    eye = np.eye(n) * h
    for i in range(n):
        for k in range(i, n):
            hess[i, k] = hess[k, i] = (fun(x + eye[i] + eye[k]) - fun(x + eye[i] - eye[k])
                                       - fun(x - eye[i] + eye[k]) + fun(x - eye[i] - eye[k])
                                       ) / (4 * h * h)
    return hess


# ---------------------------------------------------------------- R mirt references


@pytest.mark.shared
def test_lsat7_2pl_matches_mirt(lsat7_fit, mirt_ref):
    ref = mirt_ref["LSAT7_2PL"]
    assert lsat7_fit.converged
    np.testing.assert_allclose(lsat7_fit.a, ref["a"], atol=0.01)
    np.testing.assert_allclose(lsat7_fit.d, ref["d"], atol=0.01)
    assert abs(lsat7_fit.loglik - ref["logLik"]) < 0.01
    np.testing.assert_allclose(lsat7_fit.b, -lsat7_fit.d / lsat7_fit.a)


@pytest.mark.shared
def test_lsat7_standard_errors_match_mirt_confidence_intervals(lsat7_fit, mirt_ref):
    """mirt's SEM-based 95% CI is est +- 1.96 se.

    SEM (supplemented EM) approximates the observed information; ours is exact
    (checked against finite differences below), so we allow 20% (one intercept
    differs by 16%; all others by less than 5%).
    """
    ref = mirt_ref["LSAT7_2PL"]
    for se, key in ((lsat7_fit.se_a, "SEM_95CI_a"), (lsat7_fit.se_d, "SEM_95CI_d")):
        ci = np.asarray(ref[key])
        ref_se = (ci[:, 1] - ci[:, 0]) / (2 * 1.959964)
        np.testing.assert_allclose(se, ref_se, rtol=0.2)
        assert abs(np.median(se / ref_se) - 1) < 0.05


@pytest.mark.shared
def test_lsat7_with_two_missing_entries_matches_mirt(shared_dir, mirt_ref):
    y, freq = _lsat(shared_dir, "LSAT7")
    rows = np.repeat(y, freq.astype(int), axis=0)
    rows[0, 0] = np.nan
    rows[1, 1] = np.nan
    fit = fit_mml(rows)
    ref = mirt_ref["LSAT7_2PL_with_two_missing"]
    np.testing.assert_allclose(fit.a, ref["a"], atol=0.01)
    np.testing.assert_allclose(fit.d, ref["d"], atol=0.01)


@pytest.mark.shared
def test_lsat6_rasch_matches_mirt(shared_dir, mirt_ref):
    y, freq = _lsat(shared_dir, "LSAT6")
    fit = fit_mml(y, weights=freq, model="rasch")
    ref = mirt_ref["LSAT6_Rasch"]
    np.testing.assert_array_equal(fit.a, 1.0)
    np.testing.assert_allclose(fit.d, ref["d"], atol=0.01)
    assert abs(fit.latent_variance - ref["latent_variance"]) < 0.01
    # mirt's reference logLik comes from quasi-Monte Carlo EM integration; ours is
    # exact quadrature (verified against adaptive integration in the next test),
    # which is 0.28 lower at the same estimates.
    assert abs(fit.loglik - ref["logLik_QMCEM"]) < 0.5


@pytest.mark.shared
def test_loglik_equals_adaptive_integration(shared_dir):
    y, freq = _lsat(shared_dir, "LSAT6")
    fit = fit_mml(y, weights=freq, model="rasch")
    sd = np.sqrt(fit.latent_variance)
    total = 0.0
    for row, f in zip(y, freq, strict=True):
        def density(t, row=row):
            p = 1.0 / (1.0 + np.exp(-(t * fit.a + fit.d)))
            return np.prod(np.where(row == 1, p, 1 - p)) * norm.pdf(t, scale=sd)
        total += f * np.log(quad(density, -12, 12, epsabs=1e-14, epsrel=1e-12)[0])
    assert fit.loglik == pytest.approx(total, abs=1e-6)


# -------------------------------------------------------------- simulation and calculus


def test_simulated_2pl_recovery(rng):
    y, a, d = _simulate_2pl(rng, 2000, 20)
    fit = fit_mml(y)
    assert fit.converged
    assert np.corrcoef(fit.a, a)[0, 1] > 0.9
    assert np.corrcoef(fit.d, d)[0, 1] > 0.97
    # Standard errors should be of the size of the actual estimation errors.
    z = np.concatenate([(fit.a - a) / fit.se_a, (fit.d - d) / fit.se_d])
    assert 0.6 < np.sqrt(np.mean(z**2)) < 1.5


def test_standard_errors_are_inverse_numerical_hessian(rng):
    """Closed-form Louis information vs finite differences of the exact marginal loglik."""
    y, _, _ = _simulate_2pl(rng, 400, 4)
    y[rng.random(y.shape) < 0.05] = np.nan  # exercises the missing-data path
    for data in (np.nan_to_num(y, nan=0.0), y):
        fit = fit_mml(data)
        x = np.concatenate([fit.a, fit.d])
        hess = _num_hessian(lambda v, data=data: marginal_loglik(data, v[:4], v[4:]), x)
        se = np.sqrt(np.diag(np.linalg.inv(-hess)))
        np.testing.assert_allclose(np.concatenate([fit.se_a, fit.se_d]), se, rtol=1e-3)


def test_gradient_is_zero_at_the_estimate(rng):
    y, _, _ = _simulate_2pl(rng, 500, 6)
    fit = fit_mml(y, tol=1e-9)
    x, h = np.concatenate([fit.a, fit.d]), 1e-5
    for i in range(x.size):
        e = np.eye(x.size)[i] * h
        grad = (marginal_loglik(y, *np.split(x + e, 2)) - marginal_loglik(y, *np.split(x - e, 2)))
        assert abs(grad / (2 * h)) < 1e-3


def test_rasch_equals_1pl_on_rescaled_trait(rng):
    """Rasch with Var(theta) = s^2 is the 1PL with common slope s on N(0, 1)."""
    y, _, _ = _simulate_2pl(rng, 800, 8)
    rasch, onepl = fit_mml(y, model="rasch"), fit_mml(y, model="1pl")
    assert rasch.loglik == pytest.approx(onepl.loglik, abs=1e-6)
    assert rasch.latent_variance == pytest.approx(onepl.a[0] ** 2, rel=1e-4)
    np.testing.assert_allclose(rasch.d, onepl.d, atol=1e-4)
    assert rasch.se_latent_variance == pytest.approx(2 * onepl.a[0] * onepl.se_a[0], rel=1e-3)
    fixed = fit_mml(y, model="rasch", estimate_latent_variance=False)
    assert fixed.latent_variance == 1.0
    twopl = fit_mml(y)
    # Nested models: 2PL >= 1PL >= Rasch with fixed variance.
    assert twopl.loglik >= onepl.loglik - 1e-6 >= fixed.loglik - 2e-6


def test_frequency_weights_equal_repeated_rows(rng):
    y, _, _ = _simulate_2pl(rng, 300, 5)
    patterns, counts = np.unique(y, axis=0, return_counts=True)
    by_weight = fit_mml(patterns, weights=counts)
    by_rows = fit_mml(y)
    np.testing.assert_allclose(by_weight.a, by_rows.a, atol=1e-5)
    assert by_weight.loglik == pytest.approx(by_rows.loglik, abs=1e-6)


def test_missing_entries_contribute_nothing(rng):
    y, _, _ = _simulate_2pl(rng, 300, 5)
    padded = np.vstack([y, np.full((3, 5), np.nan)])
    a, d = np.linspace(0.5, 1.5, 5), np.linspace(-1, 1, 5)
    assert marginal_loglik(padded, a, d) == pytest.approx(marginal_loglik(y, a, d), abs=1e-9)
    # One missing entry: the row's likelihood is that of its observed items.
    row = y[:1].copy()
    row[0, 2] = np.nan
    keep = [0, 1, 3, 4]
    assert marginal_loglik(row, a, d) == pytest.approx(
        marginal_loglik(y[:1, keep], a[keep], d[keep]), abs=1e-12)


def test_eap_matches_numerical_integration(rng):
    y, _, _ = _simulate_2pl(rng, 500, 6)
    fit = fit_mml(y)
    eap, psd = fit.eap_theta(y[:3])
    for k in range(3):
        def like(t, k=k):
            p = 1.0 / (1.0 + np.exp(-(fit.a * t + fit.d)))
            return np.prod(np.where(y[k] == 1, p, 1 - p)) * norm.pdf(t)
        z = quad(like, -10, 10)[0]
        mean = quad(lambda t, k=k: t * like(t, k), -10, 10)[0] / z
        second = quad(lambda t, k=k: t * t * like(t, k), -10, 10)[0] / z
        assert eap[k] == pytest.approx(mean, abs=1e-6)
        assert psd[k] == pytest.approx(np.sqrt(second - mean**2), abs=1e-6)
    nodes, post = fit.theta_posterior(y[:3])
    np.testing.assert_allclose(post.sum(axis=1), 1.0)
    assert nodes.shape == (fit.n_quad,)


def test_3pl_recovers_guessing(rng):
    n, n_items = 3000, 15
    a = rng.uniform(1.0, 2.0, n_items)
    d = rng.normal(0.0, 1.0, n_items)
    c = np.full(n_items, 0.2)
    theta = rng.normal(size=n)
    prob = c + (1 - c) / (1.0 + np.exp(-(np.outer(theta, a) + d)))
    y = (rng.random((n, n_items)) < prob).astype(float)
    fit = fit_mml(y, model="3pl")
    assert fit.c is not None and fit.se_c is not None
    assert np.mean(np.abs(fit.c - c)) < 0.08
    assert np.corrcoef(fit.d, d)[0, 1] > 0.9
    assert np.all(np.isfinite(fit.se_a))


def test_prior_on_slopes_shrinks_towards_prior(rng):
    y, _, _ = _simulate_2pl(rng, 200, 6)
    free = fit_mml(y)
    tight = fit_mml(y, prior_a=(0.0, 0.05))
    assert np.all(tight.a > 0)
    assert np.abs(np.log(tight.a)).max() < np.abs(np.log(np.abs(free.a))).max()


def test_max_iter_reached_is_not_converged(rng):
    y, _, _ = _simulate_2pl(rng, 500, 8)
    fit = fit_mml(y, max_iter=2, compute_se=False)
    assert not fit.converged and fit.n_iter <= 2


def test_same_input_same_numbers(rng):
    y, _, _ = _simulate_2pl(rng, 300, 5)
    first, second = fit_mml(y), fit_mml(y)
    np.testing.assert_array_equal(first.a, second.a)
    np.testing.assert_array_equal(first.se_d, second.se_d)


# ------------------------------------------------------------------------ bad input


def test_all_correct_item_warns_once_and_stays_bounded(rng):
    y, _, _ = _simulate_2pl(rng, 300, 5)
    y[:, 1] = 1.0
    y[:, 3] = 0.0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fit = fit_mml(y)
    messages = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
    assert len(messages) == 1 and "1, 3" in messages[0]
    np.testing.assert_array_equal(fit.extreme_items, [1, 3])
    assert np.all(np.isfinite(fit.a)) and np.all(np.abs(fit.d) <= 15.0)
    assert fit.d[1] > 5 and fit.d[3] < -5


@pytest.mark.parametrize(
    ("kwargs", "y", "match"),
    [
        ({}, [[0, 0.5], [1, 0.7]], "binary.*0.5, 0.7.*continuous"),
        ({}, [[0, 2], [1, 0]], "binary"),
        ({}, [0, 1, 1], "2-D"),
        ({}, [[0, np.inf], [1, 0]], "infinite"),
        ({}, [[0, np.nan], [1, np.nan]], "no observed"),
        ({"model": "4pl"}, [[0, 1], [1, 0]], "unknown IRT model"),
        ({"weights": [1, 2, 3]}, [[0, 1], [1, 0]], "weights"),
        ({"weights": [1, -1]}, [[0, 1], [1, 0]], "non-negative"),
        ({"estimate_latent_variance": True}, [[0, 1], [1, 0]], "only identified"),
        ({"n_quad": 2}, [[0, 1], [1, 0]], "n_quad"),
        ({}, [[0, 1, 1]], "at least 2 respondents"),
        ({"model": "rasch", "prior_a": (0.0, 0.5)}, [[0, 1], [1, 0]], "does not apply"),
    ],
)
def test_bad_input_raises_validation_error(kwargs, y, match):
    with pytest.raises(ValidationError, match=match) as info:
        fit_mml(np.asarray(y, dtype=float), **kwargs)
    assert "\n" not in str(info.value)


def test_eap_rejects_wrong_item_count(rng):
    y, _, _ = _simulate_2pl(rng, 200, 5)
    fit = fit_mml(y)
    with pytest.raises(ValidationError, match="items"):
        fit.eap_theta(y[:, :4])


def test_standard_errors_skipped_with_warning_when_too_large(rng, monkeypatch):
    import coreval.irt.mml as mml

    y, _, _ = _simulate_2pl(rng, 300, 6)
    assert fit_mml(y).se_method == "louis"
    monkeypatch.setattr(mml, "_MAX_ITEMS_FULL_SE", 3)
    with pytest.warns(UserWarning, match="standard errors skipped"):
        fit = fit_mml(y)
    assert fit.se_a is None and fit.se_d is None and fit.se_method == "none"
    assert fit_mml(y, compute_se=False).se_a is None


@pytest.mark.parametrize("model", ["2pl", "1pl", "rasch"])
def test_newton_and_lbfgs_paths_agree(rng, monkeypatch, model):
    import coreval.irt.mml as mml

    y, _, _ = _simulate_2pl(rng, 600, 8)
    y[rng.random(y.shape) < 0.05] = np.nan
    newton = fit_mml(y, model=model, tol=1e-8)
    monkeypatch.setattr(mml, "_MAX_ITEMS_NEWTON_MISSING", 0)
    lbfgs = fit_mml(y, model=model, tol=1e-8)
    assert newton.converged and lbfgs.converged
    np.testing.assert_allclose(newton.a, lbfgs.a, atol=1e-4)
    np.testing.assert_allclose(newton.d, lbfgs.d, atol=1e-4)
    assert newton.loglik == pytest.approx(lbfgs.loglik, abs=1e-6)


def test_mml_fit_draws_from_the_asymptotic_normal_so_arviz_shows_standard_errors(rng):
    import arviz as az

    from coreval.irt import fit

    theta = rng.normal(size=(800, 1))
    a, d = rng.lognormal(0.0, 0.3, 6), rng.normal(0.0, 1.0, 6)
    y = (rng.random((800, 6)) < 1 / (1 + np.exp(-(theta * a + d)))).astype(float)
    res = fit("2pl", y, method="mml", seed=1)
    direct = fit_mml(y, model="2pl")
    items = res.items
    # the item table keeps the estimates and their standard errors exactly
    np.testing.assert_allclose(items["d"], direct.d, rtol=1e-10)
    np.testing.assert_allclose(items["d_sd"], direct.se_d, rtol=1e-10)
    assert res.n_draws == 500
    summary = az.summary(res.idata, var_names=["a", "d"], kind="stats", round_to="none")
    sd = summary["sd"].to_numpy()
    se = np.r_[items["a_sd"].to_numpy(), items["d_sd"].to_numpy()]
    assert np.isfinite(sd).all()
    np.testing.assert_allclose(sd, se, rtol=0.15)  # 500 draws: Monte Carlo error ~ 3 %
    np.testing.assert_allclose(summary["mean"].to_numpy()[6:], direct.d, atol=1e-9)
    again = fit("2pl", y, method="mml", seed=1)
    np.testing.assert_array_equal(again.idata.posterior["d"].values,
                                  res.idata.posterior["d"].values)


def test_mml_draws_keep_the_sign_of_a_negative_slope():
    """An item that stronger models fail more often keeps its negative slope in the draws."""
    from coreval.irt import fit

    rng = np.random.default_rng(0)
    theta = rng.standard_normal((300, 1))
    a = np.array([1.5, 1.2, 1.0, 1.3, 0.8, 1.1, 1.4, -1.5])
    d = np.array([0.2, -0.3, 0.5, 0.0, -0.5, 0.3, 0.1, 0.4])
    y = (rng.random((300, 8)) < 1 / (1 + np.exp(-(theta * a + d)))).astype(float)
    res = fit("2pl", y, method="mml", seed=0, show_progress=False)
    point, mean = res.item_point("point"), res.item_point("mean")
    assert point["a"][-1, 0] < 0
    np.testing.assert_array_equal(np.sign(mean["a"]), np.sign(point["a"]))
    np.testing.assert_array_equal(np.sign(mean["b"]), np.sign(point["b"]))
    np.testing.assert_allclose(mean["a"], point["a"], atol=0.1)


def _long_test(n_items: int, n_rows: int = 200, seed: int = 1):
    from scipy.special import expit

    rng = np.random.default_rng(seed)
    a, d = rng.lognormal(0, 0.3, n_items), rng.normal(0, 1, n_items)
    theta = rng.normal(size=n_rows)
    return (rng.random((n_rows, n_items)) < expit(theta[:, None] * a + d)).astype(float)


def test_eap_of_a_long_test_matches_a_fine_grid():
    # 61 nodes 0.4 apart against posterior sds near 0.1: the quadrature EAPs snapped to nodes
    from scipy.special import expit

    y = _long_test(400)
    with pytest.warns(UserWarning, match="quadrature is coarse"):
        res = fit_mml(y, compute_se=False)
    y[:5, :50] = np.nan
    eap, psd = res.eap_theta(y)
    grid = np.linspace(-7, 7, 20001)
    p = expit(np.outer(grid, res.a) + res.d)
    obs = ~np.isnan(y)
    yy = np.where(obs, y, 0.0)
    ll = yy @ np.log(p).T + (obs & (yy == 0)) @ np.log(1 - p).T - grid**2 / 2
    w = np.exp(ll - ll.max(axis=1, keepdims=True))
    w /= w.sum(axis=1, keepdims=True)
    mean = w @ grid
    np.testing.assert_allclose(eap, mean, atol=1e-4)
    np.testing.assert_allclose(psd, np.sqrt(w @ grid**2 - mean**2), atol=1e-4)


def test_fit_warns_at_slope_bounds_and_limits_the_quadrature():
    y = _long_test(30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a 30-item test is integrated well enough
        fit_mml(y, compute_se=False)
    dup = np.column_stack([y[:, :5], y[:, 0], y[:, 0], y[:, 0]])
    with pytest.warns(UserWarning, match=r"items 0, 5, 6, 7 have slopes on the bound"):
        fit_mml(dup, compute_se=False)
    with pytest.raises(ValidationError, match="n_quad must be an integer from 5 to 360"):
        fit_mml(y, n_quad=400)
