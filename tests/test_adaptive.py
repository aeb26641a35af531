"""Adaptive testing: the posterior, the target-aware rule, stopping, exposure, content, errors."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import quad
from scipy.special import expit
from scipy.stats import norm

from conftest import two_ability_matrix
from coreval.adaptive import (
    AdaptiveTest,
    ItemBank,
    calibrate_exposure,
    estimate,
    fisher_information,
    init,
    max_items,
    next_items,
    score_moments,
    score_variance_reduction,
    score_width,
    update,
)
from coreval.errors import ValidationError


def _bank(n_items: int = 120, n_draws: int = 1, seed: int = 0, groups: bool = False,
          guess: bool = False) -> tuple[ItemBank, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.lognormal(0.2, 0.4, n_items)
    d = rng.normal(0.0, 1.2, n_items)
    jitter = rng.normal(0, 0.05, (n_draws, n_items)) if n_draws > 1 else 0.0
    bank = ItemBank(items=[f"q{i}" for i in range(n_items)], a=a + jitter, d=d + jitter,
                    c=np.full(n_items, 0.2) if guess else None,
                    groups=np.where(np.arange(n_items) % 3 == 0, "g1", "g2") if groups else None)
    return bank, a, d


def _answers(a, d, theta, seed, c=None):
    p = expit(a * theta + d)
    if c is not None:
        p = c + (1 - c) * p
    return (np.random.default_rng(seed).random(len(a)) < p).astype(float)


def test_quadrature_posterior_matches_numerical_integration():
    bank, a, d = _bank(30)
    y = _answers(a, d, 0.7, seed=1)
    state = update(init(bank), np.arange(10), y[:10])

    def lik(t):
        p = expit(a[:10] * t + d[:10])
        return norm.pdf(t) * np.prod(np.where(y[:10] == 1, p, 1 - p))

    z = quad(lik, -8, 8)[0]
    mean = quad(lambda t: t * lik(t), -8, 8)[0] / z
    theta_mean, theta_sd = state.theta_moments()
    assert theta_mean == pytest.approx(mean, abs=0.02)
    assert 0 < theta_sd < 1


def test_kl_information_is_the_posterior_weighted_kl_divergence():
    """The KL rule (computed without a draws x nodes x items array) equals
    ``Σ_{s,g} π_sg KL(p_s(θ̂) ‖ p_sg)`` summed node by node, with guessing and draws."""
    from coreval.adaptive.select import kl_information

    bank, a, d = _bank(25, n_draws=4, guess=True)
    state = update(init(bank), np.arange(6), _answers(a, d, -0.4, seed=3, c=0.2)[:6])
    pi = state.weights()
    theta, _ = state.theta_moments()
    assert np.abs(bank.grid - theta).min() > 1e-3  # θ̂ between nodes
    rest = state.unasked
    expected = np.zeros(len(rest))
    for s in range(bank.n_draws):
        c = bank.c[s, rest]
        p_hat = c + (1 - c) * expit(bank.a[s, rest] * theta + bank.d[s, rest])
        for g in range(len(bank.grid)):
            p = bank.probs[s, g, rest]
            expected += pi[s, g] * (p_hat * np.log(p_hat / p)
                                    + (1 - p_hat) * np.log((1 - p_hat) / (1 - p)))
    np.testing.assert_allclose(kl_information(state), expected, rtol=1e-9, atol=1e-12)
    assert (kl_information(state) >= -1e-12).all()


def test_score_variance_reduction_equals_the_expected_posterior_variance():
    """The closed form against updating with each answer and averaging by P(y)."""
    bank, _, _ = _bank(40, n_draws=4, seed=2, guess=True)
    state = update(init(bank), [0, 5, 9], [1, 0, 1])
    criterion = score_variance_reduction(state)
    _, var_now = score_moments(state)
    pi = state.weights()
    for j, item in enumerate(state.unasked[:8]):
        p1 = float((pi * bank.probs[:, :, item]).sum())
        after = sum(prob * score_moments(update(state, [item], [y]))[1]
                    for y, prob in ((1.0, p1), (0.0, 1 - p1)))
        assert criterion[j] == pytest.approx(var_now - after, rel=1e-6, abs=1e-12)


def _simulate(rule, n_models=40, stop=None, seed=0, **kwargs):
    bank, a, d = _bank(150, seed=seed)
    rng = np.random.default_rng(100 + seed)
    errors, covered, used = [], [], []
    for m in range(n_models):
        y = _answers(a, d, rng.normal(), seed=1000 * seed + m)
        test = AdaptiveTest(bank, rule=rule, stop=stop or max_items(15), seed=m, **kwargs)
        pred = test.run(lambda items, y=y: y[bank.positions(items)])
        truth = y.mean()
        errors.append(pred.mean[0] - truth)
        covered.append(pred.lower[0] <= truth <= pred.upper[0])
        used.append(test.state.n_asked)
    return np.sqrt(np.mean(np.square(errors))), np.mean(covered), np.mean(used)


def _random_rule(state):
    return np.random.default_rng(state.n_asked).random(len(state.unasked))


def test_adaptive_rules_beat_random_items_and_intervals_cover():
    rmse_score, cov_score, _ = _simulate("score")
    rmse_fisher, _, _ = _simulate("fisher")
    rmse_random, cov_random, _ = _simulate(_random_rule)
    assert rmse_score < rmse_random and rmse_fisher < rmse_random
    assert cov_score >= 0.8 and cov_random >= 0.8


def test_width_stop_needs_fewer_items_than_random_order():
    stop = score_width(0.08)
    _, cov, used_adaptive = _simulate("score", stop=stop, n_models=20)
    _, _, used_random = _simulate(_random_rule, stop=stop, n_models=20)
    assert used_adaptive < used_random
    assert cov >= 0.8


def test_batches_exposure_and_randomesque():
    bank, _, _ = _bank(60)
    state = update(init(bank), [0], [1])
    batch = next_items(state, "fisher", 5)
    assert len(set(batch.tolist())) == 5 and 0 not in batch
    best = next_items(state, "fisher", 1)[0]
    k = np.ones(bank.n_items)
    k[best] = 0.0  # never administered
    assert next_items(state, "fisher", 1, exposure=k)[0] != best
    picks = {int(next_items(state, "fisher", 1, randomesque=5,
                            rng=np.random.default_rng(s))[0]) for s in range(30)}
    assert 1 < len(picks) <= 5


def test_sympson_hetter_item_appears_in_share_k_of_tests():
    """A passed-over item stays passed over for the rest of the test, so an item that
    would always be chosen appears in a share ``k`` of the tests (not ``1 - (1 - k)^L``)."""
    bank, _, _ = _bank(20, seed=2)
    best = int(np.argmax(fisher_information(init(bank))))
    k = np.ones(bank.n_items)
    k[best] = 0.3
    shown = []
    for seed in range(1000):
        test = AdaptiveTest(bank, rule="fisher", stop=max_items(5), exposure=k, seed=seed)
        test.run(lambda items: np.ones(len(items)))  # answers that keep `best` attractive
        shown.append(best in test.state.asked)
    assert np.mean(shown) == pytest.approx(0.3, abs=0.045)
    # an item the draw excludes is never offered again, whatever the rule prefers
    half = np.full(bank.n_items, 0.5)
    state = init(bank, seed=0)
    allowed = state.administrable(half)
    blocked = np.flatnonzero(state.exposure_draw >= 0.5)
    assert 0 < len(blocked) < bank.n_items and len(allowed) == bank.n_items - len(blocked)
    picks = next_items(state, "fisher", len(allowed), exposure=half)
    assert sorted(picks.tolist()) == allowed.tolist()
    with pytest.raises(ValidationError, match="exposure control left too few items"):
        next_items(state, "fisher", len(allowed) + 1, exposure=half)


def test_sympson_hetter_calibration_bounds_exposure():
    bank, _, _ = _bank(40, seed=4)
    k = calibrate_exposure(bank, 0.5, n_items=4, rule="fisher", n_simulees=60, n_rounds=10)
    assert k.min() < 1.0  # the most informative items were restricted
    rng = np.random.default_rng(9)
    counts = np.zeros(bank.n_items)
    for theta in rng.normal(size=60):
        test = AdaptiveTest(bank, rule="fisher", stop=max_items(4), exposure=k,
                            seed=int(rng.integers(1 << 30)))
        g = int(np.argmin(np.abs(bank.grid - theta)))
        test.run(lambda items, g=g: (rng.random(len(items))
                                     < bank.probs[0, g, bank.positions(items)]).astype(float))
        counts[test.state.asked] += 1
    assert counts.max() / 60 <= 0.65


def test_content_balancing_follows_the_target_shares():
    bank, a, d = _bank(60, groups=True)
    y = _answers(a, d, 0.0, seed=3)
    test = AdaptiveTest(bank, rule="score", stop=max_items(12), content={"g1": 1, "g2": 1})
    test.run(lambda items: y[bank.positions(items)], b=2)
    groups = bank.groups[test.state.asked]
    assert abs(int((groups == "g1").sum()) - 6) <= 1


def test_same_seed_same_items_and_interval():
    bank, a, d = _bank(80)
    y = _answers(a, d, -0.3, seed=5)
    runs = []
    for _ in range(2):
        test = AdaptiveTest(bank, rule="kl", stop=max_items(8), randomesque=3, seed=7)
        pred = test.run(lambda items: y[bank.positions(items)])
        runs.append((test.asked, pred.lower[0], pred.upper[0]))
    assert runs[0] == runs[1]


def test_bad_input_is_named():
    bank, _, _ = _bank(20)
    state = update(init(bank), ["q1"], [1])
    with pytest.raises(ValidationError, match="answered twice: q1"):
        update(state, ["q1"], [0])
    with pytest.raises(ValidationError, match=r"0 or 1.*q2=2"):
        update(state, ["q2"], [2])
    with pytest.raises(ValidationError, match="not in the bank: nope"):
        update(state, ["nope"], [1])
    with pytest.raises(ValidationError, match="only 19 are left"):
        next_items(state, "score", 20)
    with pytest.raises(ValidationError, match="unknown selection rule"):
        next_items(state, "bogus")
    with pytest.raises(ValidationError, match="item bank"):
        ItemBank(items=["a", "a"], a=np.ones(2), d=np.zeros(2))


def test_bank_from_a_fitted_model_predicts_held_out_models():
    from coreval.data.simulate import simulate
    from coreval.irt import fit

    sim = simulate(140, 80, seed=11)
    source, target = sim.matrix.take(np.arange(100)), sim.matrix.take(np.arange(100, 140))
    irt_fit = fit("2pl", source, method="map", settings={"num_steps": 400, "num_draws": 30},
                  show_progress=False)
    bank = ItemBank.from_fit(irt_fit, source)
    assert bank.n_draws == 30 and bank.n_items == 80
    covered = []
    for row in target.values:
        test = AdaptiveTest(bank, rule="score", stop=max_items(20))
        pred = test.run(lambda items, row=row: row[bank.positions(items)])
        covered.append(pred.lower[0] <= np.nanmean(row) <= pred.upper[0])
    assert np.mean(covered) >= 0.75
    with pytest.raises(ValidationError, match="logistic"):
        ItemBank.from_fit(fit("beta", np.clip(source.values * 0.8 + 0.1, 0.01, 0.99),
                              method="map", settings={"num_steps": 50}, show_progress=False))


def test_estimate_draws_are_seeded_by_the_answers():
    bank, _, _ = _bank(30)
    state = update(init(bank), [1, 2], [1, 0])
    a, b = estimate(state, seed=3), estimate(state, seed=3)
    assert np.array_equal(a.draws, b.draws)
    assert a.lower[0] <= a.mean[0] <= a.upper[0]


# ----------------------------------------------------------------- the CLI loop
DRIVER = """
import json, sys
answers = json.load(open(sys.argv[1]))
for line in sys.stdin:
    items = line.rstrip("\\n").split("\\t")
    print(" ".join(str(answers[i]) for i in items), flush=True)
"""


def test_cli_adapt_drives_an_answering_command(tmp_path):
    import json
    import sys

    from typer.testing import CliRunner

    from coreval.cli import app
    from coreval.data.npz import write_npz
    from coreval.data.simulate import simulate

    sim = simulate(100, 60, seed=21)
    source, target = sim.matrix.take(np.arange(80)), sim.matrix.take(np.arange(80, 100))
    write_npz(source, tmp_path / "src.npz")
    driver = tmp_path / "driver.py"
    driver.write_text(DRIVER)
    runner = CliRunner()
    covered, used = [], []
    for j, row in enumerate(target.values):
        answers = tmp_path / f"row{j}.json"
        answers.write_text(json.dumps({str(i): int(v) for i, v in zip(target.items, row,
                                                                        strict=True)}))
        result = runner.invoke(app, [
            "adapt", str(tmp_path / "src.npz"), "--answer-cmd",
            f"{sys.executable} {driver} {answers}", "--fit-method", "map", "--num-steps",
            "300", "--width", "0.15", "--max-items", "20", "--batch", "2", "--seed", str(j),
            # the first run learns tau out of fold (the default); the others take it as 0
            *(["--tau", "0"] if j else [])])
        assert result.exit_code == 0, result.output
        out = json.loads(result.output)
        assert out["tau"] >= 0.0 if j == 0 else out["tau"] == 0.0
        covered.append(out["lower"] <= row.mean() <= out["upper"])
        used.append(out["items_used"])
        assert len(set(out["items"])) == out["items_used"] <= 20
    assert np.mean(covered) >= 0.75, covered
    # replaying recorded answers gives the same run as the live loop
    pd_rows = [{"item": str(i), "score": v} for i, v in zip(target.items, target.values[0],
                                                            strict=True)]
    import pandas as pd

    pd.DataFrame(pd_rows).to_csv(tmp_path / "rec.csv", index=False)
    replay = runner.invoke(app, ["adapt", str(tmp_path / "src.npz"), "--responses",
                                 str(tmp_path / "rec.csv"), "--fit-method", "map",
                                 "--num-steps", "300", "--width", "0.15", "--max-items", "20",
                                 "--batch", "2", "--seed", "0"])
    assert replay.exit_code == 0, replay.output
    assert json.loads(replay.output)["items_used"] == used[0]
    # a blank score is no recorded answer: never asked, and not counted in the bank's size
    pd_rows = [{"item": r["item"], "score": r["score"] if k < 25 else None}
               for k, r in enumerate(pd_rows)]
    pd.DataFrame(pd_rows).to_csv(tmp_path / "half.csv", index=False)
    half = runner.invoke(app, ["adapt", str(tmp_path / "src.npz"), "--responses",
                               str(tmp_path / "half.csv"), "--fit-method", "map",
                               "--num-steps", "300", "--width", "0", "--max-items", "40",
                               "--tau", "0", "--batch", "5"])
    assert half.exit_code == 0, half.output
    asked = json.loads(half.output)["items"]
    assert len(asked) == 25 and set(asked) == {r["item"] for r in pd_rows[:25]}
    both = runner.invoke(app, ["adapt", str(tmp_path / "src.npz")])
    assert both.exit_code == 2 and "exactly one of" in both.output


# ----------------------------------------------------------------- in the harness
def test_adaptive_methods_run_in_the_harness_on_the_same_splits(tmp_path):
    from coreval.data.simulate import simulate
    from coreval.harness import run_grid

    m = simulate(90, 120, seed=31).matrix
    df = run_grid({"sim": m}, ["cat-score", "cat-fisher", "random+"], [10], n_source=(60,),
                  seeds=[0], split="random", out=tmp_path / "r.parquet", progress=False,
                  method_options={"cat-score": {"fit_method": "map", "num_steps": 300,
                                                "num_draws": 30},
                                  "cat-fisher": {"fit_method": "map", "num_steps": 300,
                                                 "num_draws": 30}})
    assert df["error"].isna().all(), df["error"].tolist()
    rows = df.set_index("method")
    assert (rows["k"] == 10).all() and (rows["n_target"] == 30).all()
    # the target-aware rule beats a random coreset with ridge on the same split
    assert rows.loc["cat-score", "rmse"] < rows.loc["random+", "rmse"]
    for name in ("cat-score", "cat-fisher"):
        assert np.isfinite(rows.loc[name, "rmse"])
        assert 0.6 <= rows.loc[name, "coverage90"] <= 1.0
    with pytest.raises(Exception, match="fixes rule"):
        run_grid({"sim": m}, ["cat-score"], [10], seeds=[0], split="random",
                 out=tmp_path / "s.parquet", progress=False,
                 method_options={"cat-score": {"rule": "kl"}})


def test_misfit_term_learnt_out_of_fold_widens_intervals_where_the_bank_misfits():
    """A 1-D bank on two-ability data: τ learnt out of fold is positive and widens intervals."""
    import coreval

    source, target, truth = two_ability_matrix()
    fit = {"fit_method": "map", "num_steps": 300, "num_draws": 30}
    cover, width = {}, {}
    for tau in (0.0, "cv"):
        fitted = coreval.select(source, "cat-fisher", 8, seed=0, tau=tau, **fit)
        pred = fitted.predict_array(target)
        cover[tau] = np.mean((pred.lower <= truth) & (truth <= pred.upper))
        width[tau] = np.mean(pred.upper - pred.lower)
    assert fitted.predictor.tau_ > 0.0
    assert width["cv"] > width[0.0]
    assert cover["cv"] >= max(0.85, cover[0.0]), cover
    with pytest.raises(ValidationError, match="tau must be"):
        coreval.select(source, "cat-fisher", 8, seed=0, tau=-1.0, **fit)


def test_sympson_hetter_in_the_predictor_bounds_exposure_over_target_models():
    """``max_exposure`` calibrates Sympson-Hetter parameters at fit and withdraws an item
    once it reaches that share of the target models: no item goes over it (without it,
    Fisher's first item goes to every model)."""
    import coreval
    from coreval.data.simulate import simulate

    m = simulate(200, 80, seed=41).matrix
    source, target = m.take(np.arange(80)), m.values[80:]
    fit = {"fit_method": "map", "num_steps": 300, "num_draws": 20, "tau": 0.0}
    rates = {}
    for cap in (None, 0.5):
        fitted = coreval.select(source, "cat-fisher", 8, seed=0, max_exposure=cap, **fit)
        fitted.predict_array(target)
        rates[cap] = fitted.predictor.asked_.mean(axis=0).max()
        assert (fitted.predictor.items_used_ == 8).all()
    assert rates[None] == 1.0
    assert rates[0.5] <= 0.5, rates
    # a tighter share still fills every test, from items the ceiling leaves open
    tight = coreval.select(source, "cat-fisher", 8, seed=0, max_exposure=0.2, **fit)
    tight.predict_array(target)
    assert tight.predictor.asked_.mean(axis=0).max() <= 0.2
    assert (tight.predictor.items_used_ == 8).all()
    with pytest.raises(ValidationError, match="max_exposure"):
        coreval.select(source, "cat-fisher", 8, seed=0, max_exposure=1.5, **fit)


def test_misfit_term_scales_with_the_unanswered_share():
    """τ bears on the predicted part only: τ at the start, τ/2 with half the weight
    answered, 0 once every item is answered (the score is then known exactly)."""
    from dataclasses import replace

    from coreval.adaptive.estimate import misfit_sd, score_moments

    bank, a, d = _bank(40)
    y = _answers(a, d, 0.3, seed=2)
    for tau in (0.0, 0.05):
        state = init(replace(bank, tau=tau))
        assert misfit_sd(state) == pytest.approx(tau)
        half = update(state, [f"q{i}" for i in range(20)], y[:20])
        assert misfit_sd(half) == pytest.approx(tau / 2)
        full = update(half, [f"q{i}" for i in range(20, 40)], y[20:])
        mean, var = score_moments(full)
        assert var == pytest.approx(0.0, abs=1e-12) and mean == pytest.approx(y.mean())
        pred = estimate(full)
        assert pred.lower[0] == pytest.approx(y.mean()) == pytest.approx(pred.upper[0])
    base = score_moments(update(init(bank), ["q0"], y[:1]))[1]
    inflated = score_moments(update(init(replace(bank, tau=0.05)), ["q0"], y[:1]))[1]
    assert inflated - base == pytest.approx((0.05 * 39 / 40) ** 2)


def _brute_width_stop(tau, truth, paths, width, z):
    """Replay a width stop model by model, step by step (second implementation)."""
    steps, covered = [], []
    for y, path in zip(truth, paths, strict=True):
        for n, (mean, var, share) in enumerate(path):
            total = var + (tau * share) ** 2
            if 2 * z * np.sqrt(total) <= width or n == len(path) - 1:
                steps.append(n)
                covered.append(abs(y - mean) <= z * np.sqrt(total))
                break
    return np.array(steps), np.array(covered)


def test_width_stop_misfit_finds_a_narrow_covering_range():
    """Coverage is not monotone in τ: here only τ in (1, 1.001] covers (stop at step 0),
    larger τ stop at step 2 and miss until τ = 100. The smallest covering τ is 1."""
    from coreval.adaptive.misfit import stopped_coverage, width_stop_misfit

    z = norm.ppf(0.95)
    y, width = np.array([0.5]), 2 * z * 1.001
    m = np.array([[0.5 + z, 0.5, 0.5 + 25 * z]])
    v = np.array([[0.0, 1.001**2 - 0.005**2, 0.0]])
    s = np.array([[1.0, 0.5, 0.25]])
    tau = width_stop_misfit(y, m, v, s, width=width)
    assert tau == pytest.approx(1.0, rel=1e-6)
    assert stopped_coverage(tau, y, m, v, s, width=width)[1].all()
    assert not stopped_coverage(2.0, y, m, v, s, width=width)[1].any()


def test_width_stop_misfit_replays_the_stop_and_is_the_smallest_covering_tau():
    """Trajectories of different lengths: the replayed stops match a per-step loop, the
    chosen τ reaches the conformal rank and the candidate below it does not."""
    from coreval.adaptive.misfit import stopped_coverage, width_stop_misfit

    rng = np.random.default_rng(3)
    n_models, z, width = 60, norm.ppf(0.95), 0.06
    truth = rng.uniform(0.2, 0.8, n_models)
    paths = []
    for y in truth:
        steps = int(rng.integers(5, 40))
        share = np.linspace(1.0, 0.3, steps)
        var = 0.01**2 * share
        # a misfit that shrinks faster than the share: the estimate converges to the truth
        mean = y + rng.normal(0, 0.06) * share**2 + rng.normal(0, 0.01, steps) * share
        paths.append(np.column_stack([mean, var, share]))
    length = max(len(p) for p in paths)
    grid = np.full((3, n_models, length), np.nan)
    for j, p in enumerate(paths):
        grid[:, j, :len(p)] = p.T
    for tau in (0.0, 0.02, 0.1, 1.0):
        got = stopped_coverage(tau, truth, *grid, width=width)
        want = _brute_width_stop(tau, truth, paths, width, z)
        np.testing.assert_array_equal(got[0], want[0])
        np.testing.assert_array_equal(got[1], want[1])
    tau = width_stop_misfit(truth, *grid, width=width)
    need = int(np.ceil((n_models + 1) * 0.9))
    assert tau > 0
    assert _brute_width_stop(tau, truth, paths, width, z)[1].sum() >= need
    # the smallest covering τ: no point of a fine scan below it covers, and the scan's
    # first covering point is at most one scan step above it
    scan = np.geomspace(1e-4, 1.0, 4000)
    first = next(s for s in scan
                 if _brute_width_stop(s, truth, paths, width, z)[1].sum() >= need)
    ratio = (scan[-1] / scan[0]) ** (1 / (len(scan) - 1))
    assert first / ratio <= tau <= first * (1.0 + 1e-9)
    with pytest.raises(ValidationError, match="one trajectory row per model"):
        width_stop_misfit(truth[:-1], *grid, width=width)
    bad = grid.copy()
    bad[0, 0, 2] = np.nan  # a gap inside a trajectory
    with pytest.raises(ValidationError, match="NaN padding"):
        width_stop_misfit(truth, *bad, width=width)


def test_width_stopped_tests_learn_tau_where_they_stop():
    """With a width stop, τ is learnt from held-out trajectories replayed under each τ:
    the stops of the final tests are exactly the replayed ones, and they cover."""
    import coreval
    from coreval.adaptive.misfit import padded_paths, stopped_coverage

    source, target, truth = two_ability_matrix()
    fit = {"fit_method": "map", "num_steps": 300, "num_draws": 30}
    stopped = coreval.select(source, "cat-score", 40, seed=0, width=0.15, **fit)
    pred = stopped.predict_array(target)
    assert stopped.predictor.tau_ > 0
    assert stopped.predictor.items_used_.mean() < 40
    assert np.mean((pred.lower <= truth) & (truth <= pred.upper)) >= 0.8
    # the same tests run to the budget with τ = 0, replayed under the learnt τ
    full = coreval.select(source, "cat-score", 40, seed=0, tau=0.0, **fit)
    full.predict_array(target)
    grid = padded_paths(full.predictor.paths_, full.predictor.bank_.n_items + 1)
    steps, _ = stopped_coverage(stopped.predictor.tau_, truth, *grid, width=0.15)
    np.testing.assert_array_equal(steps, stopped.predictor.items_used_)


def test_stopped_widths_is_the_stop_rule_interval_at_each_stop():
    from coreval.adaptive.misfit import stopped_coverage, stopped_widths

    rng = np.random.default_rng(4)
    variances = np.sort(rng.uniform(1e-4, 4e-3, (6, 9)), axis=1)[:, ::-1]
    shares = np.tile(np.linspace(1.0, 0.2, 9), (6, 1))
    truth, means = rng.uniform(0.3, 0.7, 6), rng.uniform(0.3, 0.7, (6, 9))
    tau, width = 0.05, 0.15
    steps, _ = stopped_coverage(tau, truth, means, variances, shares, width=width)
    widths = stopped_widths(tau, variances, shares, steps)
    z = norm.ppf(0.95)
    for i, n in enumerate(steps):
        assert widths[i] == pytest.approx(2 * z * np.sqrt(variances[i, n]
                                                          + (tau * shares[i, n]) ** 2))
        # a test stops at its first step narrow enough, or at its last
        assert widths[i] <= width or n == variances.shape[1] - 1
    with pytest.raises(ValidationError, match="one step per trajectory"):
        stopped_widths(tau, variances, shares, steps[:-1])


def test_padded_paths_lays_trajectories_out_one_row_per_test():
    from coreval.adaptive.misfit import padded_paths

    short = np.array([[0.5, 0.01, 1.0], [0.6, 0.005, 0.8]])
    long = np.array([[0.4, 0.02, 1.0], [0.45, 0.01, 0.9], [0.47, 0.004, 0.7]])
    means, variances, shares = padded_paths([short, long], 4)
    assert means.shape == variances.shape == shares.shape == (2, 4)
    np.testing.assert_array_equal(means[0, :2], short[:, 0])
    np.testing.assert_array_equal(variances[1, :3], long[:, 1])
    np.testing.assert_array_equal(shares[1, :3], long[:, 2])
    assert np.isnan(means[0, 2:]).all() and np.isnan(shares[1, 3])
    with pytest.raises(ValidationError, match="trajectory 1 has shape"):
        padded_paths([short, long], 2)
    with pytest.raises(ValidationError, match="trajectory 0 has shape"):
        padded_paths([short[:, :2]], 4)
