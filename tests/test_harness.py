"""The evaluation harness: run_grid, resumable parts, summaries and stability tables."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from coreval.base import Coreset, Prediction, Predictor, Selector
from coreval.data.matrix import ScoreMatrix
from coreval.data.splits import iter_splits
from coreval.errors import UnknownMethodError, ValidationError
from coreval.harness import (
    CONTRACT_COLUMNS,
    dataset_sigmas,
    format_summary,
    nogueira_stability,
    read_results,
    run_grid,
    sigma_weighted_summary,
    stability_table,
    summarize,
)
from coreval.harness.metrics import Standardizer
from coreval.methods import Component, Method, register_method
from coreval.selection.random import RandomSelector

TIMING = ["seconds_select", "seconds_fit", "seconds_predict"]


# ----------------------------------------------------------------------------- test methods
class SeededSelector(Selector):
    """k columns drawn with ``default_rng(seed)`` (or ``fail=True`` to raise)."""

    uses_source_models = False  # a random draw: calibration="auto" keeps the native interval

    def __init__(self, k: int = 1, seed: int = 0, fail: bool = False, sleep: float = 0.0):
        self.k = k
        self.seed = seed
        self.fail = fail
        self.sleep = sleep

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        if self.fail:
            raise RuntimeError("deliberate failure\nsecond line")
        if self.sleep:
            time.sleep(self.sleep)
        idx = np.random.default_rng(self.seed).choice(source.n_items, size=k, replace=False)
        return Coreset.from_indices(source, idx, method="seeded")


class MeanPredictor(Predictor):
    """Predict the mean of the coreset scores, ± a fixed half width."""

    def __init__(self, half_width: float = 0.05):
        self.half_width = half_width

    def _fit(self, source, coreset):
        pass

    def _predict(self, x):
        m = x.mean(axis=1)
        return Prediction(m, m - self.half_width, m + self.half_width, interval="bootstrap")


class ColumnMeanImputer(Predictor):
    """Impute every column with its source mean, ± 1.645 source sd (allows NaN responses)."""

    task = "impute"
    allows_missing_responses = True

    def __init__(self, use_ids: bool = False):
        self.use_ids = use_ids

    def _fit(self, source, coreset):
        self.mean_ = np.nanmean(source.values, axis=0)
        self.sd_ = np.nan_to_num(np.nanstd(source.values, axis=0))
        self.items_ = source.items

    def _predict(self, x):
        n = x.shape[0]
        m = np.tile(self.mean_, (n, 1))
        m[np.isnan(x).all(axis=1)] = np.nan  # no observed coreset score: no prediction
        cols = self.items_[::-1] if self.use_ids else None
        if self.use_ids:
            m = m[:, ::-1]
        sd = np.tile(self.sd_, (n, 1))[:, ::-1] if self.use_ids else np.tile(self.sd_, (n, 1))
        return Prediction(m, m - 1.645 * sd, m + 1.645 * sd, interval="gaussian-conditional",
                          columns=cols)


for _m in (Method("_test-mean", Component(SeededSelector), Component(MeanPredictor)),
           Method("_test-fail", Component(SeededSelector, fixed={"fail": True}),
                  Component(MeanPredictor)),
           Method("_test-impute", Component(SeededSelector), Component(ColumnMeanImputer),
                  task="impute")):
    register_method(_m, replace=True)


# ----------------------------------------------------------------------------- data
def _binary(n_models=40, n_items=30, seed=0) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    theta = rng.normal(size=(n_models, 1))
    b = rng.normal(size=(1, n_items))
    y = (rng.random((n_models, n_items)) < 1 / (1 + np.exp(-(theta - b)))).astype(float)
    return ScoreMatrix(y, name="toy")


def _continuous(n_models=30, n_items=8, seed=1) -> ScoreMatrix:
    rng = np.random.default_rng(seed)
    y = rng.normal(size=(n_models, 2)) @ rng.normal(size=(2, n_items)) * 5 + 50
    y[rng.random(y.shape) < 0.25] = np.nan
    y[0, :] = 50.0  # keep every row observed somewhere
    return ScoreMatrix(y, level="benchmark", name="bench")


def _strip(df: pd.DataFrame) -> pd.DataFrame:
    return df.drop(columns=TIMING).reset_index(drop=True)


# ----------------------------------------------------------------------------- run_grid
def test_grid_checks_the_compiled_programs_after_every_cell(tmp_path, monkeypatch):
    """A long grid drops JAX's programs before they exhaust the memory mappings."""
    import coreval.harness.grid as grid

    calls = []
    monkeypatch.setattr(grid, "release_compiled_programs", lambda: calls.append(1))
    df = run_grid({"toy": _binary()}, ["_test-mean"], [0.2, 5], seeds=[0, 1],
                  split="random", out=tmp_path / "r.parquet", progress=False)
    assert len(df) == 4 and len(calls) == 4


def test_columns_and_score_metrics_match_direct_computation(tmp_path):
    data = _binary()
    out = tmp_path / "r.parquet"
    df = run_grid({"toy": data}, ["_test-mean"], [0.2, 5], n_source=[10, None],
                  seeds=[0, 1], split="random", out=out, progress=False)
    assert list(df.columns[: len(CONTRACT_COLUMNS)]) == list(CONTRACT_COLUMNS)
    assert len(df) == 2 * 2 * 2 and df["error"].isna().all()
    assert out.exists() and (tmp_path / "r.summary.md").exists()
    pd.testing.assert_frame_equal(read_results(out), df)
    # recompute one row independently
    row = df[(df.seed == 1) & (df.budget == 0.2) & (df.n_source == 10)].iloc[0]
    sp = iter_splits(data, "random", seeds=[1], n_source=10)[0]
    k = int(0.2 * data.n_items)
    idx = np.random.default_rng(1).choice(data.n_items, size=k, replace=False)
    truth = data.values[sp.target].mean(axis=1)
    pred = data.values[np.ix_(sp.target, idx)].mean(axis=1)
    assert row.k == k and row.coreset == [str(i) for i in data.items[idx]]
    assert row.n_target == len(sp.target) and row.seed == 1
    assert row.mae == pytest.approx(np.mean(np.abs(pred - truth)))
    assert row.rmse == pytest.approx(np.sqrt(np.mean((pred - truth) ** 2)))
    assert row.kendall == pytest.approx(stats.kendalltau(truth, pred)[0])
    assert row.spearman == pytest.approx(stats.spearmanr(truth, pred)[0])
    assert row.pearson == pytest.approx(stats.pearsonr(truth, pred)[0])
    assert row.r2 == pytest.approx(
        1 - np.sum((truth - pred) ** 2) / np.sum((truth - truth.mean()) ** 2))
    assert row.coverage90 == pytest.approx(np.mean((truth >= pred - 0.05) & (truth <= pred + 0.05)))
    assert row.width90 == pytest.approx(0.1)
    assert row.interval == "bootstrap" and not bool(row.uses_source_models)
    assert (df[["seconds_select", "seconds_fit", "seconds_predict"]] >= 0).all().all()
    assert df["n_source"].isna().sum() == 4  # None = the split's default, kept as NA


def test_failing_and_oversized_cells_are_recorded_not_raised(tmp_path):
    df = run_grid({"toy": _binary(n_items=10)}, ["_test-fail", "_test-mean"], [3, 20],
                  n_source=[10], seeds=[0], split="random", out=tmp_path / "r.parquet",
                  progress=False)
    assert len(df) == 4
    fail = df[(df.method == "_test-fail") & (df.budget == 3)]
    assert fail["error"].str.startswith("RuntimeError: deliberate failure").all()
    assert not fail["error"].str.contains("second line").any()
    assert fail["mae"].isna().all()
    big = df[df.budget == 20]
    assert big["error"].str.contains("larger than the pool").all() and big["k"].isna().all()
    ok = df[(df.method == "_test-mean") & (df.budget == 3)]
    assert ok["error"].isna().all() and np.isfinite(ok["mae"]).all()
    s = summarize(df)
    assert s.loc[s.method == "_test-fail", "n_failed"].tolist() == [1, 1]
    assert (ok["selection"] == "method").all() and fail["selection"].isna().all()


def test_the_grid_records_whose_coreset_a_method_used(tmp_path):
    df = run_grid({"toy": _binary(n_items=30)}, ["mrmr+"], [5], n_source=[20], seeds=[0],
                  split="random", out=tmp_path / "r.parquet", progress=False,
                  method_options={"mrmr+": {"selection": "random"}})
    assert df["error"].isna().all()
    assert df["selection"].tolist() == ["random"] and not df["uses_source_models"].any()
    with pytest.raises(ValidationError, match="selection must be one of"):
        run_grid({"toy": _binary()}, ["mrmr+"], [3], seeds=[0], out=tmp_path / "s.parquet",
                 method_options={"mrmr+": {"selection": "best"}})


def test_bad_grid_arguments_raise_one_line_errors(tmp_path):
    out = tmp_path / "r.parquet"
    with pytest.raises(UnknownMethodError, match="no-such-method"):
        run_grid({"toy": _binary()}, ["no-such-method"], [3], seeds=[0], out=out)
    with pytest.raises(ValidationError, match="expected a ScoreMatrix"):
        run_grid({"toy": np.zeros((3, 3))}, ["_test-mean"], [3], seeds=[0], out=out)
    with pytest.raises(ValidationError, match="at least one budget"):
        run_grid({"toy": _binary()}, ["_test-mean"], [], seeds=[0], out=out)
    with pytest.raises(ValidationError, match="must be positive"):
        run_grid({"toy": _binary()}, ["_test-mean"], [-1], seeds=[0], out=out)
    with pytest.raises(ValidationError, match="must be numbers"):
        run_grid({"toy": _binary()}, ["_test-mean"], ["0.1"], seeds=[0], out=out)
    with pytest.raises(ValidationError, match="n_source must be an integer"):
        run_grid({"toy": _binary()}, ["_test-mean"], [3], n_source=["30"], seeds=[0], out=out)
    with pytest.raises(ValidationError, match="does not apply to kfold"):
        run_grid({"toy": _binary()}, ["_test-mean"], [3], n_source=[30], split="kfold",
                 seeds=[0], out=out)
    with pytest.raises(ValidationError, match="not in the grid"):
        run_grid({"toy": _binary()}, ["_test-mean"], [3], seeds=[0], out=out,
                 method_options={"other": {}})


def _impute_reference(data: ScoreMatrix, source, target, selected):
    """Benchmark-selection §3/§6 written out per model, for the column-mean imputer."""
    y_tr, y_te = data.values[source], data.values[target]
    o_tr = ~np.isnan(y_tr)
    cnt = np.maximum(o_tr.sum(0), 1)
    mean = np.where(o_tr, y_tr, 0).sum(0) / cnt
    var = (np.where(o_tr, y_tr - mean, 0) ** 2).sum(0) / np.maximum(cnt - 1, 1)
    std = np.sqrt(np.maximum(var, (0.01 * (np.abs(mean) + 1)) ** 2))
    col_mean = np.nanmean(y_tr, axis=0)
    ss_res = ss_tot = 0.0
    n = skipped = 0
    for i in range(len(target)):
        obs = ~np.isnan(y_te[i])
        if not obs[selected].any():
            skipped += 1
            continue
        for j in range(data.n_items):
            if j in selected or not obs[j]:
                continue
            z = np.clip((y_te[i, j] - mean[j]) / std[j], -10, 10)
            zp = (col_mean[j] - mean[j]) / std[j]
            ss_res += (z - zp) ** 2
            ss_tot += z ** 2
            n += 1
    return 1 - ss_res / max(ss_tot, 1e-12), np.sqrt(ss_res / n), skipped


@pytest.mark.parametrize("use_ids", [False, True])
def test_impute_task_matches_protocol_formulas(tmp_path, use_ids):
    data = _continuous()
    df = run_grid({"bench": data}, ["_test-impute"], [2], n_source=[None], seeds=[0, 3],
                  split="kfold", folds=5, out=tmp_path / "r.parquet", progress=False,
                  method_options={"_test-impute": {"use_ids": use_ids}})
    assert df["error"].isna().all() and (df["task"] == "impute").all()
    assert df["fold"].tolist() == [0, 3]
    for _, row in df.iterrows():
        sp = iter_splits(data, "kfold", seeds=[row.fold], folds=5)[0]
        selected = data.item_index(row.coreset)
        r2_ref, rmse_ref, skipped = _impute_reference(data, sp.source, sp.target, selected)
        assert row.r2 == pytest.approx(r2_ref)
        assert row.rmse == pytest.approx(rmse_ref)
        assert row.n_skipped == skipped
        # width in training-standardised units: 2 * 1.645 * sd / std, averaged over cells
        assert row.width90 > 0 and 0 <= row.coverage90 <= 1


def test_lofo_split_records_family_label(tmp_path):
    base = _binary(n_models=12)
    meta = pd.DataFrame({"family": ["a"] * 4 + ["b"] * 5 + ["c"] * 3}, index=base.models)
    data = ScoreMatrix(base.values, models=base.models, model_meta=meta)
    df = run_grid({"fam": data}, ["_test-mean"], [3], n_source=[None], seeds=[0], split="lofo",
                  out=tmp_path / "r.parquet", progress=False)
    assert df["label"].tolist() == ["a", "b", "c"] and df["fold"].tolist() == [0, 1, 2]
    assert df["n_target"].tolist() == [4, 5, 3] and df["error"].isna().all()


def test_parallel_joblib_equals_sequential(tmp_path):
    kw = dict(n_source=[10], seeds=[0, 1, 2], split="random", progress=False)
    seq = run_grid({"toy": _binary()}, ["_test-mean"], [3, 6], out=tmp_path / "a.parquet",
                   **kw)
    par = run_grid({"toy": _binary()}, ["_test-mean"], [3, 6], out=tmp_path / "b.parquet",
                   n_jobs=2, **kw)
    pd.testing.assert_frame_equal(_strip(seq), _strip(par))


def test_dask_scheduler_equals_sequential(tmp_path):
    distributed = pytest.importorskip("dask.distributed")
    kw = dict(n_source=[10], seeds=[0, 1], split="random", progress=False)
    seq = run_grid({"toy": _binary()}, ["_test-mean"], [3], out=tmp_path / "a.parquet", **kw)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster:
        dsk = run_grid({"toy": _binary()}, ["_test-mean"], [3], out=tmp_path / "b.parquet",
                       scheduler=cluster.scheduler_address, **kw)
    pd.testing.assert_frame_equal(_strip(seq), _strip(dsk))


def test_resume_skips_finished_cells_and_reruns_changed_ones(tmp_path):
    out = tmp_path / "r.parquet"
    kw = dict(n_source=[10], seeds=[0, 1], split="random", out=out, progress=False)
    first = run_grid({"toy": _binary()}, ["_test-mean"], [3], **kw)
    parts = sorted((tmp_path / "r.parquet.parts").glob("*.parquet"))
    assert len(parts) == 2
    mtimes = {p: p.stat().st_mtime_ns for p in parts}
    again = run_grid({"toy": _binary()}, ["_test-mean"], [3, 5], **kw)
    assert all(p.stat().st_mtime_ns == t for p, t in mtimes.items())  # not recomputed
    pd.testing.assert_frame_equal(again[again.budget == 3].reset_index(drop=True), first)
    # different data -> different cells
    other = run_grid({"toy": _binary(seed=7)}, ["_test-mean"], [3], **kw)
    assert set(other["cell"]).isdisjoint(first["cell"])


def test_cell_keys_see_item_features_and_whole_option_arrays():
    """Results that change with item metadata or an option array get their own cell key."""
    from coreval.harness.store import matrix_fingerprint, stable_hash

    plain = _binary()
    y, items = plain.values, plain.items
    feats = [ScoreMatrix(y, items=items, name="toy", item_meta=pd.DataFrame(
        {"feat_x": np.arange(y.shape[1]) * f}, index=items)) for f in (1.0, 2.0)]
    keys = {matrix_fingerprint(m) for m in (plain, *feats)}
    assert len(keys) == 3
    # numpy's repr elides the middle of long arrays and rounds to 8 digits
    a = np.zeros(2000)
    b = a.copy()
    b[1000] = 1.0
    assert stable_hash({"features": a}) != stable_hash({"features": b})
    assert stable_hash({"w": np.array([0.1])}) != stable_hash({"w": np.array([0.1 + 1e-12])})
    assert stable_hash({"w": np.array([0.1])}) == stable_hash({"w": np.array([0.1])})


class SlowSelector(SeededSelector):
    """Seeded selector that logs each fit to $GRID_LOG and sleeps $GRID_SLEEP seconds."""

    def _select(self, source: ScoreMatrix, k: int) -> Coreset:
        log = os.environ.get("GRID_LOG")
        if log:
            with open(log, "a") as fh:
                fh.write(f"{k} {self.seed}\n")
        time.sleep(float(os.environ.get("GRID_SLEEP", "0")))
        return super()._select(source, k)


register_method(Method("_test-slow", Component(SlowSelector), Component(MeanPredictor)),
                replace=True)


def _kill_grid(out) -> pd.DataFrame:
    y = (np.random.default_rng(0).random((30, 20)) < 0.6).astype(float)
    return run_grid({"toy": ScoreMatrix(y)}, ["_test-slow"], [2, 4, 6], n_source=[10],
                    seeds=[0, 1, 2, 3], split="random", out=out, progress=False)


_KILL_SCRIPT = textwrap.dedent("""
    import sys
    sys.path.insert(0, {tests!r})
    from test_harness import _kill_grid
    _kill_grid(sys.argv[1])
""")


def _launch(script: Path, out: Path, log: Path, sleep: float) -> subprocess.Popen:
    env = {**os.environ, "GRID_LOG": str(log), "GRID_SLEEP": str(sleep),
           "COREVAL_PROGRESS": "0"}
    return subprocess.Popen([sys.executable, str(script), str(out)], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def test_sigkill_mid_run_then_restart_gives_identical_results(tmp_path):
    script = tmp_path / "grid_script.py"
    script.write_text(_KILL_SCRIPT.format(tests=str(Path(__file__).parent)))
    n_cells = 3 * 4
    ref = _kill_grid(tmp_path / "ref.parquet")  # reference: one uninterrupted run
    # killed run
    out = tmp_path / "run.parquet"
    parts = tmp_path / "run.parquet.parts"
    proc = _launch(script, out, tmp_path / "killed.log", 0.4)
    deadline = time.time() + 120
    while time.time() < deadline and len(list(parts.glob("*.parquet"))) < 3:
        assert proc.poll() is None, proc.stdout.read().decode()
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    assert proc.returncode == -signal.SIGKILL
    assert not out.exists()
    n_done = len(list(parts.glob("*.parquet")))
    assert 3 <= n_done < n_cells
    # restart: only the unfinished cells run
    proc = _launch(script, out, tmp_path / "restart.log", 0.0)
    assert proc.wait(timeout=120) == 0, proc.stdout.read().decode()
    n_rerun = len((tmp_path / "restart.log").read_text().splitlines())
    assert n_rerun == n_cells - n_done
    got = read_results(out)
    assert len(got) == n_cells and got["error"].isna().all()
    pd.testing.assert_frame_equal(_strip(ref), _strip(got))
    assert not list(parts.glob(".*"))  # no temporary files left behind


# ----------------------------------------------------------------------------- summaries
def _fake_results() -> pd.DataFrame:
    rows = []
    for seed, (mae_, cs) in enumerate([(0.1, ["a", "b"]), (0.3, ["a", "c"]), (0.2, ["a", "b"])]):
        rows.append(dict(dataset="d", method="m", split="random", budget=2.0, k=2, n_source=10,
                         seed=seed, mae=mae_, rmse=mae_ * 2, kendall=0.5, spearman=0.6,
                         pearson=0.7, r2=np.nan, coverage90=0.9, width90=0.1,
                         seconds_select=1.0, seconds_fit=1.0, seconds_predict=1.0,
                         coreset=cs, error=None, n_columns=5))
    rows.append({**rows[0], "seed": 3, "mae": np.nan, "coreset": [], "error": "boom"})
    return pd.DataFrame(rows)


def test_summarize_mean_sd_over_seeds():
    s = summarize(_fake_results())
    assert len(s) == 1
    row = s.iloc[0]
    assert row.n_runs == 4 and row.n_failed == 1 and row.k == 2
    assert row.mae_mean == pytest.approx(0.2)
    assert row.mae_sd == pytest.approx(np.std([0.1, 0.3, 0.2], ddof=1))
    assert np.isnan(row.r2_mean) and row.seconds == pytest.approx(3.0)
    text = format_summary(_fake_results())
    assert text.splitlines()[0].startswith("| dataset | method |")
    assert "0.2 ± 0.1" in text


def test_stability_table_from_coresets():
    t = stability_table(_fake_results())
    z = np.array([[1, 1, 0, 0, 0], [1, 0, 1, 0, 0], [1, 1, 0, 0, 0]])
    assert t.iloc[0].n_runs == 3
    assert t.iloc[0].phi == pytest.approx(nogueira_stability(z))
    # Hamming: pairs (0,1): 2/5, (0,2): 0, (1,2): 2/5
    assert t.iloc[0].hamming == pytest.approx(1 - (0.4 + 0 + 0.4) / 3)


def test_sigma_weighted_summary_over_datasets():
    a = _fake_results()
    b = a.assign(dataset="e", mae=a["mae"] * 3)  # seed-means: d 0.2, e 0.6
    data = {"d": ScoreMatrix(np.array([[0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])),
            "e": ScoreMatrix(np.array([[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]]))}
    sig = dataset_sigmas(data)
    assert sig["d"] == pytest.approx(np.std([0.5, 1.0, 0.0]))
    assert sig["e"] == pytest.approx(np.std([1.0, 0.0, 0.0]))
    t = sigma_weighted_summary(pd.concat([a, b]), sig, metrics=["mae"])
    w_d = (1 / sig["d"]) / (1 / sig["d"] + 1 / sig["e"])
    assert t.iloc[0].mae == pytest.approx(w_d * 0.2 + (1 - w_d) * 0.6)
    assert t.iloc[0].n_datasets == 2


# ----------------------------------------------------------------------------- real data
class PlainMean(Predictor):
    def _fit(self, source, coreset):
        pass

    def _predict(self, x):
        m = x.mean(axis=1)
        return Prediction(m, m, m, interval="none")


register_method(Method("_test-legacy-random", Component(RandomSelector), Component(PlainMean)),
                replace=True)


@pytest.mark.shared
@pytest.mark.parametrize("dataset", ["commonsense", "mmlu"])
def test_real_random_sampling_reproduces_mrmr_eval(load_shared, anchors_dir, tmp_path, dataset):
    """Binned split + budget + metrics end to end against the reference's own numbers."""
    ref = pd.read_csv(anchors_dir / "mrmr_eval" / "results.csv")
    ref = ref[(ref.dataset == dataset) & (ref.method == "random_sampling")]
    data = load_shared(dataset)
    df = run_grid({dataset: data}, ["_test-legacy-random"], [0.05, 0.1], n_source=[30],
                  seeds=[0, 1, 2, 3, 4], split="binned", out=tmp_path / "r.parquet",
                  progress=False)
    assert df["error"].isna().all() and len(df) == 10
    for _, row in df.iterrows():
        r = ref[(ref.coreset == f"{round(row.budget * 100)}%") & (ref.seed == row.seed)]
        assert len(r) == 1
        r = r.iloc[0]
        assert row.k == r.k_selected and row.n_target == r.n_test
        assert row.rmse == pytest.approx(r.rmse, rel=1e-5)
        assert row.mae == pytest.approx(r.mae, rel=1e-5)
        assert row.kendall == pytest.approx(r.kendall_tau_test, abs=1e-9)
        assert row.spearman == pytest.approx(r.spearman_rho_test, abs=1e-9)
        assert np.isnan(row.coverage90) and row.interval == "none"


def test_standardizer_used_by_impute_floor():
    s = Standardizer.fit(np.array([[1.0, 5.0], [1.0, np.nan], [1.0, 7.0]]))
    assert s.std[0] == pytest.approx(0.02)  # constant column: floor 0.01 (|1| + 1)
    assert s.std[1] == pytest.approx(np.std([5.0, 7.0], ddof=1))


def test_sigma_weighted_summary_counts_only_datasets_that_entered():
    base = dict(method="m", split="random", budget=2.0, k=2, n_source=10, rmse=0.1)
    rows = [dict(base, dataset="d", seed=s, mae=0.2, error=None) for s in range(3)]
    rows += [dict(base, dataset="e", seed=s, mae=np.nan, error="boom") for s in range(3)]
    t = sigma_weighted_summary(pd.DataFrame(rows), {"d": 0.1, "e": 0.2}, metrics=["mae"])
    assert t.iloc[0].mae == pytest.approx(0.2) and t.iloc[0].n_datasets == 1
