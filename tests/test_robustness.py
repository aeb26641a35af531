"""Bad or hostile input: no data lost, no silent wrong number, no traceback.

One test per failure of the adversarial pass (outputs destroyed, unchecked responses,
mangling readers, silent compare failures, tracebacks at the CLI, raw errors in the API,
batch-dependent predictions, trust boundaries).
"""

from __future__ import annotations

import os
import stat
import warnings

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

import coreval
from coreval.cli import app
from coreval.data import ScoreMatrix
from coreval.data.io import load_matrix
from coreval.data.npz import write_npz
from coreval.errors import ValidationError

runner = CliRunner()


@pytest.fixture(scope="module")
def binary() -> ScoreMatrix:
    rng = np.random.default_rng(3)
    theta, b = rng.normal(size=(40, 1)), rng.normal(size=(1, 50))
    y = (rng.random((40, 50)) < 1 / (1 + np.exp(-(theta - b)))).astype(float)
    return ScoreMatrix(y, models=[f"m{i}" for i in range(40)],
                       items=[f"{j:03d}" for j in range(50)], name="bin")


@pytest.fixture
def npz(tmp_path, binary):
    path = tmp_path / "bin.npz"
    write_npz(binary, path)
    return path


def _one_line_error(result, *needles: str) -> None:
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    errors = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1, result.output
    for needle in needles:
        assert needle in errors[0], errors[0]


# ----------------------------------------------------------------- output folders
def _lsat_csv(tmp_path):
    rng = np.random.default_rng(0)
    y = (rng.random((60, 5)) < 0.6).astype(int)
    path = tmp_path / "resp.csv"
    pd.DataFrame(y, columns=[f"i{j}" for j in range(5)]).rename_axis("id").reset_index() \
        .to_csv(path, index=False)
    return path


def test_fit_never_destroys_a_folder_that_is_not_a_saved_model(tmp_path):
    data = _lsat_csv(tmp_path)
    models = tmp_path / "models"
    (models / "earlier").mkdir(parents=True)
    (models / "notes.txt").write_text("keep me")
    result = runner.invoke(app, ["fit", str(data), "--method", "mml", "--out", str(models)])
    _one_line_error(result, "not a saved coreval model")
    assert (models / "notes.txt").read_text() == "keep me" and (models / "earlier").is_dir()
    # a file is not turned into a folder
    target = tmp_path / "a_file"
    target.write_text("data")
    _one_line_error(runner.invoke(app, ["fit", str(data), "--out", str(target)]), "not a folder")
    assert target.read_text() == "data"
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".a_file")]
    # the working folder is refused
    cwd = os.getcwd()
    try:
        os.chdir(tmp_path)
        _one_line_error(runner.invoke(app, ["fit", str(data), "--out", "."]), "working folder")
    finally:
        os.chdir(cwd)


def test_fit_replaces_a_saved_model_only_with_force(tmp_path):
    data = _lsat_csv(tmp_path)
    out = tmp_path / "models" / "lsat"
    first = runner.invoke(app, ["fit", str(data), "--method", "mml", "--out", str(out)])
    assert first.exit_code == 0, first.output
    card = (out / "card.json").read_text()
    again = runner.invoke(app, ["fit", str(data), "--method", "mml", "--out", str(out)])
    _one_line_error(again, "--force")
    assert (out / "card.json").read_text() == card
    forced = runner.invoke(app, ["fit", str(data), "--method", "mml", "--model", "1pl",
                                 "--out", str(out), "--force"])
    assert forced.exit_code == 0, forced.output
    assert '"1pl"' in (out / "card.json").read_text()
    assert sorted(p.name for p in out.parent.iterdir()) == ["lsat"]  # no leftovers


# ----------------------------------------------------------------- responses
@pytest.mark.parametrize("value", [2.0, -1.0, 100.0, np.inf, -np.inf])
def test_responses_outside_the_binary_domain_are_refused_naming_item_and_value(binary, value):
    fitted = coreval.select(binary, "random++", 10, seed=0)
    item = str(fitted.coreset.items[3])
    responses = {str(i): 1.0 for i in fitted.coreset.items}
    responses[item] = value
    with pytest.raises(ValidationError, match=rf"0 or 1.*{item}={value:g}"):
        fitted.predict(responses)


def test_continuous_responses_must_be_in_the_source_range():
    rng = np.random.default_rng(0)
    m = ScoreMatrix(rng.random((30, 20)))
    fitted = coreval.select(m, "random+", 5, seed=0)
    ok = fitted.predict(np.full(5, 0.5))
    assert np.isfinite(ok.mean).all()
    with pytest.raises(ValidationError, match=r"within \[-0.9.*, 1.9.*\].*=7"):
        fitted.predict(np.array([0.5, 0.5, 7.0, 0.5, 0.5]))


def test_non_numeric_response_is_a_validation_error(binary):
    fitted = coreval.select(binary, "random++", 10, seed=0)
    with pytest.raises(ValidationError, match="must be numbers"):
        fitted.predict({str(fitted.coreset.items[0]): "x"})


# ----------------------------------------------------------------- readers
def test_duplicate_headers_are_an_error(tmp_path):
    path = tmp_path / "dup.csv"
    path.write_text("model,i1,i2,i1\nA,1,0,1\nB,0,1,1\nC,1,1,0\n")
    with pytest.raises(ValidationError, match=r"duplicate column names.*i1"):
        load_matrix(path)


def test_a_stray_value_in_binary_data_is_named(tmp_path):
    rng = np.random.default_rng(1)
    y = (rng.random((30, 40)) < 0.5).astype(int)
    y[4, 7] = 2
    frame = pd.DataFrame(y, columns=[f"q{j}" for j in range(40)])
    frame.insert(0, "model", [f"m{i}" for i in range(30)])
    path = tmp_path / "stray.csv"
    frame.to_csv(path, index=False)
    with pytest.warns(UserWarning, match="m4/q7=2"):
        m = load_matrix(path)
    assert m.kind == "continuous"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_matrix(path, kind="continuous")  # confirmed: no warning


def test_response_csv_ids_keep_their_spelling(tmp_path, npz, binary):
    out = tmp_path / "coreset.csv"
    sel = runner.invoke(app, ["select", str(npz), "--method", "random++", "--budget", "6",
                              "--out", str(out)])
    assert sel.exit_code == 0, sel.output
    items = pd.read_csv(out, dtype={"item": str})["item"]
    assert items.str.len().eq(3).all()  # "006", not 6
    responses = tmp_path / "new.csv"
    pd.DataFrame({"item": items, "score": 1.0}).to_csv(responses, index=False)
    pred = runner.invoke(app, ["predict", str(npz), str(responses), "--method", "random++",
                               "--budget", "6"])
    assert pred.exit_code == 0, pred.output
    assert '"score"' in pred.output


# ----------------------------------------------------------------- compare
def _compare(npz, tmp_path, *extra: str):
    return runner.invoke(app, ["compare", str(npz), "--methods", "random", "--budget", "5",
                               "--seeds", "1", "--train-models", "20",
                               "--out", str(tmp_path / "r.parquet"), *extra])


def test_compare_option_error_fails_before_any_cell(npz, tmp_path):
    _one_line_error(_compare(npz, tmp_path, "--calibration", "bogus"), "calibration")
    assert not (tmp_path / "r.parquet").exists()


def test_compare_exits_non_zero_on_failed_cells_and_retries_them(npz, tmp_path):
    # a budget of 500 items from a pool of 50 fails in every cell
    bad = runner.invoke(app, ["compare", str(npz), "--methods", "random+", "--budget", "500",
                              "--seeds", "2", "--train-models", "20", "--split", "random",
                              "--out", str(tmp_path / "r.parquet")])
    assert bad.exit_code == 1, bad.output
    assert "2 of 2 cells failed" in bad.output and "Traceback" not in bad.output
    # failed cells are kept as failed, and --retry-failed runs them again
    parts = tmp_path / "r.parquet.parts"
    before = {p.name: p.stat().st_mtime_ns for p in parts.glob("*.parquet")}
    again = runner.invoke(app, ["compare", str(npz), "--methods", "random+", "--budget", "500",
                                "--seeds", "2", "--train-models", "20", "--split", "random", "--retry-failed",
                                "--out", str(tmp_path / "r.parquet")])
    assert again.exit_code == 1
    after = {p.name: p.stat().st_mtime_ns for p in parts.glob("*.parquet")}
    assert before.keys() == after.keys() and all(after[k] != before[k] for k in before)


def test_compare_refuses_two_datasets_with_one_name(tmp_path, binary):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        write_npz(binary, tmp_path / folder / "bin.npz")
    result = runner.invoke(app, ["compare", str(tmp_path / "a" / "bin.npz"),
                                 str(tmp_path / "b" / "bin.npz"), "--methods", "random",
                                 "--out", str(tmp_path / "r.parquet")])
    _one_line_error(result, "both named", "rename")


# ----------------------------------------------------------------- the CLI boundary
@pytest.mark.parametrize("args, needle", [
    (["--train-models", "abc"], "--train-models"),
    (["--n-jobs", "0"], "n-jobs"),
    (["--seeds", "0"], "seeds"),
])
def test_compare_bad_arguments_are_one_line(npz, tmp_path, args, needle):
    result = runner.invoke(app, ["compare", str(npz), "--out", str(tmp_path / "r.parquet"),
                                 *args])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert needle in result.output


@pytest.mark.parametrize("seed", ["-1", str(2**32)])
def test_seed_out_of_range_is_one_line(npz, seed):
    result = runner.invoke(app, ["select", str(npz), "--seed", seed])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "seed" in result.output.lower()


def test_out_that_is_a_folder_is_refused(npz, tmp_path):
    _one_line_error(runner.invoke(app, ["select", str(npz), "--out", str(tmp_path)]),
                    "is a folder")
    _one_line_error(runner.invoke(app, ["compare", str(npz), "--out", str(tmp_path)]),
                    "is a folder")


def test_unreadable_responses_are_one_line(npz, tmp_path):
    latin = tmp_path / "latin.csv"
    latin.write_bytes(b"item,score\n\xe9\xe8,1\n")
    _one_line_error(runner.invoke(app, ["predict", str(npz), str(latin)]), "latin.csv")
    _one_line_error(runner.invoke(app, ["predict", str(npz), str(tmp_path)]),
                    "no lm-eval sample files")
    inf = tmp_path / "inf.csv"
    fitted = coreval.select(load_matrix(npz), "random++", 0.1, seed=0)
    pd.DataFrame({"item": fitted.coreset.items, "score": np.inf}).to_csv(inf, index=False)
    _one_line_error(runner.invoke(app, ["predict", str(npz), str(inf)]), "0 or 1")


# ----------------------------------------------------------------- the API
@pytest.mark.parametrize("call, needle", [
    (lambda m: coreval.select(m, "random", "10"), "budget must be a number"),
    (lambda m: coreval.select(m, "random", 10, seed=-1), "seed must be between"),
    (lambda m: coreval.select(m, "random", 10, seed=2**32), "seed must be between"),
    (lambda m: coreval.select(m, "random", 10, seed=1.5), "seed must be an integer"),
    (lambda m: ScoreMatrix(np.array([["a", "b"], ["c", "d"]])), "must be numbers"),
    (lambda m: ScoreMatrix(m.values * 1e300), "rescale"),
])
def test_api_arguments_raise_validation_errors(binary, call, needle):
    with pytest.raises(ValidationError, match=needle):
        call(binary)


# ----------------------------------------------------------------- batch independence
def test_irt_bayes_prediction_does_not_depend_on_the_batch(binary):
    fitted = coreval.select(binary, "irt-bayes", 15, seed=0, num_steps=200, num_draws=50,
                            misfit="none", show_progress=False)
    x = binary.values[:3, fitted.coreset.indices]
    together = fitted.predict_array(x)
    for j in range(3):
        alone = fitted.predict_array(x[j:j + 1])
        assert alone.mean[0] == together.mean[j]
        assert alone.lower[0] == together.lower[j] and alone.upper[0] == together.upper[j]
    reversed_ = fitted.predict_array(x[::-1])
    assert np.array_equal(reversed_.mean[::-1], together.mean)


# ----------------------------------------------------------------- cost
@pytest.mark.parametrize("method", ["irt-bayes"])
def test_predict_fits_each_irt_model_once(npz, tmp_path, binary, monkeypatch, method):
    """One ``coreval predict`` call never repeats an IRT fit of the same data and spec."""
    from coreval.base.cache import source_fingerprint
    from coreval.irt import inference

    calls: list[tuple] = []
    real_fit = inference.fit

    def counting_fit(model, data, **kwargs):
        matrix = data if isinstance(data, ScoreMatrix) else ScoreMatrix(np.asarray(data))
        calls.append((model, source_fingerprint(matrix), kwargs.get("method"),
                      kwargs.get("dims"), repr(kwargs.get("priors")), kwargs.get("seed")))
        return real_fit(model, data, **kwargs)

    monkeypatch.setattr(inference, "fit", counting_fit)
    responses = tmp_path / "new.csv"  # every item: those outside the coreset are ignored
    pd.DataFrame({"item": binary.items, "score": binary.values[0]}).to_csv(responses,
                                                                            index=False)
    result = runner.invoke(app, ["predict", str(npz), str(responses), "--method", method,
                                 "--budget", "10", "--option", "num_steps=300"])
    assert result.exit_code == 0, result.output
    assert calls, "the IRT fit was not reached through coreval.irt.inference.fit"
    assert len(calls) == len(set(calls)), f"{method}: an IRT fit was repeated: {calls}"


# ----------------------------------------------------------------- trust boundaries, modes
def test_a_cache_folder_writable_by_others_is_not_used(tmp_path, monkeypatch):
    from coreval import jax_cache

    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR", raising=False)
    monkeypatch.setattr(jax_cache.sys, "modules", {k: v for k, v in jax_cache.sys.modules.items()
                                                   if k != "jax"})
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.warns(UserWarning, match="writable by other users"):
        assert jax_cache.enable_compilation_cache(shared) is None
    private = tmp_path / "private"
    assert jax_cache.enable_compilation_cache(private) == private
    assert not stat.S_IMODE(private.stat().st_mode) & 0o077
    # a private-looking folder that another user created first is theirs to fill
    monkeypatch.delenv("JAX_COMPILATION_CACHE_DIR")
    monkeypatch.setattr(jax_cache.os, "getuid", lambda: private.stat().st_uid + 1)
    with pytest.warns(UserWarning, match="owned or writable by other users"):
        assert jax_cache.enable_compilation_cache(private) is None


def test_outputs_honour_the_umask(tmp_path):
    from coreval._atomic import write_text_atomic

    old = os.umask(0o022)
    try:
        path = write_text_atomic(tmp_path / "results.md", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


def test_lm_eval_log_that_is_not_utf8_is_one_line(tmp_path):
    (tmp_path / "samples_arc_2024-01-01T00-00-00.jsonl").write_bytes(
        b'{"doc_id": 0, "acc": 1.0, "doc": "\xe9"}\n')
    _one_line_error(runner.invoke(app, ["select", str(tmp_path)]), "not UTF-8")


# ----------------------------------------------------------------- small data
def test_too_few_source_models_names_methods_that_run(binary):
    with pytest.raises(ValidationError, match=r"random\+\+: .*needs at least 3 source models, "
                                              r"got 2; methods that run with 2 .*random"):
        coreval.select(binary.take([0, 1]), "random++", 5)


def test_vacuous_interval_and_few_models_are_flagged(tmp_path, binary):
    from coreval.report.score_card import score_card

    few = binary.take(np.arange(7))
    fitted = coreval.select(few, "random+", 3, seed=0)
    responses = dict(zip(fitted.coreset.items, [1.0, 0.0, 1.0], strict=True))
    card = score_card(few, responses, method="random+", budget=3, fitted=fitted)
    text = " ".join(card.notes)
    assert "only 7 source models" in text
    npz = tmp_path / "few.npz"
    write_npz(few, npz)
    csv = tmp_path / "r.csv"
    pd.DataFrame({"item": list(responses), "score": list(responses.values())}).to_csv(
        csv, index=False)
    result = runner.invoke(app, ["predict", str(npz), str(csv), "--method", "random+",
                                 "--budget", "3"])
    assert result.exit_code == 0, result.output
    assert "note: only 7 source models" in result.output


def test_small_data_caveats_rules():
    from coreval.report.score_card import small_data_caveats

    assert small_data_caveats(50, 0.4, 0.5) == []
    assert any("nearly vacuous" in c for c in small_data_caveats(50, 0.1, 0.8))
    assert any("only 5 source models" in c for c in small_data_caveats(5, 0.4, 0.5))
    assert any("nearly vacuous" in c for c in small_data_caveats(50, 10, 80, (0, 100)))


def test_predict_with_a_benchmark_level_method_reports_every_benchmark(tmp_path):
    """An imputing method predicts one score per benchmark: all are printed, not the first."""
    import json

    rng = np.random.default_rng(2)
    latent = rng.normal(size=(31, 2))
    values = 50 + 10 * latent @ rng.normal(size=(2, 8)) + rng.normal(size=(31, 8))
    matrix = ScoreMatrix(values, models=[f"m{i}" for i in range(31)],
                         items=[f"bench{j}" for j in range(8)], name="bench")
    write_npz(matrix.take(np.arange(30)), tmp_path / "bench.npz")
    pd.DataFrame({"item": matrix.items, "score": values[30]}).to_csv(tmp_path / "new.csv",
                                                                     index=False)
    result = runner.invoke(app, ["predict", str(tmp_path / "bench.npz"),
                                 str(tmp_path / "new.csv"), "--method", "gauss-mi",
                                 "--budget", "3"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output[result.output.index("{"):])
    rows = {row["item"]: row for row in out["benchmarks"]}
    assert sorted(rows) == sorted(matrix.items) and "score" not in out
    observed = [item for item, row in rows.items() if row["observed"]]
    assert len(observed) == 3
    for j, item in enumerate(matrix.items):
        row = rows[item]
        assert row["lower"] <= row["score"] <= row["upper"]
        if row["observed"]:
            assert row["score"] == pytest.approx(values[30, j])
    hidden = [rows[i]["score"] for i in matrix.items if not rows[i]["observed"]]
    truth = [values[30, j] for j, i in enumerate(matrix.items) if not rows[i]["observed"]]
    assert np.corrcoef(hidden, truth)[0, 1] > 0.5
