"""BenchPress 2026 whole-benchmark completion: coreval's low-rank engine on the authors' folds.

Held-out-cell protocol of Zeng & Papailiopoulos (2026), "You Don't Need to Run Every Eval":
30 folds (10 seeds x 3 folds) of held-out observed cells of the 84 x 133 matrix
(``../shared/data/benchpress2026_info/folds_s10_f3_bs42_ms1.json``); the reference numbers
measured with the authors' code are in ``../shared/anchors/benchpress/README.md``.

Methods (every hyperparameter choice is made inside the fold, from training cells only):

* ``als-logit``: logit Bias-ALS, rank 2, lambda 0.1 (the authors' default, reproduced);
* ``als-logit-rs``: the same with the authors' random starts (``numpy.random.RandomState``
  seeds 42-51), which reproduces their predictions;
* ``als-identity``: the same without the logit;
* ``als-nested``: rank in {1, 2, 3, 4} and lambda in {0.01, 0.1, 1} chosen on a third of
  each model's training cells held out (:func:`coreval.lowrank.select_als`);
* ``bayes``: the Bayesian low-rank model (rank 2, per-benchmark noise, Student-t likelihood
  with 4 degrees of freedom; NUTS, 300 warm-up + 300 draws, started at a Bias-ALS fit),
  posterior predictive intervals as they are;
* ``bayes-conformal``: the same with the normalised conformal factor fitted on inner held-out
  training cells (a third of each model's, one inner fit);
* ``bayes-cv10-conformal``: ``bayes`` with the factor from cross-conformal over 10 inner
  folds of each model's training cells (ten inner fits, every training cell a calibration
  cell once; ``complete_bayes(n_inner_folds=10)``);
* ``bayes-metadata``, ``bayes-metadata-conformal``: the same two with the models' metadata of
  ``models.csv`` (reasoning flag, open weights, release date in years) as row covariates;
* ``bayes-metadata-conformal-inner10``: ``bayes-metadata-conformal`` with a tenth instead of
  a third of each model's training cells held out for the conformal factor;
* ``bayes-metadata-cv10-conformal``: ``bayes-metadata-conformal`` with the factor from
  cross-conformal over 10 inner folds of each model's training cells (ten inner fits, every
  training cell a calibration cell once; ``complete_bayes(n_inner_folds=10)``);
* ``bayes-metadata-cv20-conformal``: the same over 20 inner folds (twenty inner fits, each
  seeing 95 % of the training cells instead of 90 %): the cost and the width of a smaller
  cross-validation bias;
* ``bayes-metadata-loo-conformal``: ``bayes-metadata-conformal`` with the rank chosen in each
  fold among 1-4 by PSIS-LOO of the fold's training cells (the rank choice is recorded);
* ``bayes-metadata-stack-conformal``: the same four ranks mixed with Bayesian stacking
  weights (PSIS-LOO log score of the mixture, Yao et al. 2018) instead of keeping one;
  the conformal factor's inner fit stacks again on its cells (the weights are recorded);
  ``bayes-metadata-stack`` is the stacked posterior without the conformal factor, and
  ``bayes-metadata-stack-conformal-inner10`` holds out a tenth for the factor, and
  ``bayes-metadata-stack-cv10-conformal`` takes it from cross-conformal over 10 inner folds
  (each inner fit stacks its four ranks again: 44 NUTS fits per fold).

Every method with an interval is also scored under the authors' interval protocol
(:func:`crossfold_interval`), for the comparison with their numbers.

Run from the repository root::

    python benchmarks/benchpress.py --out benchmarks/results/benchpress.md
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from joblib import Parallel, delayed

from _results import provenance, write_markdown
from coreval.data import load_matrix
from coreval.gaussian import greedy_entropy, greedy_mi, greedy_variance
from coreval.harness.cells import evaluate_cells, evaluate_probes, read_cell_folds
from coreval.lowrank import (
    Completion,
    complete_als,
    complete_bayes,
    complete_bias_als,
    fit_transform,
    forward_observed,
    select_als,
)
from coreval.lowrank.blend import complete_blend
from coreval.lowrank.probes import completed_covariance

FOLD_FILE = "benchpress2026_info/folds_s10_f3_bs42_ms1.json"

#: The authors' numbers on these folds (anchors README): MedAE (median over folds), fold range,
#: pooled MedAE, coverage / median width of their conformal interval, margin-5 ranking, s / 30 folds.
AUTHORS = {"medae": 4.629, "medae_mean": 4.576, "range": "4.19–5.06", "pooled": 4.598,
           "coverage": 0.8994, "width": 27.17, "rank_acc": 0.9205, "seconds_30": 99.0}


#: Folder of the shared data (set by :func:`main`).
#: Set by ``--data-dir``; joblib workers (``--n-jobs``) read it from ``COREVAL_DATA``.
DATA_DIR = Path(os.environ.get("COREVAL_DATA", "../shared/data"))


@functools.lru_cache(maxsize=1)
def model_info() -> pd.DataFrame:
    """``models.csv``, checked to list the matrix's models in its row order."""
    info = pd.read_csv(DATA_DIR / "benchpress2026_info" / "models.csv")
    if list(info["id"]) != list(load_matrix("benchpress2026", data_dir=DATA_DIR).models):
        raise SystemExit("models.csv rows do not match the matrix rows")
    return info


@functools.lru_cache(maxsize=1)
def model_features() -> np.ndarray:
    """The models' reasoning flag, open-weights flag and release date (years), by row.

    A missing entry (``open_weights`` of two models) is the column's mean.
    """
    info = model_info()
    date = pd.to_datetime(info["release_date"].astype(str), format="mixed")
    years = date.dt.year + (date.dt.day_of_year - 1) / 365.25
    x = np.column_stack([info["reasoning"].astype(float), info["open_weights"].astype(float),
                         years.to_numpy(dtype=float)])
    return np.where(np.isnan(x), np.nanmean(x, axis=0), x)  # 2 models lack open_weights


def nested_als(train: np.ndarray):
    rank, lam, _ = select_als(train, seed=0)
    return complete_bias_als(train, rank=rank, lam=lam)


METHODS = {
    "als-logit": lambda tr: complete_bias_als(tr, rank=2, lam=0.1),
    "als-logit-rs": lambda tr: complete_bias_als(tr, rank=2, lam=0.1, legacy_rng=True),
    "als-identity": lambda tr: complete_bias_als(tr, transform="identity", rank=2, lam=0.1),
    "als-nested": nested_als,
    "bayes": lambda tr: complete_bayes(tr, rank=2, df=4.0),
    "bayes-conformal": lambda tr: complete_bayes(tr, rank=2, df=4.0, calibration="conformal",
                                                 inner_fraction=1 / 3),
    "bayes-cv10-conformal": lambda tr: complete_bayes(tr, rank=2, df=4.0,
                                                      calibration="conformal", n_inner_folds=10),
    "bayes-metadata": lambda tr: complete_bayes(tr, rank=2, df=4.0,
                                                row_features=model_features()),
    "bayes-metadata-conformal": lambda tr: complete_bayes(
        tr, rank=2, df=4.0, calibration="conformal", inner_fraction=1 / 3,
        row_features=model_features()),
    "bayes-metadata-conformal-inner10": lambda tr: complete_bayes(
        tr, rank=2, df=4.0, calibration="conformal", inner_fraction=0.1,
        row_features=model_features()),
    "bayes-metadata-cv10-conformal": lambda tr: complete_bayes(
        tr, rank=2, df=4.0, calibration="conformal", n_inner_folds=10,
        row_features=model_features()),
    "bayes-metadata-cv20-conformal": lambda tr: complete_bayes(
        tr, rank=2, df=4.0, calibration="conformal", n_inner_folds=20,
        row_features=model_features()),
    "bayes-metadata-loo-conformal": lambda tr: complete_bayes(
        tr, rank=(1, 2, 3, 4), df=4.0, calibration="conformal", inner_fraction=1 / 3,
        row_features=model_features()),
    "bayes-metadata-stack": lambda tr: complete_bayes(
        tr, rank=(1, 2, 3, 4), rank_combination="stack", df=4.0,
        row_features=model_features()),
    "bayes-metadata-stack-conformal": lambda tr: complete_bayes(
        tr, rank=(1, 2, 3, 4), rank_combination="stack", df=4.0, calibration="conformal",
        inner_fraction=1 / 3, row_features=model_features()),
    "bayes-metadata-stack-conformal-inner10": lambda tr: complete_bayes(
        tr, rank=(1, 2, 3, 4), rank_combination="stack", df=4.0, calibration="conformal",
        inner_fraction=0.1, row_features=model_features()),
    "bayes-metadata-stack-cv10-conformal": lambda tr: complete_bayes(
        tr, rank=(1, 2, 3, 4), rank_combination="stack", df=4.0, calibration="conformal",
        n_inner_folds=10, row_features=model_features()),
}


def crossfold_interval(cells, level: float = 0.9) -> dict:
    """Coverage and median width of the authors' leave-fold-out interval scaling.

    The authors' evaluation (``benchpress/methods/confidence.py``, ``conformal_interval``)
    centres each fold's intervals at the prediction with half-width ``s u``: ``u`` a cell's
    uncertainty score and ``s`` the ``level`` quantile of ``|predicted - actual| / u`` over
    the held-out cells of the *other* 29 evaluation folds, which include the same cells
    held out under the other 9 seeds. Applied here with ``u`` = half the width of a
    method's own interval, so our intervals can be compared with theirs under their
    protocol; it is not a protocol a user can run (it needs the held-out answers).
    """
    cells = cells[np.isfinite(cells["lower"]) & np.isfinite(cells["upper"])]
    fold = cells["seed"].astype(str) + "/" + cells["fold"].astype(str)
    u = (cells["upper"] - cells["lower"]).to_numpy() / 2
    pred, actual = cells["predicted"].to_numpy(), cells["actual"].to_numpy()
    ratio = np.abs(pred - actual) / np.maximum(u, 1e-12)
    scale = np.empty(len(cells))
    for f in fold.unique():
        this = (fold == f).to_numpy()
        scale[this] = np.quantile(ratio[~this], level)
    covered = np.abs(pred - actual) <= scale * u
    return {"crossfold_coverage90": float(covered.mean()),
            "crossfold_width90": float(np.median(2 * scale * u))}


def fmt(x: float, digits: int = 3) -> str:
    return "—" if x is None or not np.isfinite(x) else f"{x:.{digits}f}"


def run_method(name: str, values: np.ndarray, folds, cache: Path | None,
               n_jobs: int = 1) -> dict:
    """Summary of one method over the folds, read from ``cache`` when it was run before.

    With ``cache``, finished folds are kept in ``cache/benchpress_NAME_folds/`` and an
    interrupted run resumes from them.
    """
    path = None if cache is None else cache / f"benchpress_{name}_{len(folds)}.json"
    if path is not None and path.exists():
        return json.loads(path.read_text())
    start = time.perf_counter()
    per_fold, summary, cells = evaluate_cells(
        values, folds, METHODS[name], n_jobs=n_jobs,
        checkpoint=None if cache is None else cache / f"benchpress_{name}_folds")
    if np.isfinite(cells["upper"]).any():
        summary.update(crossfold_interval(cells))
    # choices made inside the folds (rank by PSIS-LOO, stacking weights, conformal factor)
    choices = [json.loads(d) or {} for d in per_fold["details"]]
    if "rank" in choices[0]:
        summary["ranks_chosen"] = [int(c["rank"]) for c in choices]
    if "weights" in choices[0]:
        summary["rank_weights"] = [{str(r): w for r, w in c["weights"].items()}
                                   for c in choices]
    print(f"{name}: {summary} ({time.perf_counter() - start:.0f} s)", file=sys.stderr,
          flush=True)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(summary))
    return summary


def completion_section(values: np.ndarray, folds, methods: list[str],
                       cache: Path | None, n_jobs: int = 1) -> list[str]:
    lines = ["## Held-out-cell completion (30 folds)", "",
             "MedAE: median over folds of the fold's median absolute error (score points); "
             "coverage / width: median over folds of the fold's coverage of the 90 % interval "
             "and of its median width (pooled over all held-out cells in brackets); ranking: "
             "margin-5 pairwise ranking accuracy, pairs pooled over folds per benchmark, median "
             "over benchmarks. Seconds: per fold (single-threaded), with the authors' 30-fold "
             "total divided by 30 beside it.", "",
             "| method | MedAE | mean of fold MedAEs | fold range | pooled MedAE | coverage90 "
             "| width90 | ranking (margin 5) | s / fold |",
             "|---|---|---|---|---|---|---|---|---|",
             f"| BenchPress (authors' code, logit Bias-ALS r2 λ0.1, conformal risk model) | "
             f"{AUTHORS['medae']:.3f} | {AUTHORS['medae_mean']:.3f} | {AUTHORS['range']} | "
             f"{AUTHORS['pooled']:.3f} | ({AUTHORS['coverage']:.3f}) | ({AUTHORS['width']:.2f}) | "
             f"{AUTHORS['rank_acc']:.4f} | {AUTHORS['seconds_30'] / 30:.1f} |"]
    summaries = {name: run_method(name, values, folds, cache, n_jobs) for name in methods}
    for name, s in summaries.items():
        cov_pooled = s["coverage90_pooled"] if np.isfinite(s["width90_pooled"]) else np.nan
        lines.append(
            f"| {name} | {s['medae']:.3f} | {s['medae_mean']:.3f} | "
            f"{s['medae_min']:.2f}–{s['medae_max']:.2f} | {s['medae_pooled']:.3f} | "
            f"{fmt(s['coverage90'])} ({fmt(cov_pooled)}) | "
            f"{fmt(s['width90'], 2)} ({fmt(s['width90_pooled'], 2)}) | {s['rank_acc']:.4f} | "
            f"{s['seconds']:.2f} |")
    lines.append("")
    crossfold = {n: s for n, s in summaries.items() if "crossfold_coverage90" in s}
    if crossfold:
        lines += ["Under the authors' interval protocol (`crossfold_interval`: each fold's "
                  "scale is the 90 % quantile of |error| / half-width over the other 29 "
                  "folds' held-out cells, the same cells under other seeds included), "
                  "centred at the prediction:", "",
                  "| method | coverage90 | median width90 |", "|---|---|---|",
                  f"| BenchPress (authors' numbers, combined risk model) | "
                  f"{AUTHORS['coverage']:.3f} | {AUTHORS['width']:.2f} |"]
        lines += [f"| {n} | {s['crossfold_coverage90']:.3f} | {s['crossfold_width90']:.2f} |"
                  for n, s in crossfold.items()]
        lines.append("")
    for name, s in summaries.items():
        chosen = s.get("ranks_chosen")
        weights = s.get("rank_weights")
        if weights:
            mean = {r: np.mean([w[r] for w in weights]) for r in weights[0]}
            listed = ", ".join(f"rank {r} {w:.2f}" for r, w in mean.items())
            lines += [f"Stacking weights in `{name}` (mean over the {len(weights)} folds): "
                      f"{listed}.", ""]
        elif chosen:
            counts = ", ".join(f"rank {r} in {chosen.count(r)}" for r in sorted(set(chosen)))
            lines += [f"Ranks chosen by PSIS-LOO in `{name}`: {counts} of the "
                      f"{len(chosen)} folds.", ""]
    return lines


#: The paper's low-cost candidate allowlist (25 benchmarks of this matrix;
#: ``experiments/sec5_findings/optimal_probe/candidate_allowlists/user_cheap_20260505.json``).
ALLOWLIST = ("vibe_eval", "tau2_bench_telecom", "bullshit_pushback", "aime_2026", "alpacaeval_2",
             "aime_2025", "tau2_bench_airline", "brumo_2025", "hmmt_nov_2025", "ifbench",
             "matharena_apex_2025", "cmimc_2025", "hmmt_feb_2026", "smt_2025", "aa_lcr",
             "gpqa_diamond", "tau2_bench_retail", "aider_polyglot_whole", "critpt",
             "arena_hard", "scicode", "math_500", "hmmt_feb_2025", "aider_polyglot_diff",
             "mmlu_pro")

#: The authors' greedy probe chains and their numbers (anchors README): MedAE with revealed
#: cells at zero error, over non-probe cells, and margin-5 ranking accuracy.
AUTHOR_PROBES = {
    "all": (("gpqa_diamond", "hle", "codeforces_rating", "mmlu_pro", "arc_agi_1"),
            3.926, 4.76, 0.853),
    "allowlist": (("gpqa_diamond", "mmlu_pro", "aider_polyglot_diff", "math_500", "aime_2026"),
                  4.55, None, None),
    "allowlist-ranking": (("gpqa_diamond", "mmlu_pro", "aime_2025", "bullshit_pushback",
                           "hmmt_feb_2026"), None, None, 0.845),
}

#: Release families of the temporal view: the anchors README's eight families, with the
#: members and training sets of the authors' table (`experiments/sec5_findings/
#: temporal_deployment/table.tex` in microsoft/benchpress: its "# Variants" and "Train"
#: columns). Each family is predicted from the models released strictly before its cutoff,
#: the earliest member's release date unless ``FAMILY_CUTOFFS`` names another.
FAMILIES = {
    "DeepSeek R1": ("deepseek-r1", "deepseek-r1-distill-llama-70b"),
    "GPT-4.1": ("gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano"),
    "Qwen 3": ("qwen3-235b", "qwen3-32b", "qwen3-8b", "qwen3-30b-a3b"),
    "Claude Sonnet/Opus 4": ("claude-sonnet-4", "claude-opus-4"),
    "Gemini 2.5 Pro": ("gemini-2.5-pro",),
    "GPT-5": ("gpt-5",),
    "Claude Sonnet 4.5": ("claude-sonnet-4.5",),
    "GPT-5.1": ("gpt-5.1",),
}

#: The authors' table trains Gemini 2.5 Pro on 33 models: those released before its
#: preview (2025-03-25); ``models.csv`` dates it by its general release (2025-06-27).
FAMILY_CUTOFFS = {"Gemini 2.5 Pro": "2025-03-25"}

#: Probe sets scored by each completer besides ``als-logit`` (which scores them all): NUTS
#: fits are slow, and the rank-choosing completer runs four per held-out model.
BAYES_PROBE_SETS = ("BenchPress greedy (all)", "greedy posterior variance")
PROBE_SETS_OF = {"bayes-metadata": (*BAYES_PROBE_SETS, "BenchPress greedy (allowlist)",
                                    "BenchPress greedy (allowlist-ranking)"),
                 "bayes-metadata-loo": ("BenchPress greedy (all)",),
                 "bayes-metadata-stack": ("BenchPress greedy (all)",
                                          "BenchPress greedy (allowlist)")}

#: Our best numbers per experiment, filled while the sections are written (for the goals).
OUR_RESULTS: dict[str, list] = {}

#: Rows the blend validates its weight on: the newest models with at least this many
#: observed cells, reduced to the 5 revealed scores of the new-release protocol.
BLEND_VALIDATION_ROWS, BLEND_MIN_CELLS = 10, 15


def newest_rows(train: np.ndarray, n: int = BLEND_VALIDATION_ROWS,
                min_cells: int = BLEND_MIN_CELLS) -> np.ndarray:
    """The ``n`` most recently released rows of ``train`` with ``min_cells`` scores or more."""
    years = model_features()[:, 2]
    rows = np.flatnonzero((~np.isnan(train)).sum(axis=1) >= min_cells)
    return rows[np.argsort(-years[rows], kind="stable")[:n]]


def blend_als_bayes_metadata(train: np.ndarray, n_draws: int) -> Completion:
    """Bias-ALS and ``bayes-metadata`` blended by a weight validated on the newest rows
    (``n_draws`` draws of their revealed cells)."""
    return complete_blend(
        train, lambda tr: complete_bias_als(tr, legacy_rng=True),
        lambda tr: complete_bayes(tr, rank=2, df=4.0, row_features=model_features()),
        validation_rows=newest_rows(train), k_reveal=5, n_draws=n_draws)


PROBE_COMPLETERS = {
    "als-logit": (lambda tr: complete_bias_als(tr, legacy_rng=True), 1),
    "blend-als-bayes-metadata": (functools.partial(blend_als_bayes_metadata, n_draws=1), 1),
    "blend-als-bayes-metadata-d3": (functools.partial(blend_als_bayes_metadata, n_draws=3), 1),
    "bayes": (lambda tr: complete_bayes(tr, rank=2, df=4.0), 7),
    "als-logit-g7": (lambda tr: complete_bias_als(tr, legacy_rng=True), 7),
    "bayes-metadata": (lambda tr: complete_bayes(tr, rank=2, df=4.0,
                                                 row_features=model_features()), 1),
    "bayes-metadata-loo": (lambda tr: complete_bayes(tr, rank=(1, 2, 3, 4), df=4.0,
                                                     row_features=model_features()), 1),
    "bayes-metadata-stack": (lambda tr: complete_bayes(
        tr, rank=(1, 2, 3, 4), rank_combination="stack", df=4.0,
        row_features=model_features()), 1),
}


def our_probes(values: np.ndarray, k: int, candidates=None) -> dict[str, list[int]]:
    """Probe sets from the completed covariance of the full matrix (logit Bias-ALS)."""
    ct = fit_transform(values)
    observed, z = forward_observed(ct, values)
    completed, _ = complete_als(z, observed)
    cov = completed_covariance(completed, z, observed)
    sets = {"greedy posterior variance": greedy_variance(
        cov, k, observed=observed, candidates=candidates).selected.tolist()}
    if candidates is None:
        sets["greedy entropy"] = list(greedy_entropy(cov, k).selected)
        sets["greedy MI"] = list(greedy_mi(cov, k).selected)
    else:
        sub = np.asarray(candidates)
        sets["greedy entropy"] = [int(sub[i]) for i in
                                  greedy_entropy(cov[np.ix_(sub, sub)], k).selected]
        sets["greedy MI"] = [int(sub[i]) for i in greedy_mi(cov[np.ix_(sub, sub)], k).selected]
    return sets


def probe_section(values: np.ndarray, items: list[str], cache: Path | None,
                  completers: list[str], n_jobs: int = 1,
                  only: list[str] | None = None) -> list[str]:
    lines = ["## Probe selection (k = 5, held-out models)", "",
             "Each model in turn reveals only the probes it has; its other observed cells are "
             "hidden and predicted (the authors' all-known-cells protocol). MedAE: all 2,604 "
             "observed cells with the revealed probe cells at zero error (their convention); "
             "hidden: the non-probe cells only; ranking: margin-5 pairwise ranking accuracy "
             "of the completed leaderboard (the authors' measure: every pair of models at "
             "least 5 points apart, the revealed probe scores included; per benchmark, median "
             "over benchmarks), and over the pairs with a hidden cell only (stricter; rows "
             "marked — in the first ranking column were stored before the authors' measure "
             "was computed and were not re-run: four of them take hours of NUTS fits). `als-logit` "
             "and `bayes-metadata` (the Bayesian model with the models' metadata) complete "
             "once per model (the authors' protocol), and so do `bayes-metadata-loo`, which "
             "chooses the rank among 1-4 in each completion by PSIS-LOO, and "
             "`bayes-metadata-stack`, which mixes the four ranks by stacking weights (four "
             "NUTS fits per model; both scored on the authors' chain, and the stacked one "
             "also on their allowlist chain); `bayes` hides 7 consecutive "
             "models of the matrix per completion (often one family, so it is harder), and "
             "`als-logit-g7` is Bias-ALS under that same grouping, the fair comparison. Our "
             "probe sets are chosen on the completed covariance of the whole "
             "matrix, as the authors' greedy chains are chosen on the whole matrix.", "",
             "| candidates | probe set | probes | completer | MedAE | MedAE hidden | ranking | "
             "ranking, hidden pairs |",
             "|---|---|---|---|---|---|---|---|"]
    allow = [items.index(b) for b in ALLOWLIST]
    for pool, candidates in (("all", None), ("allowlist", allow)):
        keys = [key for key in AUTHOR_PROBES if key.split("-")[0] == pool]
        sets = {f"BenchPress greedy ({key})": [items.index(b) for b in AUTHOR_PROBES[key][0]]
                for key in keys}
        sets.update(our_probes(values, 5, candidates))
        for key in keys:
            chain, medae, hidden, rank = AUTHOR_PROBES[key]
            lines.append(f"| {pool} | BenchPress greedy ({key}), authors' numbers | "
                         f"{' → '.join(chain)} | authors' code | {fmt(medae)} | "
                         f"{fmt(hidden)} | {fmt(rank)} | — |")
        for name, probes in sets.items():
            if only is not None and name not in only:
                continue
            for comp in completers:
                if comp != "als-logit" and name not in PROBE_SETS_OF.get(comp,
                                                                        BAYES_PROBE_SETS):
                    continue
                path = (None if cache is None else
                        cache / f"benchpress_probes_{pool}_{'-'.join(map(str, probes))}_{comp}.json")
                if path is not None and path.exists():
                    res = json.loads(path.read_text())
                    if "rank_acc_hidden" not in res:  # stored when rank_acc was that measure
                        res = {**res, "rank_acc_hidden": res["rank_acc"],
                               "rank_acc": float("nan")}
                else:
                    completer, group = PROBE_COMPLETERS[comp]
                    res = evaluate_probes(values, probes, completer, group_size=group,
                                          n_jobs=n_jobs, checkpoint=None if path is None
                                          else path.with_suffix(""))
                    print(f"probes {pool} {name} {comp}: {res}", file=sys.stderr, flush=True)
                    if path is not None:
                        path.parent.mkdir(parents=True, exist_ok=True)
                        path.write_text(json.dumps(res))
                kind = "chain" if name.startswith("BenchPress") else "ours"
                OUR_RESULTS.setdefault(f"probes-{pool}-{kind}", []).append((name, comp, res))
                lines.append(f"| {pool} | {name} | {' → '.join(items[p] for p in probes)} | "
                             f"{comp} | {res['medae']:.3f} | {res['medae_hidden']:.3f} | "
                             f"{fmt(res['rank_acc'])} | {res['rank_acc_hidden']:.3f} |")
    return [*lines, ""]


def temporal_family(values: np.ndarray, rows: list[int], train_rows: np.ndarray, k: int,
                    seed: int, completer: Callable[[np.ndarray], Completion]
                    ) -> dict[str, list[float] | int]:
    """One family and seed of the temporal view, scored as the authors score it.

    Each member reveals ``k`` of its observed scores at random; the completer sees the
    training rows and the revealed cells. A hidden cell whose benchmark has no observed
    score in that matrix is "not predictable" in the authors' protocol (their column
    z-score is undefined there) and leaves the metric; revealed cells stay at zero error.

    Returns
    -------
    dict
        ``errors``: the absolute errors of the metric cells (revealed cells as 0);
        ``hidden``: those of the predictable hidden cells; ``not_predictable``: their count;
        ``inside`` / ``width``: whether each hidden cell is inside the completer's 90 %
        interval and the interval's width (False / NaN without one); ``details``: what
        the completer chose (e.g. the blend's weight; a blend's two components' means and
        intervals at the hidden cells, with their ``truth``).
    """
    rng = np.random.default_rng([seed, *rows])
    train = np.full_like(values, np.nan)
    train[train_rows] = values[train_rows]
    revealed = {}
    for r in rows:
        obs = np.flatnonzero(~np.isnan(values[r]))
        revealed[r] = rng.choice(obs, size=min(k, obs.size), replace=False)
        train[r, revealed[r]] = values[r, revealed[r]]
    predictable = (~np.isnan(train)).any(axis=0)
    completion = completer(train)
    pred = completion.mean
    hidden, inside, width, n_out, hidden_cells = [], [], [], 0, []
    for r in rows:
        obs = np.flatnonzero(~np.isnan(values[r]))
        hid = np.setdiff1d(obs, revealed[r])
        n_out += int((~predictable[hid]).sum())
        hid = hid[predictable[hid]]
        hidden_cells.append((r, hid))
        hidden.extend(np.abs(pred[r, hid] - values[r, hid]).tolist())
        inside.extend(((completion.lower[r, hid] <= values[r, hid])
                       & (values[r, hid] <= completion.upper[r, hid])).tolist())
        width.extend((completion.upper[r, hid] - completion.lower[r, hid]).tolist())
    n_revealed = sum(len(v) for v in revealed.values())
    details = dict(completion.details or {})
    if "components" in details:  # a blend's two completions, at the same hidden cells
        details["components"] = [
            {key: np.concatenate([getattr(c, key)[cells] for cells in hidden_cells]).tolist()
             for key in ("mean", "lower", "upper")} for c in details["components"]]
        details["truth"] = np.concatenate([values[cells] for cells in hidden_cells]).tolist()
    return {"errors": [0.0] * n_revealed + hidden, "hidden": hidden, "not_predictable": n_out,
            "inside": inside, "width": width, "details": details}


def temporal_section(values: np.ndarray, models: list[str], dates: list[str], k: int,
                     n_seeds: dict[str, int], cache: Path | None,
                     n_jobs: int = 1) -> list[str]:
    lines = ["## New releases (temporal view)", "",
             "The authors' protocol (`experiments/sec5_findings/temporal_deployment`, the "
             "eight-family version whose numbers are in the anchors). Each family is "
             "predicted from the models released strictly before its cutoff (members and "
             "training sets as in the authors' table; ids in `benchmarks/benchpress.py`); "
             f"every member reveals {k} of its observed scores at random and the rest are "
             "predicted. A hidden cell whose benchmark has no observed score in the training "
             "matrix is not predictable and leaves the metric, as in the authors' code; the "
             "revealed cells count at zero error. Per family, the median over seeds of each "
             "seed's MedAE; the headline is the median over the 8 families. Hidden cells "
             "only: the MedAE of all families' and seeds' predictable hidden cells pooled "
             "(the authors' summary). Coverage / width: of the completer's 90 % interval over "
             "the same hidden cells pooled (coverage, median width). Per-family columns: the "
             "family's MedAE. The rows under a blend are its two completions at the same "
             "cells, alone and averaged with equal weights, recomputed from the stored "
             "components; their interval is the second component's 90 % interval moved to "
             "the row's mean.",
             "", "| completer | seeds | MedAE (median over families) | hidden cells only | "
             "coverage90 | width90 | not predictable | " + " | ".join(FAMILIES) + " |",
             "|---|---|---|---|---|---|---|" + "---|" * len(FAMILIES),
             "| BenchPress (authors' numbers) | 10 | 5.04 | 6.53 | | | |"
             + " |" * len(FAMILIES)]
    dates = np.asarray(dates)
    for comp, seeds in n_seeds.items():
        path = (None if cache is None else
                cache / f"benchpress_temporal_authors_{comp}_{seeds}.json")
        if path is not None and path.exists():
            res = json.loads(path.read_text())
        else:
            completer = PROBE_COMPLETERS[comp][0]
            tasks = []
            for fam, ids in FAMILIES.items():
                rows = [models.index(m) for m in ids]
                cutoff = FAMILY_CUTOFFS.get(fam, min(dates[rows]))
                tasks += [(fam, rows, np.flatnonzero(dates < cutoff), seed)
                          for seed in range(seeds)]
            outs = Parallel(n_jobs=n_jobs, return_as="generator")(
                delayed(temporal_family)(values, rows, train_rows, k, seed, completer)
                for _fam, rows, train_rows, seed in tasks)
            res = {fam: [] for fam in FAMILIES}
            for (fam, _rows, _train, seed), out in zip(tasks, outs, strict=True):
                res[fam].append(out)
                print(f"temporal {comp} {fam} seed {seed}: {np.median(out['errors']):.3f} "
                      f"{out['details'].get('weight', '')}", file=sys.stderr, flush=True)
            if path is not None:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(json.dumps(res))
        line, med, med_hidden = temporal_row(comp, seeds, res)
        OUR_RESULTS.setdefault("temporal", []).append((comp, med, med_hidden))
        lines.append(line)
        first = res[next(iter(FAMILIES))][0]["details"]
        if "components" in first:
            for label, weight in (("its Bias-ALS component", 0.0),
                                  ("its `bayes-metadata` component", 1.0),
                                  ("both, equal weights", 0.5)):
                lines.append(temporal_row(f"  {label}", seeds,
                                          blend_at_weight(res, weight))[0])
    return [*lines, ""]


def temporal_row(label: str, seeds: int, res: dict) -> tuple[str, float, float]:
    """The table row of one completer's new-release results, its headline and hidden MedAE."""
    per_family = {f: float(np.median([np.median(s["errors"]) for s in res[f]]))
                  for f in FAMILIES}
    med = float(np.median(list(per_family.values())))
    med_hidden = float(np.median([e for f in FAMILIES for s in res[f] for e in s["hidden"]]))
    n_out = sum(s["not_predictable"] for f in FAMILIES for s in res[f])
    width = np.array([w for f in FAMILIES for s in res[f] for w in s.get("width", [])])
    interval = "— | —"
    if width.size and np.isfinite(width).all():
        inside = [i for f in FAMILIES for s in res[f] for i in s["inside"]]
        interval = f"{np.mean(inside):.3f} | {np.median(width):.2f}"
    line = (f"| {label} | {seeds} | {med:.2f} | {med_hidden:.2f} | {interval} | {n_out} | "
            + " | ".join(f"{per_family[f]:.2f}" for f in FAMILIES) + " |")
    return line, med, med_hidden


def blend_at_weight(res: dict, weight: float) -> dict:
    """A blend's new-release results recomputed from its stored components at a fixed weight
    (0: the first component alone, 1: the second, whose interval is kept)."""
    out = {}
    for fam, seeds in res.items():
        out[fam] = []
        for s in seeds:
            first, second = s["details"]["components"]
            truth = np.asarray(s["details"]["truth"])
            mean = (1 - weight) * np.asarray(first["mean"]) + weight * np.asarray(second["mean"])
            err = np.abs(mean - truth).tolist()
            lower, upper = (np.asarray(second[k]) + mean - np.asarray(second["mean"])
                            for k in ("lower", "upper"))
            n_revealed = len(s["errors"]) - len(s["hidden"])
            out[fam].append({"errors": [0.0] * n_revealed + err, "hidden": err,
                             "not_predictable": s["not_predictable"],
                             "inside": ((lower <= truth) & (truth <= upper)).tolist(),
                             "width": (upper - lower).tolist()})
    return out


#: Methods of the Table 4 section: label -> (registered name, options).
OTHER_METHODS = {
    "gauss-mi": ("gauss-mi", {}),
    "gauss-variance": ("gauss-variance", {}),
    "gauss-variance (exchange=False)": ("gauss-variance", {"exchange": False}),
    "bias-als-mi": ("bias-als-mi", {}),
    "bias-als-mi (fold_in=ridge)": ("bias-als-mi", {"fold_in": "ridge"}),
    "bias-als-variance": ("bias-als-variance", {}),
    "bias-als-variance (exchange=False)": ("bias-als-variance", {"exchange": False}),
    "bayes-lowrank-mi": ("bayes-lowrank-mi", {}),
    "bayes-lowrank-mi (rank 1-4 by PSIS-LOO)": ("bayes-lowrank-mi", {"rank": (1, 2, 3, 4)}),
}
#: Smola's Table 4 / the factor-imputer results at k = 5 and the issue's goals.
OTHER_GOALS = {"mteb": 0.80, "merged": 0.60}


def other_rows(data: Path, label: str, cache: Path | None) -> list[list]:
    """``[dataset, label, R², coverage90, width90]`` of one method at k = 5 (10 folds)."""
    import tempfile

    from coreval.data.npz import read_npz
    from coreval.harness import run_grid

    slug = label.replace(" ", "_").replace("(", "").replace(")", "").replace("=", "-")
    path = None if cache is None else cache / f"benchpress_other_{slug}.json"
    if path is not None and path.exists():
        return json.loads(path.read_text())
    name, options = OTHER_METHODS[label]
    datasets = {n: read_npz(data / f"{n}.npz", name=n) for n in OTHER_GOALS}
    with tempfile.TemporaryDirectory() as tmp:
        df = run_grid(datasets, [name], [5], out=Path(tmp) / "grid.parquet", split="kfold",
                      folds=10, holdout=0.1, seeds=None, progress=False,
                      method_options={name: options} if options else None)
    failed = df[df["error"].notna() & (df["error"] != "")]
    if len(failed):
        raise SystemExit(f"grid cells failed: {failed['error'].iloc[0]}")
    agg = df.groupby("dataset")[["r2", "coverage90", "width90"]].mean()
    rows = [[ds, label, *map(float, vals)] for ds, vals in agg.iterrows()]
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(rows))
    return rows


def other_section(data: Path, cache: Path | None) -> list[str]:
    """MTEB and MERGED at k = 5 with the harness's benchmark-level protocol (10 folds)."""
    rows = sorted((row for label in OTHER_METHODS for row in other_rows(data, label, cache)),
                  key=lambda r: (r[0], list(OTHER_METHODS).index(r[1])))
    lines = ["## Other matrices (Smola's Table 4 protocol, k = 5)", "",
             "`run_grid(split=\"kfold\", folds=10, holdout=0.1)`, the protocol's 10 folds; "
             "benchmarks chosen on the training models (greedy MI, or greedy variance "
             "reduction: the expected imputation R² of the Gaussian model, whose set is then "
             "improved by single swaps on the same criterion, Fedorov exchange; "
             "`exchange=False`: the greedy set), the rest imputed for "
             "the held-out models. R²: pooled, in the training-standardised space, mean over "
             "folds; coverage and width (standardised units) of the 90 % intervals over the "
             "unselected observed cells. `bias-als-*` and `bayes-lowrank-mi` read the 0-1 "
             "columns as fractions (`fractions=True`); `bias-als-*` fold a new model in by the "
             "empirical-Bayes posterior of its bias and factors (`fold_in=\"prior\"`, the "
             "default), the `fold_in=ridge` row by the fit's ridge λ = 0.1.", "",
             "| dataset | goal R² | method | R² | coverage90 | width90 |",
             "|---|---|---|---|---|---|"]
    for ds, method, r2, cov, width in rows:
        OUR_RESULTS.setdefault(f"other-{ds}", []).append((method, r2))
        lines.append(f"| {ds} | {OTHER_GOALS[ds]:.2f} | {method} | {r2:.3f} | {cov:.3f} | "
                     f"{width:.2f} |")
    return [*lines, ""]


NOTES = [
    "## Notes", "",
    "- Reproduction: with the authors' random starts (`legacy_rng=True`, "
    "`numpy.random.RandomState(42 + s)`) coreval's Bias-ALS gives their per-cell predictions "
    "(`tests/test_lowrank.py` checks fold 0 to 0.01 points) and their 30-fold numbers; "
    "`als-logit` differs only by its random starts (`numpy.random.default_rng`).",
    "- The Bayesian model's gain over Bias-ALS comes from averaging over the posterior (NUTS) "
    "and the Student-t likelihood; its raw 90 % predictive intervals under-cover held-out "
    "cells, and the nested conformal factor (fitted on a third of each model's training "
    "cells, inside the fold) widens them; with the fixed factor (below) it over-covers "
    "slightly and is wider than the authors' conformal risk model. Cross-conformal over 10 "
    "inner folds (`bayes-metadata-cv10-conformal`) covers 0.901 (pooled) with a median "
    "width of 27.26, against the authors' 0.899 and 27.17; the stacked posterior with it "
    "(`bayes-metadata-stack-cv10-conformal`) covers 0.899 with a median width of 26.91.",
    "- Probe sets: the authors' chains were chosen by greedy search on this very evaluation "
    "(every candidate scored with 84 completions), so their MedAE is in-sample for the probe "
    "choice; the greedy-posterior-variance probes come from the completed covariance alone "
    "(seconds instead of minutes per step). Entropy and MI on the completed covariance ignore "
    "how many models report a benchmark and pick rarely reported ones. The greedy search "
    "itself is `coreval.harness.probe_search.greedy_probe_search`; run with the authors' "
    "completer on the allowlist (`benchmarks/probe_search.py`, 42 min on 2 cores) it picks "
    "their chain with their MedAE at each of the 5 steps (`probe_search_allowlist.md`).",
    "- `bayes-metadata` as a probe completer hides one model per completion, as `als-logit` "
    "does (84 NUTS fits per probe set, about 13 s each); the covariates are known for a new "
    "model before any benchmark is run. With only five revealed scores the posterior mean "
    "shrinks a row towards what the training models and its covariates predict for it, "
    "which lowers the absolute errors of the hidden cells more than it orders close models "
    "(see its ranking columns). On the authors' two allowlist chains it gives MedAEs of "
    "3.841 and 3.854 with margin-5 rankings of 0.859 and 0.851 (Bias-ALS on the same "
    "chains: 4.549 and 0.830, 4.795 and 0.845).",
    "- Model settings of `bayes`: rank 2 (the authors' default) and the Student-t's 4 degrees "
    "of freedom were fixed after trying rank 2 / 3 and normal / Student-t noise on the first "
    "three of these 30 folds (no per-fold tuning); the conformal factor is chosen inside "
    "each fold from training cells only. Four chains from different Bias-ALS starts instead "
    "of one gave no gain on folds 4-9 (median MedAE 4.38 vs 4.36), so the posterior is not "
    "stuck in one mode; averaging the posterior mean with Bias-ALS (0.3 weight) neither "
    "(4.37).",
    "- `bayes-metadata-loo-conformal` and the `bayes-metadata-loo` completer (rows marked †: "
    "the model before the covariates set the rows' prior means) choose the rank "
    "inside each fit among 1-4 (the grid of `als-nested`) by PSIS-LOO of the training cells "
    "(`complete_bayes(rank=(1, 2, 3, 4))`, arviz's `loo` on every observed cell's "
    "log-likelihood): one NUTS fit per rank, so about 2.5 times the time of a fixed rank. "
    "The training cells favour the top of the grid (rank 4 in 28 of the 30 folds), more "
    "factors than the authors' rank 2. With that model the change was within the Monte "
    "Carlo noise on held-out cells (MedAE 4.205 → 4.188) and on the authors' probe chain "
    "(3.786 → 3.814; hidden cells 4.514 → 4.494). In the Table 4 section, `bayes-lowrank-mi` with the same "
    "choice on the training models (`BayesLowRankImputer(rank=(1, 2, 3, 4))`) gains a little "
    "R² on both matrices and stays below the Gaussian imputer.",
    "- `bayes-metadata-stack-conformal` and the `bayes-metadata-stack` completer keep all "
    "four ranks and mix their posterior predictive distributions with Bayesian stacking "
    "weights (Yao, Vehtari, Simpson & Gelman 2018: the weights that maximise the PSIS-LOO "
    "log score of the mixture of the training cells; `complete_bayes(rank=(1, 2, 3, 4), "
    "rank_combination=\"stack\")`), from the same four NUTS fits as the rank choice; its "
    "conformal factor's inner fit stacks again on the inner cells (eight NUTS fits per "
    "fold). Rank 4 gets most of the weight and rank 3 most of the rest (the weights above). "
    "Stacking was tried after the rank choice because selecting one "
    "model discards the others' predictive information (the argument of Yao et al.); on the "
    "first 12 folds, before the 30-fold run, the stacked posterior mean had a lower fold "
    "MedAE than the chosen rank's in 9 of 12 folds (mean 4.250 → 4.215); over the 30 "
    "folds, with the model before the covariates set the rows' prior means, 4.143 against "
    "the rank choice's 4.188, within the Monte Carlo noise stated below, and on the "
    "authors' probe chain 3.805 (hidden cells 4.476; rank choice 3.814 / 4.494). With the "
    "current model the stacked posterior gives a MedAE of 4.061 against 4.108 for rank 2 "
    "alone (`bayes-metadata`), with a margin-5 ranking of 0.9291 against 0.9314: the same "
    "order as before, again within about the Monte Carlo noise.",
    "- The nested conformal factor was fixed after an earlier version of this table "
    "(CHANGELOG): its inner fit's column transform had been fitted with the inner "
    "calibration cells too, which let them shape the inner fit's column means and scales, "
    "and its quantile was one order statistic high. With the fix the conformal rows that "
    "hold out a third cover 0.920–0.925 (pooled) with median widths of 30.0–31.7 (with "
    "the current model `bayes-metadata-conformal` 0.920 and 30.30, "
    "`bayes-metadata-stack-conformal` 0.920 and 29.98), against about 0.88 and 25.3–26.3 "
    "before it: the factor over-covers on this matrix. "
    "The inner fit that "
    "calibrates the factor trains on two thirds of the training cells, so it predicts its "
    "calibration cells worse than the full fit predicts the held-out cells. On this matrix "
    "that is the cause: hiding a tenth instead of a third "
    "(`bayes-metadata-conformal-inner10`, the model before the covariates set the rows' "
    "prior means) gives a pooled coverage of 0.908 with a median width of 29.34 "
    "(`bayes-metadata-conformal` with a third, same model: 0.922 and 31.43), its factor "
    "varying more between folds, and the stacked posterior with it "
    "(`bayes-metadata-stack-conformal-inner10`) covers 0.910 with a median width of 29.00 "
    "(the tenth was tried because of the third's over-coverage on these folds, so those "
    "rows are not a blind test). On the other matrices with missing cells "
    "(`conformal_cells.md`: the older BenchPress release, MERGED, MTEB) the two "
    "fractions give the same mean coverage (0.910 and 0.911, 0.907 and 0.911, 0.899 and "
    "0.899), so a split keeps a third (`inner_fraction=1/3`). Cross-conformal (Vovk 2015; "
    "`complete_bayes(n_inner_folds=10)`, now the default of `calibration=\"conformal\"`) "
    "reduces both effects: each model's training cells "
    "are dealt into 10 groups, ten inner fits each leave one group out, and the factor is "
    "the conformal quantile of all groups' scores pooled, so every training cell "
    "calibrates once and each inner fit sees nine tenths of them. "
    "`bayes-metadata-cv10-conformal` covers 0.901 pooled (0.903 median over folds) with a "
    "median width of 27.26 (27.30), for 81 s per fold (eleven NUTS fits); under the "
    "authors' protocol its intervals give 0.900 and 25.96, close to `bayes-metadata`'s "
    "25.81, so little of the posterior's sharpness is lost to the in-fold calibration. "
    "Without the covariates, `bayes-cv10-conformal` covers 0.904 with a median width of "
    "28.48 (`bayes-conformal`, a third: 0.922 and 31.70). It "
    "was tried because of the over-coverage on these folds (not a blind test) and then "
    "checked on the other three matrices (`conformal_cells.md`): mean coverage 0.899, "
    "0.903 and 0.901 on the older BenchPress release, MERGED and MTEB (a third: 0.911, "
    "0.911, 0.899), with a factor that varies less between folds (SD 0.038, 0.023, "
    "0.010 against 0.105, 0.051, 0.036). Over 20 inner folds "
    "(`bayes-metadata-cv20-conformal`, each inner fit seeing 95 % of the training cells) "
    "it covers 0.899 pooled (0.898) with a median "
    "width of 26.94 (26.92), under the authors' protocol "
    "0.900 and 25.85, for twice the inner "
    "fits (run two folds at a time with other jobs, so its seconds are not comparable); it "
    "was run after the 10-fold width missed the authors' by 0.09 (not a blind test), and "
    "the default stays at 10 folds. The stacked posterior with the default 10 inner folds "
    "(`bayes-metadata-stack-cv10-conformal`, each inner fit stacking its four ranks again: "
    "44 NUTS fits per fold) covers 0.899 pooled (0.900 median over folds) with a median "
    "width of 26.91 (26.77), under the authors' protocol 0.900 and 25.71. Its MedAE, 4.081, "
    "is that of a second run of the stacked posterior's main fit (`bayes-metadata-stack` "
    "gave 4.061, within the Monte Carlo noise below), and its 719 s per fold were measured "
    "two folds at a time, at times beside a third single-threaded job. The "
    "`bias-als-*` rows of the Table 4 section were re-run after their calibration folds "
    "got transforms of their own (CHANGELOG): R² is unchanged and coverage moved by at "
    "most 0.01.",
    "- The authors' interval is calibrated across the evaluation folds "
    "(`benchpress/methods/confidence.py` in their repository): both the risk model that "
    "predicts a cell's error and the conformal scale of a fold are fitted on the held-out "
    "cells of the other 29 folds, which hold the same cells, with their true scores, under "
    "the other 9 seeds. Ours are calibrated inside each fold on its training cells only. "
    "Under their protocol (`crossfold_interval`, with our posterior's half-width as the "
    "uncertainty score and no risk model), `bayes-metadata` covers 0.900 with a median "
    "width of 25.81, `bayes` 0.900 with 26.93 and `bayes-metadata-stack` 0.900 with 25.53, "
    "all narrower than their 27.17 at their coverage.",
    "- Two calibrations without the nested fit's loss of cells were tried on "
    "`bayes-metadata`'s 30 fits (the model before the covariates set the rows' prior "
    "means) and are not offered. (1) Leave-one-cell-out: each training "
    "cell's PSIS-LOO predictive CDF (importance weights from `arviz.psislw`) gives its "
    "probability integral transform u, and the conformal quantile of |u − 1/2| sets the "
    "interval's nominal level; the levels came out 0.90–0.92 and the held-out cells were "
    "covered 0.868 (median width 24.40): 11 % of the training cells have Pareto k > 0.7, "
    "where the importance-sampled LOO predictive is too optimistic. (2) A factor per cell "
    "that follows its row and column support (locally weighted conformal, Lei et al. 2018: "
    "log |score| regressed on log n_row and log n_col of the inner fit, evaluated at the "
    "final fit's support): 0.894 with a median width of 27.90 on these fits "
    "(`bayes-metadata-conformal`'s constant factor on the same fits: 0.922 and 31.43), "
    "but 0.851, 0.898 and 0.889 on the older BenchPress release, MERGED and MTEB under "
    "`conformal_cells.md`'s protocol (constant factor: 0.911, 0.911, 0.899): across "
    "cells, the well-supported rows are also the easier ones, so the trend overstates what "
    "the final fit's extra cells buy.",
    "- Monte Carlo error: NUTS draws depend on the random stream and on the floating-point "
    "order of XLA's reductions; four runs of `bayes` gave a median MedAE over the 30 folds "
    "of 4.32 and 4.39 (an earlier sampler, XLA on one and on two threads), 4.34, and 4.36 "
    "(this table). Differences smaller than about 0.07 in MedAE, or 0.005 in ranking "
    "accuracy, between the Bayesian rows of the held-out-cell table are within that noise. Probe "
    "completions, where a hidden row reveals only 5 scores, vary more: two runs of "
    "`bayes-metadata` with the model before the covariates set the rows' prior means gave "
    "4.07 and 4.19 on the allowlist's greedy-posterior-variance probes, 3.85 and 3.79 on "
    "the authors' chain, 3.91 and 3.93 on the greedy-posterior-variance probes from all "
    "benchmarks.",
    "- `bayes-metadata` adds the three covariates `models.csv` has (reasoning flag, open "
    "weights, release date; the two models without an open-weights entry get the column's "
    "mean), all of them, none chosen by their effect; "
    "before the 30-fold run it was tried on folds 4-9 only (median MedAE 4.36 → 4.25). "
    "Adding the provider (one-hot, the 10 providers with two or more models) made it worse "
    "there (4.37) and is not used. The covariates also set the prior means of each "
    "model's bias and factors, with coefficients shared by all benchmarks (Park, Kim & "
    "Choi 2013; CHANGELOG): that was added after the new-release view showed the releases "
    "that beat every older model pulled back to the older models' average (DeepSeek R1 "
    "9.33 and Gemini 2.5 Pro 11.09, against 6.93 and 7.35 for Bias-ALS on the same draws; "
    "now 7.23 and 8.01). It also lowered the held-out-cell MedAE (4.205 → 4.108) and the "
    "authors' probe chain's (3.786 → 3.667), but it was chosen after seeing these data, "
    "so it is not a blind test here; `tests/test_lowrank.py` checks it on simulated models "
    "newer than the training range.",
    "- Where a model reveals only a few scores (probes, new releases) the posterior mean "
    "shrinks its row towards what the training models and its covariates predict; Bias-ALS "
    "(lambda 0.1) extrapolates further. On the same revealed draws `bayes-metadata` has "
    "the lower MedAE over the hidden cells pooled (6.43 against Bias-ALS's 6.90) and the "
    "higher median over the 8 families (5.21 against 4.69): Bias-ALS is ahead on 5 of the "
    "8 families, the Bayesian model on Qwen 3, GPT-5 and GPT-5.1.",
    "- `blend-als-bayes-metadata` (`coreval.lowrank.complete_blend`) mixes Bias-ALS and "
    "`bayes-metadata` as `(1 − w) ALS + w Bayes`, with `w` chosen inside each completion "
    "from the training matrix it is given: the 10 most recently released training models "
    "with 15 or more scores are reduced to 5 revealed scores each (one draw), both "
    "completers fill them in, and the `w` in {0, 0.1, …, 1} with the lowest median "
    "absolute error on their hidden cells is used; its 90 % interval is split conformal "
    "on those cells' errors scaled by each benchmark's spread. It costs two runs of each "
    "completer (about 30 s per family and seed, two at once). On the 8 families it gives "
    "a MedAE of 4.77 (the authors: 5.04; its Bias-ALS component on the same draws 4.69, "
    "its `bayes-metadata` component 5.02) and 6.63 over the hidden cells (6.90 and 6.42)."
    " The validated weight does not follow which component wins on a family: it leans to "
    "Bias-ALS on Qwen 3 (mean w 0.04) where the Bayesian component is better, and to the "
    "Bayesian component on Claude Sonnet/Opus 4 and Gemini 2.5 Pro (0.94 and 1.0) where "
    "Bias-ALS is better; the newest training models are not like the next family. Equal "
    "weights, with no choice at all, give 4.77 and 6.45, below both of the authors' "
    "numbers; that row was computed after the validated blend's result, so it is not a "
    "blind test, and the option is `weights=(0.5,)`. "
    "`blend-als-bayes-metadata-d3` is the same blend with its weight validated on three "
    "independent draws of the validation rows' revealed cells, their errors pooled "
    "(`complete_blend(n_draws=3)`, now the default; four runs of each completer). It was "
    "added after the single draw's weights were seen to sit at an end of the grid (0 or 1"
    " in 40 % of the completions), and its configuration was fixed before it was run: it "
    "gives a MedAE of 4.81 over the families and 6.33 over the hidden cells, below both "
    "of the authors' numbers (5.04, 6.53) with one method whose weight is chosen inside "
    "each completion. Its first draw is the single draw's (mean first-draw weights 0.04 "
    "on Qwen 3, 0.94 on Claude Sonnet/Opus 4, 1.0 on Gemini 2.5 Pro, as above); pooled "
    "over three draws the weights are 0.69, 0.99 and 0.75, and 19 % of the completions "
    "end at 0 or 1. The interval is not fixed by it: 0.807 coverage with a median width "
    "of 42.7 points. "
    "No interval here covers the new "
    "releases: the blend's conformal interval covers 0.812 of the hidden cells with a "
    "median width of 44.6 points, the `bayes-metadata` posterior's 0.775 with 28.6. The "
    "validation rows are exchangeable with the new releases only in how many scores they "
    "reveal; the families that beat every older model (DeepSeek R1, Gemini 2.5 Pro, "
    "Claude Sonnet 4.5: coverage 0.68-0.72) are harder to predict than the newest "
    "training models were. The `bayes-metadata` component here (5.02, hidden 6.42) and "
    "the `bayes-metadata` row above (5.21, 6.43) are the same model on the same draws; "
    "the difference is the Monte Carlo noise of NUTS on rows with 5 scores (see the Monte"
    " Carlo note).",
    "- New releases follow the authors' code (`experiments/sec5_findings/"
    "temporal_deployment/run.py` and `gen_table.py` in their repository; the numbers in the "
    "anchors are from its eight-family version, whose table gives each family's members "
    "and training-set size). The not-predictable rule was checked against the summary of "
    "its later 27-target version (`hidden_only_summary_by_k.json`, each model released "
    "between DeepSeek R1 and GPT-5.1 with more than 20 scores its own target): with "
    "Bias-ALS, 5 revealed scores and 10 seeds, the count of not-predictable hidden cells "
    "is within 2 of theirs for each of the 27 targets (the draws differ). Because the "
    "revealed draws differ, `als-logit` (the authors' method re-run on our draws: 4.69, "
    "hidden cells 6.90) is the paired reference for the other completers; its per-family "
    "MedAEs are within 0.7 of the authors' table (for example DeepSeek R1 6.93 against "
    "6.7, Gemini 2.5 Pro 7.35 against 6.7, GPT-5 4.73 against 4.9).",
    "- Timings were taken on the shared 2-core machine with two of these jobs at once, "
    "single-threaded; `bayes-conformal` runs two NUTS fits per fold. The first NUTS fit of "
    "a process compiles the sampler (about 15 s); later fits of the same padded shape reuse "
    "it.",
    "- `bias-als-variance` on MERGED: fold 8 has R² -3.3. GPT-3.5-Turbo's `mt_bench/stem`, "
    "a benchmark that 2 of the fold's training models report (both 9.7), is predicted at 4.7 "
    "by Bias-ALS (λ 0.1 barely constrains a column of 2 cells; the real score is 8.7); the "
    "Gaussian imputer predicts 9.7 from the same picks. Greedy variance weighs how many "
    "source models report a benchmark (the expected variance over their observation "
    "patterns); greedy MI and entropy do not.",
    "- `als-nested` (rank and lambda chosen on a third of each model's training cells, inside "
    "the fold) is worse than the fixed default here: the inner choice did not transfer.",
    "",
]


def goals_section(cache: Path) -> list[str]:
    """The issue's acceptance goals against the numbers above (read from the cache)."""
    def load(name: str):
        path = cache / name
        return json.loads(path.read_text()) if path.exists() else None

    ranked = {n: r for n in METHODS if (r := load(f"benchpress_{n}_30.json"))}
    rs = ranked.get("als-logit-rs")
    # the library's default calibration, cross-conformal over 10 inner folds
    # (``complete_bayes(calibration="conformal")``); the other calibrations are variants below
    conformal = {n: r for n, r in ranked.items() if n.endswith("-cv10-conformal")}
    name = min(conformal, key=lambda n: conformal[n]["medae"]) if conformal else None
    bayes = conformal.get(name)
    lines = ["## Goals of the issue", "",
             "| goal | authors | coreval | met |", "|---|---|---|---|"]

    def row(goal: str, theirs: str, ours: float | None, ok: bool | None, digits: int = 3):
        value = "—" if ours is None else f"{ours:.{digits}f}"
        lines.append(f"| {goal} | {theirs} | {value} | "
                     f"{'—' if ok is None else ('yes' if ok else 'no')} |")

    if rs:
        row("reproduce logit Bias-ALS MedAE within 0.1 (`als-logit-rs`)", "4.629", rs["medae"],
            abs(rs["medae"] - 4.629) <= 0.1)
    if bayes:
        row(f"best MedAE ≤ 4.2 with the default calibration (`{name}`: cross-conformal over "
            "10 inner folds, not a blind test, see the notes; the rows below are the same "
            "method's)", "4.629", bayes["medae"], bayes["medae"] <= 4.2)
        third = name.replace("-cv10-conformal", "-conformal")
        variants = [("", bayes),
                    (f"  a third of the training cells held out once for the factor "
                     f"(`{third}`): ", ranked.get(third))]
        # other numbers of inner folds: the best-MedAE method per number (``-cvK-``)
        for folds in sorted({int(m[1]) for n in ranked if (m := re.search(r"-cv(\d+)-", n))}
                            - {10}):
            cross = {n: r for n, r in ranked.items() if f"-cv{folds}-" in n}
            if cross:
                cv = min(cross, key=lambda n: cross[n]["medae"])
                variants.append((f"  cross-conformal over {folds} inner folds (`{cv}`, MedAE "
                                 f"{cross[cv]['medae']:.3f}, ranking "
                                 f"{cross[cv]['rank_acc']:.4f}; not a blind test, see the "
                                 "notes): ", cross[cv]))
        for label, s in variants:
            if s:
                cov = s["coverage90_pooled"]
                row(f"{label}coverage90 in [0.88, 0.92] (pooled over cells)", "0.8994", cov,
                    0.88 <= cov <= 0.92, 4)
                row(f"{label}median width90 < 27.17 (pooled over cells)", "27.17",
                    s["width90_pooled"], s["width90_pooled"] < 27.17, 2)
        crossfold = {n: r for n, r in ranked.items() if "crossfold_width90" in r}
        if crossfold:
            top = min(crossfold, key=lambda n: crossfold[n]["crossfold_width90"])
            r = crossfold[top]
            row(f"  median width90 < 27.17 under the authors' interval protocol (best: `{top}`, "
                f"coverage {r['crossfold_coverage90']:.3f}; see the notes)", "27.17",
                r["crossfold_width90"], r["crossfold_width90"] < 27.17, 2)
        row("margin-5 ranking ≥ 0.93", "0.9205", bayes["rank_acc"], bayes["rank_acc"] >= 0.93,
            4)
    if ranked:
        top = max(ranked, key=lambda n: ranked[n]["rank_acc"])
        row(f"  margin-5 ranking ≥ 0.93, any method (best: `{top}`, MedAE "
            f"{ranked[top]['medae']:.3f}; see the Monte Carlo note)", "0.9205",
            ranked[top]["rank_acc"], ranked[top]["rank_acc"] >= 0.93, 4)
    probes = OUR_RESULTS.get("probes-all-ours", [])
    if probes:
        best = min(probes, key=lambda r: r[2]["medae"])
        row(f"5 probes, all candidates: MedAE ≤ 3.7 (best: {best[0]}, {best[1]})", "3.926",
            best[2]["medae"], best[2]["medae"] <= 3.7)
        row("  the same, non-probe cells only", "4.76", best[2]["medae_hidden"], None)
    chain = [r for r in OUR_RESULTS.get("probes-all-chain", []) if r[1] != "als-logit"]
    if chain:
        best = min(chain, key=lambda r: r[2]["medae"])
        row(f"  the authors' probe chain, a coreval completer (best: {best[1]})", "3.926",
            best[2]["medae"], best[2]["medae"] <= 3.7)
        row("  the same, non-probe cells only", "4.76", best[2]["medae_hidden"], None)
    probes = OUR_RESULTS.get("probes-allowlist-ours", [])
    if probes:
        best = min(probes, key=lambda r: r[2]["medae"])
        row(f"5 probes, allowlist: MedAE ≤ 4.3 (best: {best[0]}, {best[1]})", "4.55",
            best[2]["medae"], best[2]["medae"] <= 4.3)
        measured = [r for r in probes if np.isfinite(r[2]["rank_acc"])]
        if measured:
            best = max(measured, key=lambda r: r[2]["rank_acc"])
            row(f"5 probes, allowlist: ranking ≥ 0.87 (best: {best[0]}, {best[1]}; the "
                "authors' measure, every pair)", "0.845", best[2]["rank_acc"],
                best[2]["rank_acc"] >= 0.87)
        best = max(probes, key=lambda r: r[2]["rank_acc_hidden"])
        row(f"  the same, pairs with a hidden cell only (best: {best[0]}, {best[1]})", "—",
            best[2]["rank_acc_hidden"], None)
    chain = [r for r in OUR_RESULTS.get("probes-allowlist-chain", []) if r[1] != "als-logit"]
    if chain:
        best = min(chain, key=lambda r: r[2]["medae"])
        row(f"  the authors' allowlist chains, a coreval completer: MedAE ≤ 4.3 (best: "
            f"{best[0]}, {best[1]})", "4.55", best[2]["medae"], best[2]["medae"] <= 4.3)
        best = max(chain, key=lambda r: r[2]["rank_acc"])
        row(f"  the same, ranking ≥ 0.87 (best: {best[0]}, {best[1]}; the authors' measure, "
            "every pair)", "0.845", best[2]["rank_acc"], best[2]["rank_acc"] >= 0.87)
    temporal = OUR_RESULTS.get("temporal", [])
    # `als-logit` is the authors' method: it is the reference on the same draws, not a
    # coreval method that could beat it
    ours = [r for r in temporal if r[0] != "als-logit"]
    if ours:
        best = min(ours, key=lambda r: r[1])
        row(f"new releases, k = 5: MedAE < 5.04 (best: {best[0]})", "5.04", best[1],
            best[1] < 5.04, 2)
        best_hidden = min(ours, key=lambda r: r[2])
        row(f"  hidden cells only: < 6.53 (best: {best_hidden[0]})", "6.53", best_hidden[2],
            best_hidden[2] < 6.53, 2)
        both = [r for r in ours if r[1] < 5.04 and r[2] < 6.53]
        if both:  # one method below both of the authors' numbers
            comp, med, med_hidden = min(both, key=lambda r: r[2])
            lines.append(f"|   both with one method (best: `{comp}`; see the notes) | "
                         f"5.04 / 6.53 | {med:.2f} / {med_hidden:.2f} | yes |")
    for comp, med, med_hidden in temporal:
        if comp == "als-logit":
            row("  the authors' Bias-ALS on the same revealed draws (`als-logit`): MedAE, "
                f"hidden cells only {med_hidden:.2f}", "5.04", med, None, 2)
    for ds, goal in OTHER_GOALS.items():
        results = OUR_RESULTS.get(f"other-{ds}", [])
        if results:
            best = max(results, key=lambda r: r[1])
            row(f"{ds} R² at k = 5 ≥ {goal} (best: {best[0]})", "—", best[1], best[1] >= goal)
    return [*lines, ""]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--methods", nargs="+", default=list(METHODS), choices=list(METHODS))
    parser.add_argument("--folds", type=int, default=None, help="first N folds only")
    parser.add_argument("--n-jobs", type=int, default=1,
                        help="held-out-cell folds, probe completions and new-release families "
                             "and seeds run at once (joblib workers)")
    parser.add_argument("--out", default=None, help="markdown file (default: print)")
    parser.add_argument("--sections", nargs="+",
                        default=["cells", "probes", "temporal", "other"],
                        choices=["cells", "probes", "temporal", "other"])
    parser.add_argument("--probe-completers", nargs="+",
                        default=["als-logit", "als-logit-g7", "bayes", "bayes-metadata",
                                 "bayes-metadata-loo", "bayes-metadata-stack"],
                        choices=list(PROBE_COMPLETERS))
    parser.add_argument("--probe-sets", nargs="+", default=None,
                        help="score only these probe sets (e.g. 'BenchPress greedy "
                             "(allowlist)'; default: every set)")
    parser.add_argument("--temporal-completers", nargs="+",
                        default=["als-logit", "bayes", "bayes-metadata", "bayes-metadata-loo",
                                 "bayes-metadata-stack"],
                        choices=list(PROBE_COMPLETERS))
    parser.add_argument("--temporal-seeds", type=int, default=10,
                        help="seeds per family (the authors ran 10)")
    parser.add_argument("--cache", default=None,
                        help="folder of per-method JSON summaries (reused when present)")
    args = parser.parse_args(argv)
    global DATA_DIR
    data = DATA_DIR = Path(args.data_dir).resolve()
    os.environ["COREVAL_DATA"] = str(data)  # for the fold workers of --n-jobs
    values = load_matrix("benchpress2026", data_dir=data).values.astype(np.float64)
    folds = read_cell_folds(data / FOLD_FILE, values.shape)[: args.folds]
    command = "python benchmarks/benchpress.py " + " ".join(argv if argv is not None
                                                           else sys.argv[1:])
    lines = ["# BenchPress 2026: whole-benchmark completion on the authors' folds", "",
             *provenance(command, f" (single-threaded, {os.cpu_count()} CPU cores shared)."),
             "Matrix `benchpress2026.npz` (84 × 133, 2,604 observed cells), the authors' 30 "
             "folds of held-out cells. Reference numbers: `../shared/anchors/benchpress/`. "
             "Hyperparameters are fixed or chosen inside each fold from its training cells.", ""]
    cache = Path(args.cache) if args.cache else None
    if cache is not None and "cells" in args.sections:
        lines += ["Per-method results were computed by this script with `--cache` (one process "
                  "per method, in parallel) and this file assembled from them.", ""]
    if "cells" in args.sections:
        lines += completion_section(values, folds, args.methods, cache, args.n_jobs)
    matrix = load_matrix("benchpress2026", data_dir=data)
    if "probes" in args.sections:
        lines += probe_section(values, list(matrix.items), cache, args.probe_completers,
                               args.n_jobs, args.probe_sets)
    if "temporal" in args.sections:
        info = model_info()
        seeds = dict.fromkeys(args.temporal_completers, args.temporal_seeds)
        lines += temporal_section(values, list(matrix.models),
                                  list(info["release_date"].astype(str)), 5, seeds, cache,
                                  args.n_jobs)
    if "other" in args.sections:
        lines += other_section(data, cache)
    if cache is not None:
        lines += goals_section(cache)
    lines += NOTES
    text = "\n".join(lines)
    if args.out:
        write_markdown(args.out, text)
    print(text)


if __name__ == "__main__":
    # run as the importable module ``benchpress`` (this folder is on sys.path), so that
    # the fold workers of --n-jobs can unpickle the completers' helpers by name
    import benchpress

    benchpress.main()
