"""metabench as published and with the default random-coreset check, at small M.

metabench (Kipnis et al. 2025) chooses its items by Fisher information of a 2PL fitted
on the source models and predicts the full score with a GAM of (θ̂, coreset mean). For
each binned split (M source models, a 10 % budget) it is fitted as published
(``selection="method"``) and with the default check (``selection="auto"``: the Fisher
coreset against random items under the same GAM, out of fold on the source models,
:func:`coreval.pipeline.random_is_better`). random++ (kernel ridge on random items) is
fitted on the same split as the reference of the robustness goal (≤ 1.3 × its RMSE).
Both metabench fits share one :class:`coreval.base.FitCache`, so the check re-uses the
IRT fits of the folds.

Run from the repository root::

    python benchmarks/metabench.py

One JSON part per (matrix, M, seed) goes to ``benchmarks/results/raw/metabench/`` as it
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
BUDGET = 0.10
#: ``(method, selection)`` fitted on every split.
FITS = (("random++", "method"), ("metabench", "method"), ("metabench", "auto"))


def run_split(name: str, matrix, n_source: int, seed: int) -> list[dict]:
    """The rows of :data:`FITS` on one binned split."""
    from coreval.base import FitCache, resolve_budget
    from coreval.data.splits import make_split
    from coreval.jax_cache import release_compiled_programs
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    split = make_split(matrix, "binned", seed=seed, n_source=n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    k = resolve_budget(BUDGET, matrix.n_items)
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
        rows.append({"dataset": name, "n_source": n_source, "seed": seed, "k": k,
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


def report(df: pd.DataFrame, sigmas: dict[str, float], command: str) -> str:
    """The markdown of ``metabench.md``."""
    from coreval.harness.metrics import sigma_weighted

    seeds = ", ".join(map(str, sorted(df["seed"].unique())))
    lines = [
        "# metabench: as published and with the random-coreset check", "",
        *provenance(command),
        f"Binned split, budget {100 * BUDGET:g} %, seeds {seeds}; metrics on the target "
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
        "calibration included (the checked fit re-uses the published fit's IRT fits).", ""]
    for n_source, part in df.groupby("n_source"):
        pub = part[(part["method"] == "metabench") & (part["selection"] == "method")]
        chk = part[(part["method"] == "metabench") & (part["selection"] == "auto")]
        ref = part[part["method"] == "random++"]
        lines += [f"## M = {n_source}", "",
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
        llm = [d for d in LLM if d in set(part["dataset"])]
        if llm:
            agg = {label: sigma_weighted(
                       x[x["dataset"].isin(llm)].groupby("dataset")[col].mean().to_dict(),
                       sigmas)
                   for label, x in (("ref", ref), ("pub", pub), ("chk", chk))
                   for col in ("rmse",)}
            tau = {label: x[x["dataset"].isin(llm)].groupby("dataset")["kendall"].mean().mean()
                   for label, x in (("ref", ref), ("pub", pub), ("chk", chk))}
            cover = {label: x[x["dataset"].isin(llm)]["coverage"].mean()
                     for label, x in (("pub", pub), ("chk", chk))}
            lines += ["", f"The {len(llm)} LLM matrices, σ⁻¹-aggregated RMSE (mean τ): "
                      f"random++ {agg['ref']:.2f} ({tau['ref']:.3f}), published "
                      f"{agg['pub']:.2f} ({tau['pub']:.3f}), checked {agg['chk']:.2f} "
                      f"({tau['chk']:.3f}); mean coverage90 published {cover['pub']:.2f}, "
                      f"checked {cover['chk']:.2f}. Median seconds: published "
                      f"{pub['seconds'].median():.1f}, checked {chk['seconds'].median():.1f}."]
        glue = [d for d in GLUE if d in set(part["dataset"])]
        if glue:
            worst = max((chk[chk["dataset"] == d]["rmse"].mean()
                         / ref[ref["dataset"] == d]["rmse"].mean(), d) for d in glue)
            lines += ["", f"Robustness goal (≤ 1.3 × random++ on {' and '.join(glue)}): the "
                      f"checked metabench's largest ratio is {worst[0]:.2f} ({worst[1]})."]
        lines.append("")
    lines += ["## Every split", "",
              "| M | matrix | seed | k | published | checked | used | OOF RMSE Fisher / "
              "random |", "|---|---|---|---|---|---|---|---|"]
    mb = df[df["method"] == "metabench"]
    for (n_source, name, seed), part in mb.groupby(["n_source", "dataset", "seed"]):
        p = part[part["selection"] == "method"].iloc[0]
        c = part[part["selection"] == "auto"].iloc[0]
        lines.append(f"| {n_source} | {name} | {seed} | {c['k']} | {p['rmse']:.2f} | "
                     f"{c['rmse']:.2f} | {c['used']} | {_fmt(c['oof_method'])} / "
                     f"{_fmt(c['oof_random'])} |")
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
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    RAW.mkdir(parents=True, exist_ok=True)
    matrices = {name: load_matrix(name, data_dir=args.data_dir) for name in args.datasets}
    if not args.report_only:
        enable_compilation_cache()
    for n_source in args.n_source:
        for name, matrix in matrices.items():
            for seed in args.seeds:
                part = RAW / f"{name}_M{n_source}_s{seed}.json"
                if args.report_only or part.exists():
                    continue
                write_text_atomic(part, json.dumps(run_split(name, matrix, n_source, seed)))
                print(f"{name} M {n_source} seed {seed} done", flush=True)
    df = pd.DataFrame(stored_rows(RAW, matrices))
    df = df[df["n_source"].isin(args.n_source) & df["seed"].isin(args.seeds)]
    text = report(df, dataset_sigmas(matrices), command_line("metabench.py", argv))
    print(write_markdown(RESULTS / "metabench.md", text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
