"""metabench as published and with the default random-coreset check, at small M.

metabench (Kipnis et al. 2025) chooses its items by Fisher information of a 2PL fitted
on the source models and predicts the full score with a GAM of (θ̂, coreset mean). For
each binned split (M source models, a budget of 5, 10 or 15 % of the items) it is fitted
as published
(``selection="method"``) and with the default check (``selection="auto"``: the Fisher
coreset against random items under the same GAM, out of fold on the source models,
:func:`coreval.pipeline.random_is_better`). random++ (kernel ridge on random items) is
fitted on the same split as the reference of the robustness goal (≤ 1.3 × its RMSE).
Both metabench fits share one :class:`coreval.base.FitCache`, so the check re-uses the
IRT fits of the folds.

Run from the repository root::

    python benchmarks/metabench.py

One JSON part per (matrix, M, budget, seed) goes to ``benchmarks/results/raw/metabench/`` as it
finishes (a re-run computes only the missing parts); the report is
``benchmarks/results/metabench.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from _results import (
    GLUE,
    LLM,
    RESULTS,
    SHARED,
    command_line,
    provenance,
    stored_rows,
    write_markdown,
)

RAW = RESULTS / "raw" / "metabench"
BUDGETS = (0.05, 0.10, 0.15)
#: ``(method, selection)`` fitted on every split.
FITS = (("random++", "method"), ("metabench", "method"), ("metabench", "auto"))


def run_split(name: str, matrix, n_source: int, budget: float, seed: int) -> list[dict]:
    """The rows of :data:`FITS` on one binned split at one budget."""
    from coreval.base import FitCache, resolve_budget
    from coreval.data.splits import make_split
    from coreval.jax_cache import release_compiled_programs
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    split = make_split(matrix, "binned", seed=seed, n_source=n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    k = resolve_budget(budget, matrix.n_items)
    truth = target.summary_scores()
    cache = FitCache()
    rows = []
    for method, selection in FITS:
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = fit_method(get_method(method), source, k, seed=seed, cache=cache,
                                selection=selection)
        seconds = time.perf_counter() - t0
        pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
        inside = (truth >= pred.lower) & (truth <= pred.upper)
        rows.append({"dataset": name, "n_source": n_source, "budget": budget, "seed": seed,
                     "k": k,
                     "method": method, "selection": selection, "used": fitted.selection,
                     "rmse": 100 * float(np.sqrt(np.mean((pred.mean - truth) ** 2))),
                     "kendall": float(kendalltau(pred.mean, truth).statistic),
                     "coverage": float(np.mean(inside)),
                     "width": 100 * float(np.median(pred.upper - pred.lower)),
                     "oof_method": (fitted.selection_rmse or {}).get("method"),
                     "oof_random": (fitted.selection_rmse or {}).get("random"),
                     "seconds": seconds})
        release_compiled_programs()  # XLA fails once a process holds too many mappings
    return rows


def _fmt(value: float, digits: int = 2) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def _summary(part: pd.DataFrame, sigmas: dict[str, float]) -> dict[str, float]:
    """σ⁻¹-aggregated RMSE and mean τ / coverage over the LLM matrices, and the largest
    GLUE ratio to random++, of one (M, budget) setting."""
    from coreval.harness.metrics import sigma_weighted

    fits = {"ref": part[part["method"] == "random++"],
            "pub": part[(part["method"] == "metabench") & (part["selection"] == "method")],
            "chk": part[(part["method"] == "metabench") & (part["selection"] == "auto")]}
    llm = [d for d in LLM if d in set(part["dataset"])]
    out: dict[str, float] = {"llm": len(llm)}
    for label, x in fits.items():
        sub = x[x["dataset"].isin(llm)]
        out[f"{label}_rmse"] = sigma_weighted(sub.groupby("dataset")["rmse"].mean().to_dict(),
                                              sigmas) if llm else np.nan
        out[f"{label}_tau"] = sub.groupby("dataset")["kendall"].mean().mean()
        out[f"{label}_cov"] = sub["coverage"].mean()
        for name in GLUE:
            if name in set(part["dataset"]):
                out[f"{label}_{name}"] = (x[x["dataset"] == name]["rmse"].mean()
                                          / fits["ref"][fits["ref"]["dataset"] == name][
                                              "rmse"].mean())
    chk = fits["chk"]
    out["switched"] = f"{int((chk['used'] == 'random').sum())} / {len(chk)}"
    return out


def report(df: pd.DataFrame, sigmas: dict[str, float], command: str) -> str:
    """The markdown of ``metabench.md``."""
    seeds = ", ".join(map(str, sorted(df["seed"].unique())))
    lines = [
        "# metabench: as published and with the random-coreset check", "",
        *provenance(command),
        f"Binned split, seeds {seeds}; metrics on the target "
        "models (all models not among the M sources). metabench = Fisher information per "
        "ability-quantile bin of a 2PL fitted on the source models, then a GAM of (θ̂ on "
        "the coreset, coreset mean) with its penalty chosen by GCV and its interval by the "
        "default calibration. *published*: `selection=\"method\"`; *checked*: the default "
        "`selection=\"auto\"`, where the same GAM on random items of the same number "
        "predicts held-out source models on the same folds and is used only when its "
        "squared errors are lower by more than one standard error of the paired "
        "difference (`coreval.pipeline.random_is_better`). random++ (kernel ridge on "
        "random items) runs on the same split. RMSE and width in pp; `switched` counts the "
        "splits where the check used random items; seconds: median wall time of one fit, "
        "calibration included (the checked fit re-uses the published fit's IRT fits).", "",
        "## Summary", "",
        "The 8 LLM matrices σ⁻¹-aggregated (mRMR paper, Eqs. 25-27; τ and coverage90: "
        "means); mrpc and sst2: RMSE / random++'s on the same splits (goal ≤ 1.3).", "",
        "| M | budget | random++ RMSE | published RMSE | checked RMSE | published τ | "
        "checked τ | random++ τ | published coverage90 | checked coverage90 | mrpc "
        "published / checked | sst2 published / checked | switched |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for (n_source, budget), part in df.groupby(["n_source", "budget"]):
        r = _summary(part, sigmas)
        glue = [f"{_fmt(r.get(f'pub_{g}'))} / {_fmt(r.get(f'chk_{g}'))}" for g in GLUE]
        lines.append(
            f"| {n_source} | {100 * budget:g} % | {_fmt(r['ref_rmse'])} | "
            f"{_fmt(r['pub_rmse'])} | {_fmt(r['chk_rmse'])} | {_fmt(r['pub_tau'], 3)} | "
            f"{_fmt(r['chk_tau'], 3)} | {_fmt(r['ref_tau'], 3)} | {_fmt(r['pub_cov'])} | "
            f"{_fmt(r['chk_cov'])} | {' | '.join(glue)} | {r['switched']} |")
    lines.append("")
    for (n_source, budget), part in df.groupby(["n_source", "budget"]):
        pub = part[(part["method"] == "metabench") & (part["selection"] == "method")]
        chk = part[(part["method"] == "metabench") & (part["selection"] == "auto")]
        ref = part[part["method"] == "random++"]
        lines += [f"## M = {n_source}, budget {100 * budget:g} %", "",
                  "| matrix | random++ | published | ratio | checked | ratio | switched | "
                  "coverage90 published / checked | width90 published / checked |",
                  "|---|---|---|---|---|---|---|---|---|"]
        for name in sorted(part["dataset"].unique()):
            b, p, c = (x[x["dataset"] == name] for x in (ref, pub, chk))
            base = b["rmse"].mean()
            lines.append(
                f"| {name} | {base:.2f} | {p['rmse'].mean():.2f} | "
                f"{p['rmse'].mean() / base:.2f} | {c['rmse'].mean():.2f} | "
                f"{c['rmse'].mean() / base:.2f} | {int((c['used'] == 'random').sum())} / "
                f"{len(c)} | {p['coverage'].mean():.2f} / {c['coverage'].mean():.2f} | "
                f"{p['width'].mean():.1f} / {c['width'].mean():.1f} |")
        lines += ["", f"Median seconds: published {pub['seconds'].median():.1f}, checked "
                  f"{chk['seconds'].median():.1f}.", ""]
    lines += ["## Every split", "",
              "| M | budget | matrix | seed | k | published | checked | used | OOF RMSE "
              "Fisher / random |", "|---|---|---|---|---|---|---|---|---|"]
    mb = df[df["method"] == "metabench"]
    for (n_source, budget, name, seed), part in mb.groupby(
            ["n_source", "budget", "dataset", "seed"]):
        p = part[part["selection"] == "method"].iloc[0]
        c = part[part["selection"] == "auto"].iloc[0]
        lines.append(f"| {n_source} | {100 * budget:g} % | {name} | {seed} | {c['k']} | "
                     f"{p['rmse']:.2f} | {c['rmse']:.2f} | {c['used']} | "
                     f"{_fmt(c['oof_method'])} / {_fmt(c['oof_random'])} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from coreval._atomic import write_text_atomic
    from coreval.data.io import load_matrix
    from coreval.harness.summary import dataset_sigmas
    from coreval.jax_cache import enable_compilation_cache

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED / "data")
    parser.add_argument("--datasets", nargs="+", default=[*LLM, *GLUE])
    parser.add_argument("--n-source", nargs="+", type=int, default=[15, 30, 50])
    parser.add_argument("--budgets", nargs="+", type=float, default=list(BUDGETS))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    RAW.mkdir(parents=True, exist_ok=True)
    matrices = {name: load_matrix(name, data_dir=args.data_dir) for name in args.datasets}
    if not args.report_only:
        enable_compilation_cache()
    for budget in args.budgets:
        for n_source in args.n_source:
            for name, matrix in matrices.items():
                for seed in args.seeds:
                    part = RAW / f"{name}_M{n_source}_b{round(100 * budget)}_s{seed}.json"
                    if args.report_only or part.exists():
                        continue
                    rows = run_split(name, matrix, n_source, budget, seed)
                    write_text_atomic(part, json.dumps(rows))
                    print(f"{name} M {n_source} budget {budget} seed {seed} done", flush=True)
    df = pd.DataFrame(stored_rows(RAW, matrices))
    df = df[df["n_source"].isin(args.n_source) & df["seed"].isin(args.seeds)
            & df["budget"].isin(args.budgets)]
    text = report(df, dataset_sigmas(matrices), command_line("metabench.py", argv))
    print(write_markdown(RESULTS / "metabench.md", text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
