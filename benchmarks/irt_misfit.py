"""irt-bayes under misfit: the prior families of the D = 1 discriminations, against random++.

For each matrix and seed: a binned split with 30 source models, a 10 % coreset, and
irt-bayes fitted once per configuration (``--configs``: ``hierarchical``, the
positive-truncated D = 1 fit; ``signed``, signed D = 1 discriminations,
:mod:`coreval.irt.priors`; ``signed-2d``, the same with two latent dimensions; ``default``,
irt-bayes as registered: the hierarchical fit with D = 1 or 2 chosen per run by the
out-of-fold RMSE on the source models, ``choose_dims``) and random++ on the same
split. ``--auto-from-rows`` adds ``default`` rows without refitting, taking per
matrix and seed the ``hierarchical`` or ``signed-2d`` row with the lower
``cv_rmse_``: the choice ``choose_dims`` makes from the same fits (with D = 2 the
two prior families are the same model, :mod:`coreval.irt.priors`). Rows (one per matrix × seed × method) go to a JSON file as they finish;
``--table`` renders the markdown table (RMSE in pp and coverage of the 90 % interval,
averaged over seeds).

Usage::

    python benchmarks/irt_misfit.py --out benchmarks/results/irt_misfit.json
    python benchmarks/irt_misfit.py --matrices mrpc sst2 --configs signed \
        --out benchmarks/results/irt_misfit.json
    python benchmarks/irt_misfit.py --out benchmarks/results/irt_misfit.json --table
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

LLM = ("arc_challenge", "ifeval", "openllm_math", "commonsense", "gsm", "math", "med_qa", "mmlu")
GLUE = ("mrpc", "sst2")


CONFIGS = {"hierarchical": {"priors": "hierarchical", "choose_dims": False},
           "signed": {"priors": "signed", "choose_dims": False},
           "signed-2d": {"priors": "signed", "dims": 2},
           "default": {}}


def run_one(name: str, seed: int, configs: list[str], data_dir: str, n_source: int,
            budget: float, done: set) -> list[dict]:
    from coreval.data import load_matrix
    from coreval.data.splits import make_split
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = load_matrix(name, data_dir=data_dir)
    source, target = make_split(m, "binned", seed=seed, n_source=n_source).apply(m)
    k = round(budget * m.n_items)
    truth = target.summary_scores()
    rows = []
    runs = [(f"irt-bayes[{c}]", "irt-bayes", CONFIGS[c]) for c in configs]
    runs.append(("random++", "random++", {}))
    for label, method, opts in runs:
        if (name, seed, label) in done:
            continue
        t0 = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fm = fit_method(get_method(method), source, k, seed=seed, **opts)
            pred = fm.predict_array(target.values[:, fm.coreset.indices])
        err = pred.mean - truth
        covered = (truth >= pred.lower) & (truth <= pred.upper)
        row = {"matrix": name, "seed": seed, "method": label, "k": k,
               "rmse_pp": float(100 * np.sqrt(np.mean(err ** 2))),
               "coverage": float(np.mean(covered)) if np.isfinite(pred.lower).all() else None,
               "seconds": round(time.time() - t0, 1)}
        predictor = getattr(fm, "predictor", None)
        for attr in ("tau_", "cv_rmse_", "ridge_cv_rmse_"):
            value = getattr(predictor, attr, None)
            if value is not None:
                row[attr] = float(value)
        ppc = getattr(predictor, "ppc_", None)
        if ppc is not None:
            row["ppc_outside_share"] = float(ppc.outside_share)
        row["misfit_warning"] = any("worse than a ridge regression" in str(w.message)
                                    for w in caught)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def auto_rows(rows: list[dict]) -> list[dict]:
    """``default`` rows: per matrix and seed the fit with the lower out-of-fold RMSE."""
    out = []
    for key in sorted({(r["matrix"], r["seed"]) for r in rows}):
        pair = {r["method"]: r for r in rows if (r["matrix"], r["seed"]) == key}
        one, two = pair.get("irt-bayes[hierarchical]"), pair.get("irt-bayes[signed-2d]")
        if one is None or two is None or "cv_rmse_" not in one or "cv_rmse_" not in two:
            continue
        pick = two if two["cv_rmse_"] < one["cv_rmse_"] else one
        out.append(dict(pick, method="irt-bayes[default]",
                        dims=2 if pick is two else 1, derived=True))
    return out


def table(rows: list[dict]) -> str:
    methods = list(dict.fromkeys(r["method"] for r in rows))
    matrices = [m for m in (*LLM, *GLUE) if any(r["matrix"] == m for r in rows)]
    head = "| matrix | " + " | ".join(f"{m} RMSE | {m} cov" for m in methods) + " |"
    lines = [head, "|" + "---|" * (1 + 2 * len(methods))]
    for name in matrices:
        cells = []
        for method in methods:
            sel = [r for r in rows if r["matrix"] == name and r["method"] == method]
            rmse = np.mean([r["rmse_pp"] for r in sel])
            covs = [r["coverage"] for r in sel if r["coverage"] is not None]
            cov = f"{np.mean(covs):.2f}" if covs else "–"
            cells += [f"{rmse:.2f}", cov]
        seeds = sorted({r["seed"] for r in rows if r["matrix"] == name})
        lines.append(f"| {name} (seeds {','.join(map(str, seeds))}) | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--matrices", nargs="+", default=[*GLUE, *LLM])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--configs", nargs="+", default=["hierarchical", "signed-2d"],
                        choices=sorted(CONFIGS))
    parser.add_argument("--data-dir", default="../shared/data")
    parser.add_argument("--n-source", type=int, default=30)
    parser.add_argument("--budget", type=float, default=0.1)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/irt_misfit.json"))
    parser.add_argument("--table", action="store_true", help="print the table of --out and exit")
    parser.add_argument("--auto-from-rows", action="store_true",
                        help="derive default rows from the hierarchical and signed-2d rows")
    args = parser.parse_args()
    if args.table:
        print(table(json.loads(args.out.read_text())))
        return
    if args.auto_from_rows:
        rows = json.loads(args.out.read_text())
        rows = [r for r in rows if not r.get("derived")] + auto_rows(rows)
        args.out.write_text(json.dumps(rows, indent=1))
        print(table(rows))
        return
    rows = json.loads(args.out.read_text()) if args.out.exists() else []
    done = {(r["matrix"], r["seed"], r["method"]) for r in rows}
    for name in args.matrices:
        for seed in args.seeds:
            rows += run_one(name, seed, args.configs, args.data_dir, args.n_source, args.budget,
                            done)
            args.out.write_text(json.dumps(rows, indent=1))
    print(table(rows))


if __name__ == "__main__":
    main()
