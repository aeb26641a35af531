"""Saved selections: ``coreval select --save DIR`` and ``coreval predict --from DIR``.

A fitted method written to a folder (JSON + NPZ + NetCDF) and read back must predict
exactly what the fitted method in memory predicts, for every item-level method of the
registry that is cheap to fit; the others are skipped below with their reason.
"""

from __future__ import annotations

import dataclasses
import json
import os
import pickle

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import coreval
from coreval.cli import app
from coreval.data.simulate import simulate
from coreval.errors import ValidationError
from coreval.methods import available_methods
from coreval.saved_selection import load_selection, save_selection


def registered(task: str) -> list[str]:
    """The package's registered methods of ``task``.

    Names starting with ``_`` are methods that other test modules register from classes
    defined in the test files (``tests/test_harness.py``); a saved selection rightly refuses
    classes outside coreval and scikit-learn, and which of them are registered depends on
    the order pytest collects the files in.
    """
    return [name for name in available_methods(task) if not name.startswith("_")]

#: Methods whose round trip is not run in the registry-wide test, and why.
EXPENSIVE = {
    **{name: "fits an IRT model of the source models (JAX compilation, 7-35 s); the IRT "
       "round trip is test_irt_method_round_trip"
       for name in ("gp-irt", "gp-irt+", "gp-irt++", "irt-bayes", "irt-bayes+", "irt-bayes++",
                    "p-irt", "metabench+", "metabench++", "cat-fisher", "cat-kl",
                    "cat-score")},
    "stack-irt-anchors": "stacks gp-IRT and irt-bayes with out-of-fold refits of the IRT "
                         "anchors (about 5 min); stack-random and stack-mrmr run the stack's "
                         "round trip",
    "scales": "fits an item-feature model (about 30 s); needs item features",
    "scales-lite": "fits an item-embedding model (about 30 s); needs item embeddings",
}
#: A quick IRT fit (one compiled program for both IRT tests).
IRT_OPTIONS = {"fit_method": "map", "num_steps": 300, "model": "2pl"}
#: Methods whose fitted state coreval does not write (saving says so: see the test below).
NOT_SAVED = {"metabench": "its GAM is a pygam object, which coreval does not read back: "
                          "saving names predictor.gam_ and stops (the path of "
                          "test_a_predictor_holding_a_foreign_object_is_refused)"}


@pytest.fixture(scope="module")
def sim():
    return simulate(41, 60, seed=0).matrix


@pytest.fixture(scope="module")
def source(sim):
    return sim.subset(models=list(sim.models[:40]))


def _same(a, b) -> None:
    for key in ("mean", "lower", "upper"):
        np.testing.assert_array_equal(getattr(a, key), getattr(b, key), err_msg=key)
    assert (a.level, a.interval) == (b.level, b.interval)


def _round_trip(fitted, tmp_path, x):
    save_selection(fitted, tmp_path / "sel")
    loaded = load_selection(tmp_path / "sel")
    _same(fitted.predict_array(x), loaded.predict_array(x))
    assert loaded.coreset.items.tolist() == fitted.coreset.items.tolist()
    assert (loaded.method.name, loaded.seed, loaded.budget) == (fitted.method.name,
                                                                fitted.seed, fitted.budget)
    return loaded


@pytest.mark.parametrize("name", registered("score"))
def test_round_trip_gives_the_same_prediction(name, source, sim, tmp_path):
    if name in EXPENSIVE:
        pytest.skip(f"{name}: {EXPENSIVE[name]}")
    if name in NOT_SAVED:
        pytest.skip(f"{name}: {NOT_SAVED[name]}")
    fitted = coreval.select(source, name, 10, seed=3)
    x = sim.values[35:41][:, fitted.coreset.indices]
    _round_trip(fitted, tmp_path, x)


@pytest.fixture(scope="module")
def benchmarks():
    """A benchmark-level matrix (models × benchmarks, scores in (0, 1)) from 3 factors."""
    rng = np.random.default_rng(0)
    scores = 1.0 / (1.0 + np.exp(-rng.normal(size=(50, 3)) @ rng.normal(size=(3, 20))))
    return coreval.ScoreMatrix(scores, level="benchmark")


def _impute_representatives() -> dict[str, str]:
    """One imputing method per predictor class (its ``-random`` variant where there is one):
    methods that share the predictor and its settings differ only in the coreset."""
    from coreval.methods import get_method

    chosen: dict[tuple, str] = {}
    for name in sorted(registered("impute"), key=lambda n: (not n.endswith("-random"), n)):
        pred = get_method(name).predictor
        key = (pred.cls, tuple(sorted(pred.defaults.items(), key=str)),
               tuple(sorted(pred.fixed.items(), key=str)))
        chosen.setdefault(key, name)
    return {name: rep for name in registered("impute") for key, rep in chosen.items()
            if get_method(name).predictor.cls is key[0]}


#: Imputers whose fit is too slow for this test, by predictor class.
EXPENSIVE_IMPUTERS = {"BayesLowRankImputer": "fits a Bayesian low-rank model by NUTS (JAX "
                                             "compilation, 10-20 s)"}


@pytest.mark.parametrize("name", registered("impute"))
def test_benchmark_level_round_trip(name, benchmarks, tmp_path):
    """Imputing methods too: Gaussian, factor and low-rank imputers, SimBA (its normaliser)."""
    from coreval.methods import get_method

    cls = get_method(name).predictor.cls.__name__
    if cls in EXPENSIVE_IMPUTERS:
        pytest.skip(f"{name}: {EXPENSIVE_IMPUTERS[cls]}")
    rep = _impute_representatives()[name]
    if rep != name:
        pytest.skip(f"{name}: the same predictor ({cls}) and settings as {rep}, which runs; "
                    "only the coreset differs, and it is saved as data")
    fitted = coreval.select(benchmarks.subset(models=list(benchmarks.models[:45])), name, 5,
                            seed=0)
    _round_trip(fitted, tmp_path, benchmarks.values[45:][:, fitted.coreset.indices])


def test_array_layout_survives(tmp_path):
    """A transposed view comes back as one (BLAS sums in another order on another layout)."""
    fitted = coreval.select(simulate(30, 40, seed=1).matrix, "random+", 5, seed=0)
    view = np.arange(24.0).reshape(2, 3, 4).transpose(2, 0, 1)
    fitted.predictor.extra_ = {"view": view, "fortran": np.asfortranarray(np.eye(3)[:, :2])}
    save_selection(fitted, tmp_path / "sel")
    extra = load_selection(tmp_path / "sel").predictor.extra_
    for key, original in fitted.predictor.extra_.items():
        np.testing.assert_array_equal(extra[key], original)
        assert extra[key].strides == original.strides, key


def test_cv_calibration_round_trip(source, sim, tmp_path):
    fitted = coreval.select(source, "random+", 8, seed=1, calibration="cv")
    loaded = _round_trip(fitted, tmp_path, sim.values[38:41][:, fitted.coreset.indices])
    np.testing.assert_array_equal(loaded.cv_residuals, fitted.cv_residuals)
    assert loaded.predict_array(sim.values[40, fitted.coreset.indices]).interval == "cv-residual"


def test_irt_method_round_trip(source, sim, tmp_path):
    """p-irt holds its IRT fit: written in NetCDF by the fit's own save, read back."""
    fitted = coreval.select(source, "p-irt", 10, seed=0, **IRT_OPTIONS)
    loaded = _round_trip(fitted, tmp_path, sim.values[36:41][:, fitted.coreset.indices])
    assert (tmp_path / "sel" / "irt_fit_0" / "posterior.nc").is_file()
    assert type(loaded.predictor.irt_fit_).__name__ == "IRTFit"
    assert not list((tmp_path / "sel").rglob("*.pkl"))


def test_a_predictor_holding_a_foreign_object_is_refused(tmp_path, monkeypatch):
    """What cannot be written safely is named, and nothing is left behind."""
    from coreval.prediction.ridge import RidgePredictor

    fitted = coreval.select(simulate(30, 40, seed=1).matrix, "random+", 5, seed=0)
    monkeypatch.setattr(fitted.predictor, "extra_", object(), raising=False)
    with pytest.raises(ValidationError, match=r"predictor\.extra_.*builtins\.object"):
        save_selection(fitted, tmp_path / "sel")
    assert list(tmp_path.iterdir()) == []
    fitted.predictor.extra_ = lambda: 0  # a function is not data either
    with pytest.raises(ValidationError, match="extra_"):
        save_selection(fitted, tmp_path / "sel")
    assert isinstance(fitted.predictor, RidgePredictor)


def _saved(tmp_path, name="random++"):
    fitted = coreval.select(simulate(30, 40, seed=2).matrix, name, 6, seed=0)
    save_selection(fitted, tmp_path / "sel")
    return fitted, tmp_path / "sel"


def _edit_manifest(folder, change) -> None:
    path = folder / "selection.json"
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


def test_pickles_are_refused(tmp_path):
    _, folder = _saved(tmp_path)
    (folder / "model.pkl").write_bytes(pickle.dumps({"a": 1}))
    with pytest.raises(ValidationError, match=r"model\.pkl is a pickle"):
        load_selection(folder)
    (folder / "model.pkl").unlink()
    (folder / "notes.bin").write_bytes(pickle.dumps([1, 2]))  # by content, whatever the name
    with pytest.raises(ValidationError, match=r"notes\.bin is a pickle"):
        load_selection(folder)


def test_only_allowlisted_classes_are_built(tmp_path):
    _, folder = _saved(tmp_path)
    _edit_manifest(folder, lambda m: m["predictor"].update({"__estimator__": "os:system"}))
    with pytest.raises(ValidationError, match="only classes of coreval, sklearn"):
        load_selection(folder)


def test_mismatches_say_what_differs(tmp_path):
    _, folder = _saved(tmp_path)
    _edit_manifest(folder, lambda m: m.update(coreval_version="0.0.1"))
    with pytest.raises(ValidationError, match=r"coreval 0\.0\.1 \(this is coreval 0\.1\.0\)"):
        load_selection(folder)
    _edit_manifest(folder, lambda m: m.update(
        coreval_version="0.1.0", method="random+"))  # random+ refits with ridge, not kernel
    with pytest.raises(ValidationError, match="KernelRidgePredictor, but random\\+ now uses "
                                              "RidgePredictor"):
        load_selection(folder)
    _edit_manifest(folder, lambda m: m.pop("calibration"))
    with pytest.raises(ValidationError, match="missing entries calibration"):
        load_selection(folder)
    _edit_manifest(folder, lambda m: m.update(calibration="native", predictor={"__dict__": 3}))
    with pytest.raises(ValidationError, match=r"selection\.json is damaged"):
        load_selection(folder)


def test_save_replaces_only_a_saved_selection(tmp_path):
    fitted, folder = _saved(tmp_path)
    save_selection(fitted, folder)  # a saved selection is replaced
    other = tmp_path / "results"
    other.mkdir()
    (other / "keep.txt").write_text("mine")
    with pytest.raises(ValidationError, match="not a saved selection"):
        save_selection(fitted, other)
    assert (other / "keep.txt").read_text() == "mine"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results", "sel"]  # no temp folder


def test_saved_files_honour_the_umask(tmp_path):
    old = os.umask(0o022)
    try:
        _, folder = _saved(tmp_path)
    finally:
        os.umask(old)
    assert (folder.stat().st_mode & 0o777) == 0o755
    for name in ("selection.json", "arrays.npz"):
        assert ((folder / name).stat().st_mode & 0o777) == 0o644


# ----------------------------------------------------------------- command line
@pytest.fixture()
def files(tmp_path, sim, source):
    src = tmp_path / "src.csv"
    source.to_frame().to_csv(src)
    new = tmp_path / "new.csv"
    pd.DataFrame({"item": sim.items, "score": sim.values[40]}).to_csv(new, index=False)
    return src, new


def _json(result) -> dict:
    return json.loads(result.stdout[result.stdout.index("{"):])


def test_cli_save_then_predict_from_without_refit(tmp_path, files, monkeypatch):
    src, new = files
    runner = CliRunner()
    sel = runner.invoke(app, ["select", str(src), "--method", "random++", "--budget", "10",
                              "--seed", "4", "--save", str(tmp_path / "sel"),
                              "--out", str(tmp_path / "coreset.csv")])
    assert sel.exit_code == 0, sel.output
    refit = runner.invoke(app, ["predict", str(src), str(new), "--method", "random++",
                                "--budget", "10", "--seed", "4"])
    assert refit.exit_code == 0, refit.output

    def no_fit(*args, **kwargs):
        raise AssertionError("predict --from refitted the method")

    monkeypatch.setattr("coreval.api.fit_method", no_fit)
    # extra items (the new model answered every item) are ignored with a note
    with pytest.warns(UserWarning, match=r"ignored responses to 50 item\(s\)"):
        saved = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(new)])
    assert saved.exit_code == 0, saved.output
    got, want = _json(saved), _json(refit)
    assert {k: got[k] for k in ("score", "lower", "upper", "k")} == {
        k: want[k] for k in ("score", "lower", "upper", "k")}
    assert (got["method"], got["seed"], got["budget"]) == ("random++", 4, 10.0)


def test_cli_predict_from_takes_a_long_table_and_names_missing_items(tmp_path, files, sim):
    src, _ = files
    runner = CliRunner()
    assert runner.invoke(app, ["select", str(src), "--method", "random+", "--budget", "6",
                               "--save", str(tmp_path / "sel")]).exit_code == 0
    coreset = load_selection(tmp_path / "sel").coreset.items.astype(str)
    scores = dict(zip(sim.items, sim.values[40], strict=True))
    long = tmp_path / "long.csv"
    pd.DataFrame({"model": "new-model", "item": coreset,
                  "score": [scores[i] for i in coreset]}).to_csv(long, index=False)
    ok = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(long)])
    assert ok.exit_code == 0, ok.output
    assert 0 <= _json(ok)["lower"] <= _json(ok)["score"] <= _json(ok)["upper"] <= 1
    short = tmp_path / "short.csv"
    pd.DataFrame({"item": coreset[1:], "score": [scores[i] for i in coreset[1:]]}).to_csv(
        short, index=False)
    missing = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(short)])
    assert missing.exit_code == 2
    assert "lack coreset items (missing or NaN; random+'s RidgePredictor" in missing.output
    assert coreset[0] in missing.output
    other = tmp_path / "other.csv"
    pd.DataFrame({"item": ["mmlu/1", "mmlu/2"], "score": [1.0, 0.0]}).to_csv(other,
                                                                             index=False)
    unknown = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(other)])
    assert unknown.exit_code == 2 and "not in the source data: mmlu/1" in unknown.output


def test_cli_predict_from_refuses_refit_options(tmp_path, files):
    src, new = files
    runner = CliRunner()
    assert runner.invoke(app, ["select", str(src), "--budget", "5",
                               "--save", str(tmp_path / "sel")]).exit_code == 0
    both = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(src), str(new)])
    assert both.exit_code == 2 and "give only RESPONSES" in both.output
    budget = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(new),
                                 "--budget", "5", "--method", "random"])
    assert budget.exit_code == 2 and "--method, --budget: not with --from" in budget.output
    # refitting with other settings than select's: the error says how to reuse a selection
    only = tmp_path / "only.csv"
    coreset = load_selection(tmp_path / "sel").coreset.items.astype(str)
    pd.DataFrame({"item": coreset, "score": 1.0}).to_csv(only, index=False)
    forgot = runner.invoke(app, ["predict", str(src), str(only), "--seed", "9"])
    assert forgot.exit_code == 2 and "lack coreset items" in forgot.output
    assert "predict --from DIR" in forgot.output
    nothing = runner.invoke(app, ["predict", str(src)])
    assert nothing.exit_code == 2 and "give DATA and RESPONSES" in nothing.output
    plain = runner.invoke(app, ["predict", "--from", str(tmp_path), str(new)])
    assert plain.exit_code == 2 and "is not a saved selection" in plain.output
    coreset_file = tmp_path / "coreset.csv"
    runner.invoke(app, ["select", str(src), "--budget", "5", "--out", str(coreset_file)])
    wrong = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(coreset_file)])
    assert wrong.exit_code == 2 and "coreset file written by coreval select" in wrong.output


def test_cli_save_checks_the_folder_before_fitting(tmp_path, files, monkeypatch):
    src, _ = files
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "data.csv").write_text("x")

    def no_fit(*args, **kwargs):
        raise AssertionError("fitted before checking --save")

    monkeypatch.setattr("coreval.api.fit_method", no_fit)
    res = CliRunner().invoke(app, ["select", str(src), "--save", str(tmp_path / "busy")])
    assert res.exit_code == 2 and "not a saved selection" in res.output


def test_adaptive_method_round_trip_allows_missing_responses(tmp_path, sim, source):
    """cat-score's predictor takes NaN for unanswered items: a missing one is no error."""
    fitted = coreval.select(source, "cat-score", 12, seed=0, **IRT_OPTIONS)
    x = sim.values[38:41][:, fitted.coreset.indices].copy()
    x[0, :3] = np.nan
    _round_trip(fitted, tmp_path, x)
    loaded = load_selection(tmp_path / "sel")
    answers = dict(zip(fitted.coreset.items[1:], x[1, 1:], strict=True))  # one item missing
    _same(fitted.predict(answers), loaded.predict(answers))


def test_frozen_fields_survive(tmp_path):
    """Coreset fields (weights, the selector's linear fit) come back as they were."""
    fitted = coreval.select(simulate(30, 40, seed=3).matrix, "anchor-points", 5, seed=0)
    save_selection(fitted, tmp_path / "sel")
    loaded = load_selection(tmp_path / "sel").coreset
    for field in dataclasses.fields(loaded):
        a, b = getattr(loaded, field.name), getattr(fitted.coreset, field.name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b)
        elif field.name != "details":
            assert a == b, field.name


@pytest.mark.parametrize("scale", ["bernoulli", "quadratic"])
def test_interval_scale_round_trip(source, sim, tmp_path, scale):
    fitted = coreval.select(source, "mrmr+", 8, seed=1, calibration="cv",
                            interval_scale=scale)
    loaded = _round_trip(fitted, tmp_path, sim.values[38:41][:, fitted.coreset.indices])
    assert loaded.interval_scale == scale
    np.testing.assert_array_equal(loaded.cv_means, fitted.cv_means)
