"""Baselines on the 8 item-level matrices, side by side with the mrmr_eval reference numbers.

Runs random, random+, random++, anchor-points, anchor-points+, anchor-points++,
lasso and search+ through :func:`coreval.harness.run_grid` with the reference
protocol (binned split, 30 source models, budgets 5 % and 10 %, seeds 0-4) and
compares mean RMSE, MAE and the target-only Kendall τ with
``anchors/mrmr_eval/results.csv`` (measured with the reference code on the same
splits). Tolerances: 0.5 pp RMSE and 0.03 τ for random+ / random++; 1 pp RMSE
for random, anchor-points and lasso; the other methods are shown for
information (anchor-points+ has no reference row; search+ is compared with the
reference's ``random_search_and_learn``). Also checks that the harness's binned
split equals ``splits_binned_n30.json`` and reports the 90 % interval coverage
and width of every method.

Usage::

    python benchmarks/compare_item_level.py [--quick] [--fresh] [--data-dir DIR] [--n-jobs 1]

``--quick``: 2 datasets (mmlu, commonsense), seeds 0-1. The data directory is
``--data-dir``, else ``$COREVAL_DATA_DIR``, else ``../shared/data`` next to the
repository; the anchors are read from ``<data dir>/../anchors``. Writes
``benchmarks/results/baselines.md`` (``baselines_quick.md`` with ``--quick``) with
the exact command; raw grid results go to ``benchmarks/results/raw/``.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _results import provenance, write_markdown
from coreval.base import resolve_budget
from coreval.base.conformal import jackknife_plus_interval
from coreval.data.npz import read_npz
from coreval.data.splits import iter_splits
from coreval.harness import run_grid
from coreval.prediction.ridge import RidgePredictor
from coreval.selection.anchor_points import AnchorPointsSelector

REPO = Path(__file__).resolve().parents[1]
DATASETS = ("arc_challenge", "ifeval", "openllm_math", "commonsense", "gsm", "math", "med_qa",
            "mmlu")
QUICK_DATASETS = ("mmlu", "commonsense")
BUDGETS = (0.05, 0.10)
METHODS = ("random", "random+", "random++", "anchor-points", "anchor-points+",
           "anchor-points++", "lasso", "search+")
#: ours -> reference key in results.csv (None: no reference row)
REFERENCE_KEY = {
    "random": "random_sampling",
    "random+": "random_sampling_and_learn",
    "random++": "krandom_sampling_and_learn",
    "anchor-points": "anchor_points_weighted",
    "anchor-points+": None,
    "anchor-points++": "kanchor_points_weighted+",
    "lasso": "lasso",
    "search+": "random_search_and_learn",
}
#: ours -> (RMSE tolerance in pp, tau_t tolerance or None); methods absent are informational
TOLERANCE = {
    "random+": (0.5, 0.03),
    "random++": (0.5, 0.03),
    "random": (1.0, None),
    "anchor-points": (1.0, None),
    "lasso": (1.0, None),
}

NOTES = """\
* **Exact by construction** (same item draws as the reference, same scikit-learn estimators):
  random, random+, random++, search+ (the 1000 candidate coresets come from the same legacy
  `RandomState(seed)` stream; candidates are scored with a closed-form batched ridge checked
  against `RidgeCV` in `tests/test_baselines.py`). Differences of a few hundredths of a pp come
  from the reference fitting on float32 scores (we fit on float64), which can flip a near-tied
  λ choice or, for search+, the best of 1000 candidates.
* **anchor-points**: the k-medoids call reproduces the reference's (`kmedoids.fasterpam`, random
  init from the seeded legacy stream; single-thread below 1000 items, the 2-thread parallel
  variant from 1000 items on, as on the reference machine). On gsm / med_qa / arc_challenge the
  per-seed RMSEs are identical to the reference; on the smaller matrices single seeds differ by
  a few tenths of a pp (the 5-seed means by ≤ 0.1 pp) because FasterPAM's swaps depend on exact
  ties of `1 − corr` between binary items (30 source models give many equal correlations) and
  the last bits of `np.corrcoef` differ between the reference's numpy build and ours.
* **lasso**: the selector runs the reference's cold sweep (a fresh `Lasso` per alpha,
  ascending, stop at exactly k non-zeros), which reproduces its supports and numbers (largest
  mean difference +0.18 pp, gsm 5 %, from one seed where float32 vs float64 changes the support); the
  warm-started `lasso_path` variant (`LassoSelector(warm_start=True)`) is 10-30× faster but lands
  on different (non-unique, p ≫ n) solutions and is up to 2 pp worse (commonsense 10 %).
* **anchor-points+** has no reference row (the reference ran only the kernel refit
  `kanchor_points_weighted+`, our anchor-points++).
* **Intervals** (no reference numbers; coverage90 / width90 over target models). Conformal
  guarantees need target models *exchangeable* with the source models and a procedure that
  treats the left-out source model like a new one:
  - random (split conformal, nothing fitted) covers 0.91-0.98 and random+ / random++
    (jackknife+) 0.86-0.98: valid, slightly conservative. The binned split draws the 30 sources
    near-uniformly over the accuracy range (extreme models over-represented), so leave-one-out
    residuals of sources at the extremes are larger than typical target errors.
  - anchor-points+ / ++, search+ and lasso under-cover (down to 0.45-0.6 on gsm and math at 5 %):
    their coreset was chosen by looking at the same source models, so in the leave-one-out refits
    the left-out model still shaped the coreset (and, for lasso, the penalty) and its residual is
    optimistic. The selection-in-fold check above confirms it: redoing the anchor-point selection
    inside every leave-one-out fold (a full jackknife+ of select-then-fit, 30 × the selection
    cost) restores coverage on gsm 5 %. The registered methods keep the coreset fixed (the
    predictor API receives a coreset, not the selector). anchor-points (weighted mean, split conformal on the sources)
    is affected the same way but less (0.83-0.97), since its weights come from item
    correlations, not from the summary score.
* **Time**: this machine was heavily shared while the grid ran (load average 12-15 on 2 cores),
  so absolute seconds are inflated several-fold. Ours also includes the interval work (closed-form
  leave-one-out coefficients for ridge / kernel ridge, 30 lasso refits for lasso). search+ is faster
  than the reference because the 1000 candidate ridge fits are one batched closed-form computation.
"""


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 datasets, 2 seeds (CI)")
    parser.add_argument("--data-dir", type=Path, default=None,
                        help="folder with the .npz matrices (default: $COREVAL_DATA_DIR or "
                             "../shared/data)")
    parser.add_argument("--n-jobs", type=int, default=1, help="joblib workers for run_grid")
    parser.add_argument("--out", type=Path, default=None, help="markdown output path")
    parser.add_argument("--fresh", action="store_true",
                        help="delete stored grid cells first (recompute after code changes)")
    return parser.parse_args(argv)


def data_dir(arg: Path | None) -> Path:
    if arg is not None:
        return arg
    env = os.environ.get("COREVAL_DATA_DIR")
    return Path(env) if env else REPO.parent / "shared" / "data"


def check_splits(matrices: dict, splits_json: dict, seeds: list[int]) -> list[str]:
    """Compare the harness's binned split with the reference's stored lists."""
    lines = []
    for name, matrix in matrices.items():
        ours = iter_splits(matrix, "binned", seeds=seeds, n_source=30)
        same = sum(
            list(sp.source) == splits_json[name][str(sp.seed)]["train"]
            and list(sp.target) == splits_json[name][str(sp.seed)]["test"]
            for sp in ours
        )
        lines.append(f"| {name} | {same}/{len(ours)} |")
    return lines


def compare(df: pd.DataFrame, ref: pd.DataFrame) -> pd.DataFrame:
    """One row per dataset × budget × method: our means vs the reference means."""
    rows = []
    ok = df[df["error"].isna()]
    for (dataset, budget, method), g in ok.groupby(["dataset", "budget", "method"], sort=False):
        key = REFERENCE_KEY[method]
        coreset = f"{round(budget * 100)}%"
        r = ref[(ref.dataset == dataset) & (ref.method == key) & (ref.coreset == coreset)
                & ref.seed.isin(g.seed.tolist())] if key else ref.iloc[:0]
        row = {
            "dataset": dataset, "budget": coreset, "method": method, "ref_key": key or "-",
            "n": len(g), "k": int(g.k.iloc[0]),
            "k_sel": float(np.mean([len(c) for c in g.coreset])),
            "rmse": 100 * g.rmse.mean(), "rmse_sd": 100 * g.rmse.std(ddof=1),
            "mae": 100 * g.mae.mean(), "tau_t": g.kendall.mean(),
            "cov90": g.coverage90.mean(), "width90": 100 * g.width90.mean(),
            "seconds": float((g.seconds_select + g.seconds_fit + g.seconds_predict).median()),
            "ref_rmse": np.nan, "ref_mae": np.nan, "ref_tau_t": np.nan, "ref_seconds": np.nan,
            "ref_k_sel": np.nan,
        }
        if len(r) == len(g):
            row.update(ref_rmse=100 * r.rmse.mean(), ref_mae=100 * r.mae.mean(),
                       ref_tau_t=r.kendall_tau_test.mean(),
                       ref_seconds=float(r.sel_fit_pred_s.median()),
                       ref_k_sel=float(r.k_selected.mean()))
        rows.append(row)
    out = pd.DataFrame(rows)
    out["d_rmse"] = out.rmse - out.ref_rmse
    out["d_tau"] = out.tau_t - out.ref_tau_t
    verdicts = []
    for _, row in out.iterrows():
        tol = TOLERANCE.get(row.method)
        if tol is None or np.isnan(row.ref_rmse):
            verdicts.append("info")
            continue
        good = abs(row.d_rmse) <= tol[0] and (tol[1] is None or abs(row.d_tau) <= tol[1])
        verdicts.append("pass" if good else "FAIL")
    out["verdict"] = verdicts
    return out


def selection_in_fold_check(matrix, splits_json: dict, seeds: list[int],
                            budget: float = 0.05) -> tuple[float, float]:
    """Coverage of anchor-points+ intervals: coreset fixed vs selection redone in every fold.

    The registered method computes jackknife+ with the coreset held fixed. Here the
    anchor-point selection is also redone without each left-out source model (a full
    jackknife+ of the whole select-then-fit procedure), to test whether the
    under-coverage comes from the selection having seen the left-out model.
    """
    k = resolve_budget(budget, matrix.n_items)
    fixed, full = [], []
    for seed in seeds:
        sp = splits_json[matrix.name][str(seed)]
        src, tgt = matrix.take(sp["train"]), matrix.take(sp["test"])
        y, truth = src.summary_scores(), tgt.summary_scores()
        sel = AnchorPointsSelector(k=k, seed=seed).fit(src)
        pred = RidgePredictor().fit(src, sel.coreset_).predict(tgt.values[:, sel.selected_])
        fixed.append(np.mean((truth >= pred.lower) & (truth <= pred.upper)))
        mu, resid = [], []
        for i in range(src.n_models):
            sub = src.take(np.delete(np.arange(src.n_models), i))
            s_i = AnchorPointsSelector(k=k, seed=seed).fit(sub)
            r_i = RidgePredictor(interval="none").fit(sub, s_i.coreset_)
            resid.append(y[i] - r_i.predict(src.values[i:i + 1, s_i.selected_]).mean[0])
            mu.append(r_i.predict(tgt.values[:, s_i.selected_]).mean)
        lo, hi = jackknife_plus_interval(np.column_stack(mu), resid, 0.9)
        full.append(np.mean((truth >= np.clip(lo, 0, 1)) & (truth <= np.clip(hi, 0, 1))))
    return float(np.mean(fixed)), float(np.mean(full))


def fmt(x: float, digits: int = 2, signed: bool = False) -> str:
    if x is None or (isinstance(x, float) and np.isnan(x)):
        return "–"
    return f"{x:+.{digits}f}" if signed else f"{x:.{digits}f}"


def render(table: pd.DataFrame, split_lines: list[str], command: str, seeds: list[int],
           datasets: tuple[str, ...], wall: float, errors: pd.DataFrame,
           check: tuple[str, float, float]) -> str:
    out = [
        "# Baselines vs mrmr_eval (reference numbers)",
        "",
        *provenance(command),
        f"Protocol: binned split, 30 source models, seeds {seeds}, budgets 5 % and 10 %, "
        f"datasets {', '.join(datasets)}. All methods through `coreval.harness.run_grid` "
        f"(n_jobs as given). Reference: `shared/anchors/mrmr_eval/results.csv` (reference code, "
        "same splits), mean over the same seeds. RMSE / MAE in percentage points on the target "
        "models; τ_t = Kendall τ on target models only. `k_sel` = mean coreset size actually "
        f"returned. Wall time of `run_grid` in this invocation: {wall:.0f} s (cells stored by an "
        "earlier invocation are read back, not recomputed; per-trial seconds below are those "
        "measured when each cell ran).",
        "",
        "Tolerances: random+ / random++ |ΔRMSE| ≤ 0.5 pp and |Δτ_t| ≤ 0.03; random, "
        "anchor-points, lasso |ΔRMSE| ≤ 1 pp; others `info`.",
        "",
    ]
    counts = table.verdict.value_counts()
    out += [f"**Summary: {counts.get('pass', 0)} pass, {counts.get('FAIL', 0)} fail, "
            f"{counts.get('info', 0)} informational rows.**", ""]
    if len(errors):
        out += ["**Failed cells:**", ""]
        out += [f"* {r.dataset} {r.method} {r.budget} seed {r.seed}: {r.error}"
                for r in errors.itertuples()]
        out.append("")
    out += ["## Split check (harness `binned` split vs `splits_binned_n30.json`)", "",
            "| dataset | identical source+target lists |", "|---|---|", *split_lines, ""]
    out += ["## Accuracy", ""]
    head = ("| method | ref key | k | k_sel (ref) | RMSE | ref RMSE | ΔRMSE | MAE | ref MAE | "
            "τ_t | ref τ_t | Δτ_t | verdict |")
    for (dataset, budget), g in table.groupby(["dataset", "budget"], sort=False):
        out += [f"### {dataset}, {budget}", "", head, "|" + "---|" * 13]
        for r in g.itertuples():
            out.append(
                f"| {r.method} | {r.ref_key} | {r.k} | {fmt(r.k_sel, 1)} ({fmt(r.ref_k_sel, 1)}) "
                f"| {fmt(r.rmse)} ± {fmt(r.rmse_sd)} | {fmt(r.ref_rmse)} | "
                f"{fmt(r.d_rmse, signed=True)} | {fmt(r.mae)} | {fmt(r.ref_mae)} | "
                f"{fmt(r.tau_t, 3)} | {fmt(r.ref_tau_t, 3)} | {fmt(r.d_tau, 3, True)} | "
                f"{r.verdict} |")
        out.append("")
    out += ["## 90 % intervals on target models (mean over seeds)", "",
            "coverage90 = fraction of target models whose true score lies in the interval; "
            "width90 in pp. random: split conformal; random+/++ and the other refits: "
            "jackknife+.", ""]
    piv_cov = table.pivot_table(index=["dataset", "budget"], columns="method", values="cov90",
                                sort=False)
    piv_w = table.pivot_table(index=["dataset", "budget"], columns="method", values="width90",
                              sort=False)
    methods = [m for m in METHODS if m in piv_cov.columns]
    out += ["| dataset | budget | " + " | ".join(methods) + " |",
            "|---|---|" + "---|" * len(methods)]
    for idx in piv_cov.index:
        cells = [f"{fmt(piv_cov.loc[idx, m])} / {fmt(piv_w.loc[idx, m], 1)}" for m in methods]
        out.append(f"| {idx[0]} | {idx[1]} | " + " | ".join(cells) + " |")
    out += ["", "(cells: coverage90 / width90)", "",
            f"**Selection-in-fold check** ({check[0]}, 5 %, anchor-points+, seeds {seeds}): "
            f"coverage90 with the coreset fixed in the jackknife+ folds (as registered) "
            f"{check[1]:.2f}; with the anchor-point selection redone without each left-out "
            f"source model (full jackknife+ of select-then-fit) {check[2]:.2f}.", ""]
    out += ["## Time per trial (median seconds, select + fit + predict)", "",
            "Ours includes the jackknife+ leave-one-out refits for the interval; the reference's "
            "times are from its own run (results.csv `sel_fit_pred_s`, another process on a "
            "loaded 2-core machine), so the ratio is indicative only.", "",
            "| method | ours (s) | reference (s) | ratio ours/ref |", "|---|---|---|---|"]
    for method, g in table.groupby("method", sort=False):
        ours, ref = g.seconds.median(), g.ref_seconds.median()
        out.append(f"| {method} | {fmt(ours, 3)} | {fmt(ref, 3)} | {fmt(ours / ref, 2)} |")
    out += ["", "## Differences beyond tolerance, explained", "", NOTES]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    ddir = data_dir(args.data_dir)
    anchors = ddir.parent / "anchors" / "mrmr_eval"
    if not ddir.is_dir() or not anchors.is_dir():
        print(f"needs data in {ddir} and reference numbers in {anchors}", file=sys.stderr)
        return 2
    datasets = QUICK_DATASETS if args.quick else DATASETS
    seeds = [0, 1] if args.quick else [0, 1, 2, 3, 4]
    matrices = {name: read_npz(ddir / f"{name}.npz") for name in datasets}
    ref = pd.read_csv(anchors / "results.csv")
    splits_json = json.loads((anchors / "splits_binned_n30.json").read_text())
    split_lines = check_splits(matrices, splits_json, seeds)

    raw = REPO / "benchmarks" / "results" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    stem = "baselines_quick" if args.quick else "baselines"
    grid_out = raw / f"{stem}.parquet"
    if args.fresh:
        shutil.rmtree(grid_out.with_name(grid_out.name + ".parts"), ignore_errors=True)
    t0 = time.perf_counter()
    df = run_grid(matrices, METHODS, BUDGETS, n_source=[30], seeds=seeds, split="binned",
                  out=grid_out, n_jobs=args.n_jobs)
    wall = time.perf_counter() - t0
    errors = df[df["error"].notna()]
    table = compare(df, ref)
    command = "python " + " ".join(shlex.quote(a) for a in
                                   ["benchmarks/compare_item_level.py", *(argv or sys.argv[1:])])
    check_name = "gsm" if "gsm" in matrices else datasets[0]
    check = (check_name, *selection_in_fold_check(matrices[check_name], splits_json, seeds))
    text = render(table, split_lines, command, seeds, datasets, wall, errors, check)
    out = args.out or REPO / "benchmarks" / "results" / f"{stem}.md"
    write_markdown(out, text)
    cols = ["dataset", "budget", "method", "rmse", "ref_rmse", "d_rmse", "tau_t", "ref_tau_t",
            "d_tau", "cov90", "verdict"]
    with pd.option_context("display.width", 200, "display.max_rows", 500):
        print(table[cols].round(3).to_string(index=False))
    print(f"wrote {out}")
    failed = table[table["verdict"] == "FAIL"]
    if len(failed):
        print(f"{len(failed)} rows outside the reference tolerance", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
