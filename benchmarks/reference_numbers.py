"""Numbers of the reference checks, to show that a refactor changes none of them.

Runs small configurations of the checks that tie coreval to the papers' reference
code and to R's mirt, through the public API only, and writes every number as JSON
(full float precision; per-model baseline predictions rounded to 12 decimals). Run
it on the tree before a change and on the tree after it, with the same seeds, and
compare the two files: every section must be ``identical``.

Sections
--------
``binned_splits``
    mrmr_eval's binned split (30 source models) of arc_challenge, gsm and mmlu,
    seeds 0-1: source/target row lists, their sha256 and whether they equal
    ``anchors/mrmr_eval/splits_binned_n30.json``.
``mrmr_coresets``
    ``select(source, "mrmr++")`` at budgets 5 % and 10 %, seeds 0-1, on the
    reference splits of those datasets: coreset item ids, predicted target means,
    RMSE (pp).
``baselines``
    random, random+, random++, anchor-points, anchor-points++ and lasso+ on the same
    cells: RMSE (pp) on the target models (with the mrmr_eval reference RMSE where
    ``results.csv`` has the method), coreset ids, per-target mean / lower / upper.
    anchor-points runs single-threaded FasterPAM (``n_cpu=1``): its default parallel
    variant on 1000+ items is not run-to-run deterministic.
``irt_methods``
    p-irt, gp-irt and irt-bayes (default options) on one cell: arc_challenge,
    reference binned split seed 0, budget 5 %.
``lsat7_mml``
    2PL on LSAT-7 by ``coreval.irt.fit(..., method="mml")``: a, d, b, standard errors,
    log-likelihood and the largest absolute differences from mirt
    (``anchors/lsat_mirt_reference.json``).
``benchmark_level``
    Smola's Table 4 protocol (``anchors/benchmark_selection/PROTOCOL.md``) on mteb and
    merged, all 10 folds: ``gauss-mi``, ``gauss-random`` (seed = fold) and
    ``gauss-entropy`` at k = 5, selected benchmark ids, pooled held-out R², RMSE, 90 %
    coverage (and, for mi / random, the reference R² of ``results_per_fold.csv``).
``calibration_cv``
    ``select(..., calibration="cv")`` for mrmr++ on mmlu, seed 0, budget 5 %.

Each section runs in its own ``try``: a section whose API call fails records the error
string and the other sections still run. Everything runs with BLAS limited to one
thread. Only ``coreval.select``, ``coreval.data.load_matrix``, the binned / k-fold
split functions, ``ScoreMatrix`` methods and ``coreval.irt.fit`` are used; the two
places that depend on a module path (:func:`make_split` and :func:`mml_fit_numbers`)
are small functions to adapt if those move.

Usage
-----
::

    python benchmarks/reference_numbers.py --out before.json      # on the old tree
    python benchmarks/reference_numbers.py --out after.json       # on the new tree
    python benchmarks/reference_numbers.py --compare before.json after.json

``--compare`` prints, per section, ``identical`` or the largest absolute difference
and the differing keys, and exits 1 on any difference (``--atol`` to allow one) or on
a section that errored in either run. To run an old tree with this script, put its
``src`` first: ``PYTHONPATH=/path/to/old/src python benchmarks/reference_numbers.py
--out before.json``. The data folder is ``--data-dir``, else ``$COREVAL_DATA_DIR``,
else ``../shared/data`` next to the repository; anchors are read from
``<data dir>/../anchors``. Takes about 75 s on 2 CPU cores (irt_methods about 40 s).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import platform
import sys
import time
import traceback
import warnings
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DATASETS: tuple[str, ...] = ("arc_challenge", "gsm", "mmlu")
SEEDS: tuple[int, ...] = (0, 1)
BUDGETS: tuple[float, ...] = (0.05, 0.10)
N_SOURCE = 30
BASELINES: tuple[str, ...] = ("random", "random+", "random++", "anchor-points",
                              "anchor-points++", "lasso+")
#: ours -> method key in anchors/mrmr_eval/results.csv (informational reference RMSE)
REFERENCE_KEY: dict[str, str] = {
    "random": "random_sampling",
    "random+": "random_sampling_and_learn",
    "random++": "krandom_sampling_and_learn",
    "anchor-points": "anchor_points_weighted",
    "anchor-points++": "kanchor_points_weighted+",
}
#: Extra options per baseline. FasterPAM's parallel variant, which anchor-points runs by
#: default from 1000 items on (arc_challenge, gsm), is not run-to-run deterministic (two runs
#: of the same seed gave different medoids on arc_challenge), so it is pinned to one thread.
BASELINE_OPTIONS: dict[str, dict[str, Any]] = {"anchor-points": {"n_cpu": 1},
                                               "anchor-points++": {"n_cpu": 1}}
IRT_METHODS: tuple[str, ...] = ("p-irt", "gp-irt", "irt-bayes")
IRT_CELL = ("arc_challenge", 0, 0.05)
CV_CELL = ("mmlu", 0, 0.05)
BENCH_DATASETS: tuple[str, ...] = ("mteb", "merged")
BENCH_K, BENCH_FOLDS = 5, tuple(range(10))
#: ours -> reference method in results_per_fold.csv; entropy has none (the reference's first
#: pick is decided by rounding noise, see benchmarks/results/benchmark_level.md)
BENCH_METHODS: tuple[tuple[str, str | None], ...] = (
    ("gauss-mi", "mi"), ("gauss-random", "random"), ("gauss-entropy", None))
PACKAGES = ("numpy", "scipy", "scikit-learn", "pandas", "jax", "numpyro", "kmedoids")

Json = dict[str, Any]


# --------------------------------------------------------------------- adaptation points
def make_split(matrix: Any, kind: str, seed: int | None) -> Any:
    """ADAPT HERE if the split functions move: ``kind`` "binned" (30 sources) or "kfold".

    Returns a split with ``.source`` / ``.target`` row positions ("binned"), or the
    list of all 10 such splits ("kfold", protocol seed 42, 10 % holdout).
    """
    from coreval.data import make_split as _make_split

    if kind == "binned":
        return _make_split(matrix, "binned", seed=seed, n_source=N_SOURCE)
    return _make_split(matrix, "kfold", seed=None)


def mml_fit_numbers(y: np.ndarray) -> Json:
    """ADAPT HERE if ``coreval.irt.fit`` or the ``IRTFit`` accessors move.

    2PL by marginal maximum likelihood; returns the item table columns and the
    log-likelihood from the fit's card.
    """
    from coreval.irt import fit

    res = fit("2pl", y, method="mml")
    items = res.items
    diag = res.card["diagnostics"]
    return {"a": items["a"].to_numpy(float), "d": items["d"].to_numpy(float),
            "b": items["b"].to_numpy(float), "se_a": items["a_sd"].to_numpy(float),
            "se_d": items["d_sd"].to_numpy(float), "loglik": float(diag["loglik"]),
            "converged": bool(diag["converged"]), "n_iter": int(diag["n_iter"])}


# ----------------------------------------------------------------------------- helpers
def _num(x: float) -> float | str:
    """A JSON-safe float (non-finite values as strings, so the file is strict JSON)."""
    x = float(x)
    return x if math.isfinite(x) else repr(x)


def full(x: Any) -> list:
    """Floats at full precision (Python's repr round-trips exactly)."""
    return [_num(v) for v in np.asarray(x, dtype=float).ravel()]


def round12(x: Any) -> list:
    """Floats rounded to 12 decimals."""
    return [_num(v) for v in np.round(np.asarray(x, dtype=float).ravel(), 12)]


def sha256_ints(x: Any) -> str:
    return hashlib.sha256(np.asarray(x, dtype=np.int64).tobytes()).hexdigest()


def rmse_pp(pred: np.ndarray, truth: np.ndarray) -> float:
    return float(100 * np.sqrt(np.mean((np.asarray(pred) - truth) ** 2)))


def data_dir_from(arg: Path | None) -> Path:
    if arg is not None:
        return arg
    env = os.environ.get("COREVAL_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


class Context:
    """Data folder, anchors and a cache of loaded matrices shared by the sections."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.anchors = data_dir.parent / "anchors"
        self._matrices: dict[str, Any] = {}

    def matrix(self, name: str) -> Any:
        if name not in self._matrices:
            from coreval.data import load_matrix

            self._matrices[name] = load_matrix(name, data_dir=self.data_dir)
        return self._matrices[name]

    def reference_splits(self) -> Json:
        path = self.anchors / "mrmr_eval" / "splits_binned_n30.json"
        return json.loads(path.read_text())

    def reference_cell(self, name: str, seed: int) -> tuple[Any, Any]:
        """(source, target) sub-matrices of the reference binned split (rows in its order)."""
        split = self.reference_splits()[name][str(seed)]
        matrix = self.matrix(name)
        return matrix.take(split["train"]), matrix.take(split["test"])


def fit_predict(source: Any, target: Any, method: str, budget: float, seed: int,
                **options: Any) -> tuple[Any, Any]:
    """``coreval.select`` on the source models, prediction for the target models.

    The methods run as the papers publish them: their own selector, without the
    random-coreset check of ``selection="auto"``.
    """
    import coreval

    fitted = coreval.select(source, method, budget, seed=seed,
                            **{"selection": "method", **options})
    pred = fitted.predict_array(target.values[:, np.asarray(fitted.coreset.indices)])
    return fitted, pred


def coreset_json(fitted: Any) -> Json:
    return {"k": len(fitted.coreset.indices),
            "items": [str(i) for i in fitted.coreset.items],
            "indices": [int(i) for i in fitted.coreset.indices]}


def prediction_json(pred: Any, truth: np.ndarray, digits12: bool = False) -> Json:
    conv = round12 if digits12 else full
    return {"interval": str(getattr(pred, "interval", "")),
            "rmse_pp": _num(rmse_pp(pred.mean, truth)),
            "mean": conv(pred.mean), "lower": conv(pred.lower), "upper": conv(pred.upper)}


def cell_key(name: str, seed: int, budget: float) -> str:
    return f"{name}/seed{seed}/{round(budget * 100)}%"


# ---------------------------------------------------------------------------- sections
def binned_splits(ctx: Context) -> Json:
    """Our binned split vs the reference index lists."""
    ref = ctx.reference_splits()
    out: Json = {}
    for name in DATASETS:
        matrix = ctx.matrix(name)
        for seed in SEEDS:
            sp = make_split(matrix, "binned", seed)
            source, target = [int(i) for i in sp.source], [int(i) for i in sp.target]
            r = ref[name][str(seed)]
            out[f"{name}/seed{seed}"] = {
                "source": source, "target": target,
                "source_sha256": sha256_ints(source), "target_sha256": sha256_ints(target),
                "equals_reference": source == list(r["train"]) and target == list(r["test"]),
            }
    out["all_equal_reference"] = all(v["equals_reference"] for v in out.values())
    return out


def mrmr_coresets(ctx: Context) -> Json:
    """mrmr++ coresets and target predictions on the reference splits."""
    out: Json = {}
    for name in DATASETS:
        for seed in SEEDS:
            source, target = ctx.reference_cell(name, seed)
            truth = target.summary_scores()
            for budget in BUDGETS:
                fitted, pred = fit_predict(source, target, "mrmr++", budget, seed)
                out[cell_key(name, seed, budget)] = {
                    **coreset_json(fitted), "rmse_pp": _num(rmse_pp(pred.mean, truth)),
                    "mean": full(pred.mean)}
    return out


def _reference_rmse(ctx: Context) -> pd.DataFrame | None:
    path = ctx.anchors / "mrmr_eval" / "results.csv"
    return pd.read_csv(path) if path.exists() else None


def baselines(ctx: Context) -> Json:
    """Regression / sampling baselines on the reference splits."""
    ref = _reference_rmse(ctx)
    out: Json = {}
    for name in DATASETS:
        for seed in SEEDS:
            source, target = ctx.reference_cell(name, seed)
            truth = target.summary_scores()
            for budget in BUDGETS:
                cell: Json = {}
                for method in BASELINES:
                    opts = BASELINE_OPTIONS.get(method, {})
                    fitted, pred = fit_predict(source, target, method, budget, seed, **opts)
                    row = {**coreset_json(fitted), **prediction_json(pred, truth, True),
                           "options": {k: str(v) for k, v in opts.items()}}
                    key = REFERENCE_KEY.get(method)
                    if ref is not None and key is not None:
                        r = ref[(ref.dataset == name) & (ref.method == key) & (ref.seed == seed)
                                & (ref.coreset == f"{round(budget * 100)}%")]
                        if len(r) == 1:
                            row["ref_rmse_pp"] = _num(100 * float(r.rmse.iloc[0]))
                    cell[method] = row
                out[cell_key(name, seed, budget)] = cell
    return out


def irt_methods(ctx: Context) -> Json:
    """p-IRT, gp-IRT and irt-bayes on one cell (JAX; the slow section)."""
    name, seed, budget = IRT_CELL
    source, target = ctx.reference_cell(name, seed)
    truth = target.summary_scores()
    out: Json = {"cell": cell_key(name, seed, budget)}
    for method in IRT_METHODS:
        fitted, pred = fit_predict(source, target, method, budget, seed)
        out[method] = {**coreset_json(fitted), **prediction_json(pred, truth)}
    return out


def lsat7_mml(ctx: Context) -> Json:
    """LSAT-7 2PL by MML against R mirt."""
    table = pd.read_csv(ctx.data_dir / "psychometrics" / "LSAT7.csv")
    items = [c for c in table.columns if c != "freq"]
    y = np.repeat(table[items].to_numpy(float), table["freq"].to_numpy(np.int64), axis=0)
    res = mml_fit_numbers(y)
    ref = json.loads((ctx.anchors / "lsat_mirt_reference.json").read_text())["LSAT7_2PL"]
    ref_se = {k: (np.asarray(ref[f"SEM_95CI_{k}"])[:, 1] - np.asarray(ref[f"SEM_95CI_{k}"])[:, 0])
              / (2 * 1.959964) for k in ("a", "d")}
    return {
        "n_respondents": int(y.shape[0]),
        **{k: full(res[k]) for k in ("a", "d", "b", "se_a", "se_d")},
        "loglik": _num(res["loglik"]), "converged": res["converged"], "n_iter": res["n_iter"],
        "max_abs_diff_a_vs_mirt": _num(np.max(np.abs(res["a"] - np.asarray(ref["a"])))),
        "max_abs_diff_d_vs_mirt": _num(np.max(np.abs(res["d"] - np.asarray(ref["d"])))),
        "abs_diff_loglik_vs_mirt": _num(abs(res["loglik"] - ref["logLik"])),
        "max_rel_diff_se_vs_mirt_sem": _num(max(
            np.max(np.abs(res["se_a"] / ref_se["a"] - 1)),
            np.max(np.abs(res["se_d"] / ref_se["d"] - 1)))),
    }


def protocol_standardisation(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-column mean and std of the training rows (PROTOCOL.md section 3, EM path)."""
    obs = ~np.isnan(values)
    cnt = np.maximum(obs.sum(axis=0), 1)
    filled = np.where(obs, values, 0.0)
    mean = filled.sum(axis=0) / cnt
    var = (np.where(obs, values - mean, 0.0) ** 2).sum(axis=0) / np.maximum(cnt - 1, 1)
    floor = 0.01 * (np.abs(mean) + 1)
    return mean, np.sqrt(np.maximum(var, floor**2))


def benchmark_level(ctx: Context) -> Json:
    """Table 4 protocol (section 6): R² of imputing the unselected benchmarks, k = 5."""
    ref_path = ctx.anchors / "benchmark_selection" / "results_per_fold.csv"
    ref = pd.read_csv(ref_path) if ref_path.exists() else None
    out: Json = {}
    for name in BENCH_DATASETS:
        matrix = ctx.matrix(name)
        folds = make_split(matrix, "kfold", None)
        for f in BENCH_FOLDS:
            sp = folds[f]
            train, test = matrix.take(sp.source), matrix.take(sp.target)
            mean, scale = protocol_standardisation(train.values)
            for method, ref_key in BENCH_METHODS:
                fitted, pred = fit_predict(train, test, method, BENCH_K, f, min_observed=1,
                                           n_threads=1)
                selected = np.asarray(fitted.coreset.indices)
                pm = np.asarray(pred.mean, dtype=float)
                truth = np.clip((test.values - mean) / scale, -10, 10)
                pz = (pm - mean) / scale
                cells = ~np.isnan(test.values) & ~np.isnan(pz)
                cells[:, selected] = False
                res = truth[cells] - pz[cells]
                r2 = 1.0 - float((res**2).sum()) / max(float((truth[cells] ** 2).sum()), 1e-12)
                y = test.values[cells]
                inside = ((y >= np.asarray(pred.lower)[cells])
                          & (y <= np.asarray(pred.upper)[cells]))
                row: Json = {
                    **coreset_json(fitted), "n_train": len(sp.source), "n_test": len(sp.target),
                    "train_rows_sha256": sha256_ints(sp.source),
                    "test_rows_sha256": sha256_ints(sp.target), "r2": _num(r2),
                    "rmse_z": _num(np.sqrt(np.mean(res**2))),
                    "coverage90": _num(inside.mean()), "cells": int(cells.sum()),
                    "pred_sums": {k: _num(np.nansum(np.asarray(getattr(pred, k), float)))
                                  for k in ("mean", "lower", "upper")},
                    "pred_mean_first_test_model": full(pm[0]),
                }
                if ref is not None and ref_key is not None:
                    r = ref[(ref.dataset == name) & (ref.method == ref_key)
                            & (ref.k == BENCH_K) & (ref.fold == f)]
                    if len(r) == 1:
                        row["ref_r2"] = _num(float(r.r2.iloc[0]))
                        row["abs_diff_r2_vs_ref"] = _num(abs(r2 - float(r.r2.iloc[0])))
                out[f"{name}/fold{f}/{method}"] = row
    return out


def calibration_cv(ctx: Context) -> Json:
    """Split-conformal intervals from out-of-fold residuals (selection redone per fold)."""
    name, seed, budget = CV_CELL
    source, target = ctx.reference_cell(name, seed)
    fitted, pred = fit_predict(source, target, "mrmr++", budget, seed, calibration="cv")
    return {"cell": cell_key(name, seed, budget), **coreset_json(fitted),
            **prediction_json(pred, target.summary_scores())}


SECTIONS: dict[str, Callable[[Context], Json]] = {
    "binned_splits": binned_splits,
    "mrmr_coresets": mrmr_coresets,
    "baselines": baselines,
    "irt_methods": irt_methods,
    "lsat7_mml": lsat7_mml,
    "benchmark_level": benchmark_level,
    "calibration_cv": calibration_cv,
}


# ------------------------------------------------------------------------------- run
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in PACKAGES:
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "absent"
    return out


def run(data_dir: Path, only: list[str] | None = None) -> Json:
    """Run every section (or those in ``only``); failures are recorded, not raised."""
    from threadpoolctl import threadpool_limits

    import coreval

    os.environ.setdefault("COREVAL_PROGRESS", "0")
    ctx = Context(data_dir)
    t_start = time.perf_counter()
    sections: Json = {}
    for name, fn in SECTIONS.items():
        if only and name not in only:
            continue
        t0 = time.perf_counter()
        try:
            with warnings.catch_warnings(), threadpool_limits(1):
                warnings.simplefilter("ignore")
                entry: Json = {"status": "ok", "data": fn(ctx)}
        except Exception as exc:  # a section that fails is reported; the others still run
            entry = {"status": "error", "error": f"{type(exc).__name__}: {exc}",
                     "traceback": traceback.format_exc(limit=-4)}
        entry["seconds"] = round(time.perf_counter() - t0, 2)
        sections[name] = entry
        print(f"{name}: {entry['status']} ({entry['seconds']:.0f} s)"
              + (f" {entry['error']}" if entry["status"] == "error" else ""),
              file=sys.stderr, flush=True)
    meta = {"coreval_file": coreval.__file__,
            "coreval_version": getattr(coreval, "__version__", "?"),
            "data_dir": str(data_dir), "argv": sys.argv, "versions": _versions(),
            "seconds_total": round(time.perf_counter() - t_start, 2)}
    return {"meta": meta, "sections": sections}


# --------------------------------------------------------------------------- compare
def flatten(obj: Any, prefix: str = "") -> dict[str, Any]:
    """Leaves of nested dicts / lists keyed by their path."""
    if isinstance(obj, dict):
        out: dict[str, Any] = {}
        for key, value in obj.items():
            out.update(flatten(value, f"{prefix}/{key}" if prefix else str(key)))
        return out
    if isinstance(obj, list):
        out = {f"{prefix}#len": len(obj)}
        for i, value in enumerate(obj):
            out.update(flatten(value, f"{prefix}[{i}]"))
        return out
    return {prefix: obj}


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float) and not isinstance(x, bool)


def compare_section(a: Json, b: Json, atol: float) -> tuple[bool, list[str]]:
    """(same, lines) for one section's data."""
    fa, fb = flatten(a), flatten(b)
    max_diff, n_num, n_num_diff = 0.0, 0, 0
    differing: list[str] = []
    for key in sorted(set(fa) | set(fb)):
        if key not in fa or key not in fb:
            differing.append(f"{key}: only in {'after' if key not in fa else 'before'}")
            continue
        x, y = fa[key], fb[key]
        if _is_number(x) and _is_number(y):
            n_num += 1
            d = abs(float(x) - float(y))
            if d > atol or (d != d):
                n_num_diff += 1
                max_diff = max(max_diff, d)
                differing.append(f"{key}: {x!r} -> {y!r} (|diff| {d:.3g})")
        elif x != y or type(x) is not type(y):
            differing.append(f"{key}: {str(x)[:60]!r} -> {str(y)[:60]!r}")
    if not differing:
        return True, [f"identical ({n_num} numbers)"]
    head = (f"DIFFERENT: {len(differing)} differing keys; max |diff| {max_diff:.6g} over "
            f"{n_num_diff} of {n_num} numbers")
    return False, [head, *(f"    {line}" for line in differing[:12]),
                   *([f"    ... {len(differing) - 12} more"] if len(differing) > 12 else [])]


def compare(before: Path, after: Path, atol: float = 0.0) -> int:
    """Print a per-section verdict; 0 when every section is identical (within ``atol``)."""
    a, b = json.loads(before.read_text()), json.loads(after.read_text())
    ma, mb = a.get("meta", {}), b.get("meta", {})
    print(f"before: {ma.get('coreval_file')} ({ma.get('seconds_total')} s)")
    print(f"after:  {mb.get('coreval_file')} ({mb.get('seconds_total')} s)")
    va, vb = ma.get("versions", {}), mb.get("versions", {})
    for pkg in sorted(set(va) | set(vb)):
        if va.get(pkg) != vb.get(pkg):
            print(f"note: {pkg} {va.get(pkg)} -> {vb.get(pkg)} (numbers may differ for this)")
    sa, sb = a.get("sections", {}), b.get("sections", {})
    failed = 0
    for name in list(dict.fromkeys([*SECTIONS, *sa, *sb])):
        ea, eb = sa.get(name), sb.get(name)
        if ea is None or eb is None:
            print(f"{name}: MISSING in {'before' if ea is None else 'after'}")
            failed += 1
            continue
        if ea["status"] != "ok" or eb["status"] != "ok":
            print(f"{name}: ERROR (before: {ea.get('error', 'ok')}; after: {eb.get('error', 'ok')})")
            failed += 1
            continue
        same, lines = compare_section(ea["data"], eb["data"], atol)
        print(f"{name}: {lines[0]}")
        for line in lines[1:]:
            print(line)
        failed += not same
    print("ALL IDENTICAL" if not failed else f"{failed} section(s) differ or errored")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, help="JSON output path (default: stdout)")
    ap.add_argument("--data-dir", type=Path, default=None,
                    help="folder with the .npz matrices (default: $COREVAL_DATA_DIR or "
                         "../shared/data)")
    ap.add_argument("--sections", nargs="+", choices=list(SECTIONS), default=None,
                    help="run only these sections (default: all)")
    ap.add_argument("--compare", nargs=2, type=Path, metavar=("BEFORE", "AFTER"),
                    help="compare two JSON files instead of running")
    ap.add_argument("--atol", type=float, default=0.0,
                    help="absolute tolerance of --compare (default 0: exact)")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare, atol=args.atol)
    result = run(data_dir_from(args.data_dir), args.sections)
    text = json.dumps(result, indent=1, allow_nan=False)
    if args.out:
        args.out.write_text(text + "\n")
        print(f"wrote {args.out} ({result['meta']['seconds_total']:.0f} s)", file=sys.stderr)
    else:
        print(text)
    errored = [k for k, v in result["sections"].items() if v["status"] != "ok"]
    if errored:
        print(f"sections with errors: {', '.join(errored)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
