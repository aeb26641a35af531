"""irt-bayes' blend with the coreset mean: where its variance reads the model's mean score.

The blend weighs the coreset mean against the IRT prediction of the unseen items by
``λ = τ_U² / (τ_U² + v)``, ``v = s (1 − s) f`` (:func:`coreval.prediction.irt_bayes.blend_shift`).
``blend_variance="coreset"`` (the default) takes ``s`` from the coreset's answers
(Jeffreys' estimate), ``"prediction"`` from the IRT prediction that the blend checks.
This script fits ``irt-bayes`` both ways on the same binned splits (budget 10 %, every
other option at its default, the IRT model chosen per run) and reports, on the target
models, the RMSE, the coverage and mean width of the 90 % interval, and beside them the
RMSE of the coreset's own mean (the same items read with the sample mean).

Run from the repository root::

    python benchmarks/irt_bayes_blend_variance.py --variant coreset --seeds 0 1
    python benchmarks/irt_bayes_blend_variance.py --variant prediction --seeds 0 1
    python benchmarks/irt_bayes_blend_variance.py --report-only

The results file names the commands that made its stored splits.

Each (dataset, seed, variant) is stored in ``benchmarks/results/raw/irt_bayes_blend_variance/``
as it finishes, so an interrupted run resumes and the two variants can run as two
processes.
"""

from __future__ import annotations

import argparse
import json
import os
import time
import warnings

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np

from _results import LLM, RESULTS, SHARED, provenance, write_markdown

RAW = RESULTS / "raw" / "irt_bayes_blend_variance"
VARIANTS = ("coreset", "prediction")
BUDGET = 0.10


def run_split(name: str, matrix, n_source: int, seed: int, variant: str) -> dict:
    """irt-bayes with ``blend_variance=variant`` on one binned split."""
    from coreval.base import FitCache, resolve_budget
    from coreval.data.splits import make_split
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    split = make_split(matrix, "binned", seed=seed, n_source=n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = fit_method(get_method("irt-bayes"), source, resolve_budget(BUDGET, matrix.n_items),
                            seed=seed, cache=FitCache(), blend_variance=variant)
    seconds = time.perf_counter() - t0
    x = target.values[:, fitted.coreset.indices]
    pred = fitted.predict_array(x)
    truth = target.summary_scores()
    spec = fitted.predictor.irt_spec_
    return {"d": name, "s": seed, "variant": variant, "n_source": n_source,
            "rmse": float(np.sqrt(np.mean((pred.mean - truth) ** 2))),
            "cov": float(np.mean((pred.lower <= truth) & (truth <= pred.upper))),
            "width": float(np.mean(pred.upper - pred.lower)),
            "mean_rmse": float(np.sqrt(np.nanmean((np.nanmean(x, axis=1) - truth) ** 2))),
            "tau2": float(fitted.predictor.blend_tau2_), "tau": float(fitted.predictor.tau_),
            "spec": f"{spec.model}{spec.dims}", "sec": seconds}


def stored() -> list[dict]:
    """Every stored split."""
    return [json.loads(p.read_text()) for p in sorted(RAW.glob("*.json"))]


def commands(rows: list[dict]) -> list[str]:
    """The command lines that make the stored splits: per variant, one per set of seeds."""
    out = []
    for v in VARIANTS:
        seeds: dict[str, list[int]] = {}
        for r in rows:
            if r["variant"] == v:
                seeds.setdefault(r["d"], []).append(r["s"])
        by_seeds: dict[tuple, list[str]] = {}
        for d in LLM:
            if d in seeds:
                by_seeds.setdefault(tuple(sorted(seeds[d])), []).append(d)
        for group, names in by_seeds.items():
            which = "" if names == list(LLM) else f" --datasets {' '.join(names)}"
            out.append(f"python benchmarks/irt_bayes_blend_variance.py --variant {v}{which} "
                       f"--seeds {' '.join(map(str, group))}")
    return out


def report(rows: list[dict]) -> str:
    """Per dataset (mean over seeds) and σ⁻¹-aggregated over the datasets of every split
    that both variants finished."""
    from coreval.data.io import load_matrix
    from coreval.harness.metrics import score_sigma, sigma_weighted

    by = {(r["d"], r["s"], r["variant"]): r for r in rows}
    pairs = sorted({(d, s) for d, s, _ in by if all((d, s, v) in by for v in VARIANTS)})
    datasets = [d for d in LLM if any(p[0] == d for p in pairs)]
    sigmas = {d: score_sigma(load_matrix(d, data_dir=SHARED / "data").summary_scores())
              for d in datasets}
    lines = ["# irt-bayes: the blend's variance from the coreset or from the prediction", "",
             *provenance(commands(rows)[0], "".join(f", `{c}`" for c in commands(rows)[1:])),
             "Binned split, M = 30 source models, budget 10 %, `irt-bayes` with every other "
             "option at its default (the IRT model and dimensions chosen per run). "
             "`coreset`: the blend's `v = s (1 − s) f` with `s` the coreset's Jeffreys "
             "estimate of the model's mean score (the default); `prediction`: `s` the IRT "
             "prediction. RMSE and mean width90 in pp, on the target models; `sample mean`: "
             "the RMSE of the same coreset read with its plain mean; `model`: the IRT "
             "model chosen in each split. Per dataset: means over the seeds listed. The "
             "variants differ only in the blend's weight, so a split where both choose the "
             "same IRT model differs only through it; where the choice of the model (by the "
             "out-of-fold RMSE, which includes the blend) differs, the whole fit does.", "",
             "| dataset | seeds | variant | rmse | coverage90 | width90 | sample mean | model |",
             "|---|---|---|---|---|---|---|---|"]
    per = {v: {} for v in VARIANTS}
    for d in datasets:
        seeds = [s for dd, s in pairs if dd == d]
        for v in VARIANTS:
            sub = [by[(d, s, v)] for s in seeds]
            per[v][d] = {k: float(np.mean([r[k] for r in sub])) for k in
                         ("rmse", "cov", "width", "mean_rmse")}
            m = per[v][d]
            lines.append(f"| {d} | {', '.join(map(str, seeds))} | {v} | {100 * m['rmse']:.2f} | "
                         f"{m['cov']:.2f} | {100 * m['width']:.1f} | {100 * m['mean_rmse']:.2f} | "
                         f"{', '.join(r['spec'] for r in sub)} |")
    lines += ["", "σ⁻¹-aggregated over the datasets above (mRMR paper, Eqs. 25-27):", "",
              "| variant | rmse | coverage90 | width90 | sample mean |", "|---|---|---|---|---|"]
    for v in VARIANTS:
        agg = {k: sigma_weighted({d: per[v][d][k] for d in datasets}, sigmas)
               for k in ("rmse", "cov", "width", "mean_rmse")}
        lines.append(f"| {v} | {100 * agg['rmse']:.2f} | {agg['cov']:.3f} | "
                     f"{100 * agg['width']:.1f} | {100 * agg['mean_rmse']:.2f} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    from coreval._atomic import write_text_atomic
    from coreval.data.io import load_matrix

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=VARIANTS, default="coreset")
    parser.add_argument("--datasets", nargs="+", default=list(LLM))
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--n-source", type=int, default=30)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.report_only:
        RAW.mkdir(parents=True, exist_ok=True)
        for name in args.datasets:
            matrix = load_matrix(name, data_dir=SHARED / "data")
            for seed in args.seeds:
                path = RAW / f"{name}_M{args.n_source}_seed{seed}_{args.variant}.json"
                if path.exists():
                    continue
                row = run_split(name, matrix, args.n_source, seed, args.variant)
                write_text_atomic(path, json.dumps(row))
                print(json.dumps(row), flush=True)
    out = RESULTS / "irt_bayes_blend_variance.md"
    write_markdown(out, report(stored()))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
