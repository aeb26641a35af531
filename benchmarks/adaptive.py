"""Adaptive testing vs static coresets on the same splits (Open LLM Leaderboard v2 matrices).

For each dataset and seed: a random split with ``--n-source`` source models (all other
models are targets). The IRT model (coreval's irt-bayes fit: 2PL, SVI, hierarchical
priors) is fitted once on the source models; every target model then takes an adaptive
test that answers from its recorded row:

* ``cat-score``, ``cat-fisher``, ``cat-kl``: the rules of :mod:`coreval.adaptive.select`,
  stopped at the budget's number of items;
* ``cat-random``: random items with the same posterior estimate (a static random sample);
* ``cat-score@width`` and ``cat-random@width``: stopped when the 90 % interval of the full
  score is at most ``--width`` wide (items used reported).

The static methods (``--static``) run through :func:`coreval.pipeline.fit_method` on the same
split and budget. Reported per dataset × budget: RMSE (pp), Kendall τ with the true
scores, 90 % coverage and the ratio of the best adaptive RMSE to the best static one.
The speed section times :func:`coreval.adaptive.next_items` on a 1000-item bank (50
item-parameter draws), one thread.

Usage (one results file per dataset, as committed)::

    python benchmarks/adaptive.py --datasets arc_challenge --seeds 0 --budgets 0.02 0.05 \
        --out benchmarks/results/adaptive_arc_challenge.md
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from _results import provenance, write_markdown

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("COREVAL_SHARED_DIR", REPO.parent / "shared"))


def _random_rule(state):
    return np.random.default_rng([state.n_asked, int(state.responses.sum())]).random(
        len(state.unasked))


def adaptive_rows(bank, target, k, rules, width, seed, width_targets):
    from coreval.adaptive import AdaptiveTest, any_of, max_items, score_width

    truth = target.summary_scores()
    rows = []
    runs = [(name, rule, max_items(k)) for name, rule in rules.items()]
    if width:
        cap = max(k, bank.n_items // 2)
        runs += [(f"{name}@width", rule, any_of(score_width(width), max_items(cap)))
                 for name, rule in rules.items() if name in ("cat-score", "cat-random")]
    for name, rule, stop in runs:
        means, lowers, uppers, used = [], [], [], []
        t0 = time.perf_counter()
        n_rows = width_targets if "@" in name else target.n_models
        for j, row in enumerate(target.values[:n_rows]):
            exposure = (~np.isnan(row)).astype(float)  # never ask an unanswered item
            test = AdaptiveTest(bank, rule=rule, stop=stop, exposure=exposure, seed=seed + j)
            pred = test.run(lambda items, row=row: row[bank.positions(items)])
            means.append(pred.mean[0])
            lowers.append(pred.lower[0])
            uppers.append(pred.upper[0])
            used.append(test.state.n_asked)
        rows.append(_metrics(name, truth[:len(means)], means, lowers, uppers, np.mean(used),
                             time.perf_counter() - t0))
    return rows


def _metrics(name, truth, mean, lower, upper, items, seconds):
    mean, lower, upper = (np.asarray(v, dtype=float) for v in (mean, lower, upper))
    return {"method": name, "rmse_pp": 100 * float(np.sqrt(np.mean((mean - truth) ** 2))),
            "tau": float(kendalltau(mean, truth)[0]),
            "coverage90": float(np.mean((truth >= lower) & (truth <= upper))),
            "width90_pp": 100 * float(np.mean(upper - lower)), "items": float(items),
            "seconds": seconds}


def static_rows(source, target, k, methods, seed, cache):
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    truth = target.summary_scores()
    rows = []
    for name in methods:
        t0 = time.perf_counter()
        fitted = fit_method(get_method(name), source, k, seed=seed, cache=cache)
        pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
        rows.append(_metrics(name, truth, pred.mean, pred.lower, pred.upper, k,
                             time.perf_counter() - t0))
    return rows


def speed(n_items: int = 1000, n_draws: int = 50, steps: int = 30) -> list[dict]:
    from coreval.adaptive import ItemBank, init, next_items, update

    rng = np.random.default_rng(0)
    bank = ItemBank(items=[str(i) for i in range(n_items)],
                    a=rng.lognormal(0.0, 0.3, (n_draws, n_items)),
                    d=rng.normal(0.0, 1.0, (n_draws, n_items)))
    out = []
    for rule in ("score", "fisher", "kl"):
        state, times = init(bank), []
        next_items(state, rule)  # the prior's criterion is computed once per bank
        for _ in range(steps):
            t0 = time.perf_counter()
            item = next_items(state, rule)
            times.append(time.perf_counter() - t0)
            state = update(state, item, [float(rng.random() < 0.5)])
        out.append({"rule": rule, "median_ms": 1e3 * float(np.median(times)),
                    "max_ms": 1e3 * float(np.max(times))})
    return out


def main(argv: list[str] | None = None) -> int:
    from coreval.adaptive import ItemBank
    from coreval.base import FitCache, resolve_budget
    from coreval.data.io import load_matrix
    from coreval.data.splits import make_split
    from coreval.irt.source_fit import BAYES_FIT, fit_source_irt

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["arc_challenge", "ifeval", "openllm_math"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--budgets", nargs="+", type=float, default=[0.02, 0.05])
    parser.add_argument("--n-source", type=int, default=100)
    parser.add_argument("--static", nargs="+", default=["random++", "mrmr++", "irt-bayes"])
    parser.add_argument("--width", type=float, default=0.04)
    parser.add_argument("--width-targets", type=int, default=30,
                        help="targets of each split that run the width-stopped tests (the "
                        "first ones; those tests ask up to half the bank)")
    parser.add_argument("--out", default=str(REPO / "benchmarks" / "results" / "adaptive.md"),
                        help="results file (markdown)")
    args = parser.parse_args(argv)
    command = "python " + " ".join(shlex.quote(a) for a in
                                   [os.path.relpath(__file__, REPO), *(argv or sys.argv[1:])])
    rules = {"cat-score": "score", "cat-fisher": "fisher", "cat-kl": "kl",
             "cat-random": _random_rule}
    rows = []
    for name in args.datasets:
        matrix = load_matrix(name, data_dir=SHARED / "data")
        for seed in args.seeds:
            split = make_split(matrix, "random", seed=seed, n_source=args.n_source)
            source, target = matrix.take(split.source), matrix.take(split.target)
            cache = FitCache()
            irt_fit = fit_source_irt(source, BAYES_FIT, seed=seed, cache=cache,
                                     show_progress=False)
            bank = ItemBank.from_fit(irt_fit, source)
            for i, budget in enumerate(args.budgets):
                k = resolve_budget(budget, matrix.n_items)
                cell = {"dataset": name, "seed": seed, "budget": budget, "k": k}
                found = static_rows(source, target, k, args.static, seed, cache) + \
                    adaptive_rows(bank, target, k, rules, args.width if i == 0 else 0, seed,
                                  args.width_targets)
                rows += [{**cell, **r} for r in found]
                print(f"{name} seed {seed} budget {budget}: done", flush=True)
    table = pd.DataFrame(rows)
    timing = pd.DataFrame(speed())
    write_markdown(Path(args.out), to_markdown(table, timing, args, command))
    print(f"wrote {args.out}")
    return 0


def to_markdown(table: pd.DataFrame, timing: pd.DataFrame, args, command: str) -> str:
    mean = table.groupby(["dataset", "budget", "k", "method"], sort=False)[
        ["rmse_pp", "tau", "coverage90", "width90_pp", "items", "seconds"]].mean().reset_index()
    lines = ["# Adaptive testing vs static coresets", "", *provenance(command),
             f"Random splits with {args.n_source} source models, all other models targets; "
             f"seeds {args.seeds}. Adaptive tests answer from each target's recorded row. "
             "RMSE and width in percentage points of the full score; `items` is the mean "
             "number of items asked (the budget k, or what the width stop needed). The "
             f"`@width` rows stop at a {100 * args.width:g} pp wide 90 % interval (or half "
             f"the bank) and run on the first {args.width_targets} targets only.", ""]
    for (dataset, budget, k), df in mean.groupby(["dataset", "budget", "k"], sort=False):
        lines += [f"## {dataset}, budget {budget:g} (k = {k})", "",
                  "| method | RMSE (pp) | τ | coverage90 | width90 (pp) | items | seconds |",
                  "|---|---|---|---|---|---|---|"]
        for r in df.itertuples(index=False):
            lines.append(f"| {r.method} | {r.rmse_pp:.2f} | {r.tau:.3f} | {r.coverage90:.2f} "
                         f"| {r.width90_pp:.2f} | {r.items:.1f} | {r.seconds:.1f} |")
        static = df[~df["method"].str.startswith("cat-")]["rmse_pp"].min()
        fixed = df[df["method"].str.startswith("cat-") & ~df["method"].str.contains("@")
                   & (df["method"] != "cat-random")]
        best = fixed.loc[fixed["rmse_pp"].idxmin()]
        lines += ["", f"Best adaptive ({best['method']}) / best static RMSE: "
                  f"{best['rmse_pp'] / static:.2f}.", ""]
    lines += ["## Speed of choosing the next item (1000 items, 50 draws, one thread)", "",
              "| rule | median (ms) | max (ms) |", "|---|---|---|"]
    lines += [f"| {r.rule} | {r.median_ms:.1f} | {r.max_ms:.1f} |"
              for r in timing.itertuples(index=False)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
