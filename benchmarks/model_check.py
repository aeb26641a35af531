"""Does the IRT methods' model check tell the user when to distrust them?

For each matrix and seed (binned split, ``--n-source`` source models, a 10 % budget),
gp-irt, metabench and irt-bayes are fitted with their defaults and their
:attr:`coreval.pipeline.FittedMethod.model_check` is recorded: the predictive check of
the item-total correlations, the method's out-of-fold RMSE on held-out source models
against a ridge regression fitted on the same folds with the same coresets, and
whether the "worse than a ridge regression" warning fired. random++ (ridge on a random
coreset) is fitted on the same split. The check is then judged against what it cannot
see: the RMSE on the target models. A warning is right when the method is worse than
random++ on the targets.

One JSON part per matrix × seed goes to ``benchmarks/results/raw/model_check/`` as it
finishes (a re-run computes only the missing parts); the report is
``benchmarks/results/model_check.md``.

Usage::

    python benchmarks/model_check.py [--datasets d1,d2] [--seeds 0,1,2] [--report-only]
                                     [--rerun metabench,...]

``--rerun`` re-computes the named methods' rows of the stored parts (after a change to
those methods) and keeps the other rows.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings
from pathlib import Path

import numpy as np

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
from coreval._atomic import write_text_atomic
from coreval.data import load_matrix
from coreval.data.splits import make_split
from coreval.jax_cache import enable_compilation_cache, release_compiled_programs
from coreval.methods import get_method
from coreval.pipeline import fit_method

RAW = RESULTS / "raw" / "model_check"
METHODS = ("gp-irt", "metabench", "irt-bayes")
BUDGET = 0.10


def run_part(name: str, seed: int, n_source: int, data_dir: Path,
             methods: tuple[str, ...] = ("random++", *METHODS)) -> list[dict]:
    """The rows of one matrix and seed: ``methods`` (the three IRT methods and random++)."""
    matrix = load_matrix(name, data_dir=data_dir)
    split = make_split(matrix, "binned", seed=seed, n_source=n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    truth = target.summary_scores()
    k = max(1, round(BUDGET * matrix.n_items))
    rows = []
    for method in methods:
        t0 = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted = fit_method(get_method(method), source, k, seed=seed)
        pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
        row = {"dataset": name, "seed": seed, "n_source": n_source, "method": method,
               "rmse": float(100 * np.sqrt(np.mean((pred.mean - truth) ** 2))),
               "warned": any("worse than a ridge regression" in str(w.message)
                             for w in caught),
               "seconds": round(time.perf_counter() - t0, 1)}
        check = fitted.model_check
        if check is not None:
            row.update({key: value for key, value in check.summary().items()
                        if key != "model"}, model=check.model)
        rows.append(row)
        release_compiled_programs()  # XLA fails once a process holds too many mappings
    return rows


def _mean(values) -> float:
    values = [v for v in values if v is not None]
    return float(np.mean(values)) if values else float("nan")


def report(rows: list[dict], command: str) -> str:
    """The markdown report: per method, the check against the targets."""
    base = {(r["dataset"], r["seed"]): r["rmse"] for r in rows if r["method"] == "random++"}
    lines = [
        "# The IRT methods' model check against the held-out targets", "",
        *provenance(command),
        f"Binned split with {sorted({r['n_source'] for r in rows})[0]} source models, seeds "
        f"{', '.join(map(str, sorted({r['seed'] for r in rows})))}, 10 % budget, each method "
        "with its defaults "
        "(`FittedMethod.model_check`, `coreval.model_check`). Per matrix: the share of "
        "seeds whose posterior (metabench: plug-in) predictive check of the item-total "
        "correlations rejects the model (p < 0.05), the mean share of items outside their "
        "90 % predictive range, the method's out-of-fold RMSE on held-out source models "
        "and that of the ridge fitted on the same folds with the same coresets (pp), how "
        "many seeds warned (the method worse than the ridge by more than one standard "
        "error), and on the target models, which the check never sees, the method's RMSE "
        "and random++'s (pp) and how many seeds the method was worse than random++ on.", "",
    ]
    for method in METHODS:
        mine = [r for r in rows if r["method"] == method]
        if not mine:
            continue
        lines += [f"## {method}", "",
                  "| matrix | seeds | model(s) | PPC rejects | outside share | out-of-fold RMSE "
                  "| ridge RMSE | warned | target RMSE | random++ | worse than random++ |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        tally = {"tp": 0, "fp": 0, "fn": 0, "tn": 0}
        for name in sorted({r["dataset"] for r in mine}):
            cell = [r for r in mine if r["dataset"] == name]
            worse = [r["rmse"] > base[(r["dataset"], r["seed"])] for r in cell]
            for r, w in zip(cell, worse, strict=True):
                tally[("t" if r["warned"] == w else "f") + ("p" if r["warned"] else "n")] += 1
            models = "; ".join(sorted({r.get("model", "—") for r in cell}))
            lines.append(
                f"| {name} | {len(cell)} | {models} | "
                f"{sum(bool(r.get('misfit')) for r in cell)}/{len(cell)} | "
                f"{_mean(r.get('ppc_outside_share') for r in cell):.2f} | "
                f"{100 * _mean(r.get('cv_rmse') for r in cell):.2f} | "
                f"{100 * _mean(r.get('ridge_rmse') for r in cell):.2f} | "
                f"{sum(r['warned'] for r in cell)}/{len(cell)} | "
                f"{_mean(r['rmse'] for r in cell):.2f} | "
                f"{_mean(base[(r['dataset'], r['seed'])] for r in cell):.2f} | "
                f"{sum(worse)}/{len(cell)} |")
        lines += ["", f"Warnings against the targets ({method}, {len(mine)} splits): "
                  f"{tally['tp']} warned and worse than random++, {tally['fp']} warned but not "
                  f"worse, {tally['fn']} worse without a warning, {tally['tn']} neither.", ""]
    lines += ["The ridge is fitted on the coreset the method chose in each fold, so the "
              "warning judges the method's predictor, not its items: a coreset that fails "
              "every predictor (metabench's Fisher items on sst2, kept with "
              "`selection=\"method\"`) is flagged by the predictive check instead; by "
              "default `selection=\"auto\"` replaces such items with random ones "
              "(`metabench.md`), which is why metabench's predictive check (of its IRT fit "
              "on all items) can reject while its prediction holds. random++ uses other "
              "(random) items, so a method can be worse than random++ on the targets "
              "without a warning.", ""]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", default=",".join((*LLM, *GLUE)))
    parser.add_argument("--seeds", default="0,1,2")
    parser.add_argument("--n-source", type=int, default=30)
    parser.add_argument("--data-dir", type=Path, default=SHARED / "data")
    parser.add_argument("--out", type=Path, default=RESULTS / "model_check.md")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--rerun", default="",
                        help="comma-separated methods whose stored rows are re-computed")
    args = parser.parse_args(argv)
    rerun = tuple(m for m in args.rerun.split(",") if m)
    datasets = args.datasets.split(",")
    seeds = [int(s) for s in args.seeds.split(",")]
    if not args.report_only:
        enable_compilation_cache()
        RAW.mkdir(parents=True, exist_ok=True)
        for name in datasets:
            for seed in seeds:
                part = RAW / f"{name}_M{args.n_source}_s{seed}.json"
                if part.exists() and rerun:
                    kept = [r for r in json.loads(part.read_text()) if r["method"] not in rerun]
                    rows = kept + run_part(name, seed, args.n_source, args.data_dir, rerun)
                elif part.exists():
                    continue
                else:
                    rows = run_part(name, seed, args.n_source, args.data_dir)
                write_text_atomic(part, json.dumps(rows))
                print(json.dumps(rows), flush=True)
    rows = [r for r in stored_rows(RAW, datasets)
            if r["seed"] in seeds and r["n_source"] == args.n_source]
    write_markdown(args.out, report(rows, command_line("model_check.py", argv)))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
