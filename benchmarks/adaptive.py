"""Adaptive testing vs static coresets on the same splits (Open LLM Leaderboard v2, HELM).

For each dataset and seed, a split (``--split random`` with ``--n-source`` source models,
all other models targets; or ``--split binned`` as the item-level grid). Every method runs
through :func:`coreval.pipeline.fit_method` on the split, sharing one fit cache:

* static coresets (``--static``): random, random++, mrmr++, gp-irt, irt-bayes and the
  stacked predictors on mRMR coresets (stack-mrmr), ...;
* adaptive tests (``--rules``, the registered ``cat-*`` methods): each target model takes
  a test that answers from its recorded row, stopped at the budget's number of items. The
  misfit term τ is learnt out of fold on the source models (``tau="cv"``, the default);
* ``cat-random``: items in random order, scored with cat-score's bank and τ (a random
  static sample read through the same posterior);
* ``cat-score@width``, ``cat-random@width`` (first budget only): stopped once the 90 %
  interval of the full score is at most ``--width`` wide (or half the bank answered), on
  the first ``--width-targets`` targets, with τ learnt for that stop
  (:mod:`coreval.adaptive.misfit`); cat-random@width reads random items through
  cat-score@width's bank and τ; ``--width-only`` recomputes just these rows of the stored
  parts; ``mean@width``: a random static sample read the
  classical way (sample mean, Agresti-Coull interval with the finite-population
  correction), asked until its interval is as narrow (:func:`sample_mean_width_row`);
* ``<rule>+exposure`` (``--exposure-rules``): exposure control with
  ``max_exposure=--max-exposure`` (Sympson-Hetter plus the ceiling over the targets);
  ``max_exposure`` is the largest share of targets any item was given to, and the
  accuracy cost is the RMSE ratio to the same rule without control.

Fluid Benchmarking's view (Hofmann et al. 2025), on the first ``--start-targets`` targets,
for each method in ``--start-methods`` over ``--starts`` random starts (adaptive: each
item drawn at random among the 5 best, ``randomesque``, with τ fixed to the one learnt;
static: the selection seed): ``start_sd`` is a target's estimate's standard
deviation across starts (pp, mean over targets), and ``flips`` the share of pairs of
neighbours in the true ranking whose estimated order differs between two starts.

Each (dataset, seed, budget) is stored in ``benchmarks/results/raw/adaptive/`` as it
finishes, so an interrupted run resumes; the width-stopped rows go with the first
budget. The markdown and the figure (RMSE vs items used) are written from every stored
part under ``raw/<tag>/``, whichever command stored it (``--report-only`` writes only
them), so runs with other splits or datasets add to one report. The speed section times
:func:`coreval.adaptive.next_items` on a 1000-item bank (50 item-parameter draws), one
thread.

Usage (as committed)::

    python benchmarks/adaptive.py --datasets arc_challenge ifeval openllm_math \
        --seeds 0 --budgets 0.01 0.02 0.05 --starts 3 --start-targets 30
    python benchmarks/adaptive.py --datasets arc_challenge ifeval --seeds 1 \
        --budgets 0.02 0.05 --width 0 --starts 3 --start-targets 30
    python benchmarks/adaptive.py --datasets gsm med_qa mmlu --split binned --n-source 30 \
        --seeds 0 --budgets 0.01 0.02 0.05 --starts 3 --start-targets 30
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import numpy as np
import pandas as pd
from scipy.stats import kendalltau

from _results import RESULTS, SHARED, provenance, write_markdown


def _random_rule(state):
    return np.random.default_rng([state.n_asked, int(state.responses.sum())]).random(
        len(state.unasked))


def _metrics(name, truth, mean, lower, upper, items, seconds, **extra):
    mean, lower, upper = (np.asarray(v, dtype=float) for v in (mean, lower, upper))
    return {"method": name, "rmse_pp": 100 * float(np.sqrt(np.mean((mean - truth) ** 2))),
            "tau": float(kendalltau(mean, truth)[0]),
            "coverage90": float(np.mean((truth >= lower) & (truth <= upper))),
            "width90_pp": 100 * float(np.mean(upper - lower)), "items": float(items),
            "seconds": seconds, **extra}


#: Options of every adaptive method (``cat-*``) of this run: ``--bank-dims`` sets the
#: latent dimensions of their item bank's IRT fit.
ADAPTIVE_OPTIONS: dict = {}


def _fit(name, source, k, seed, cache, **options):
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    if name.startswith("cat-"):
        options = {**ADAPTIVE_OPTIONS, **options}
    return fit_method(get_method(name), source, k, seed=seed, cache=cache, **options)


def method_row(name, source, target, k, seed, cache, label=None, n_rows=None, cap=None,
               **options):
    """Fit ``name`` on the source models and score the (first ``n_rows``) targets.

    ``cap``: the tests' item limit; the row's ``capped`` is the share of tests that ran
    into it instead of stopping on their interval.
    """
    t0 = time.perf_counter()
    fitted = _fit(name, source, k, seed, cache, **options)
    rows = target.values[:n_rows, fitted.coreset.indices]
    pred = fitted.predict_array(rows)
    predictor = fitted.predictor
    used = getattr(predictor, "items_used_", np.full(len(rows), k))
    extra = {}
    if hasattr(predictor, "asked_"):
        extra["max_exposure"] = float(predictor.asked_.mean(axis=0).max())
        extra["tau_misfit"] = float(predictor.tau_)
        extra["bank_dims"] = int(predictor.irt_spec_.dims)
    if cap is not None:
        extra["capped"] = float(np.mean(np.asarray(used) >= cap))
    return fitted, _metrics(label or name, target.summary_scores()[:len(rows)], pred.mean,
                            pred.lower, pred.upper, np.mean(used),
                            time.perf_counter() - t0, **extra)


def random_order_row(bank, target, stop, seed, n_rows, label, cap=None):
    """Items in random order, read through ``bank``'s posterior (with its τ)."""
    from coreval.adaptive import AdaptiveTest

    t0 = time.perf_counter()
    means, lowers, uppers, used = [], [], [], []
    for j, row in enumerate(target.values[:n_rows]):
        test = AdaptiveTest(bank, rule=_random_rule, stop=stop,
                            exposure=(~np.isnan(row)).astype(float), seed=seed + j)
        pred = test.run(lambda items, row=row: row[bank.positions(items)])
        means.append(pred.mean[0])
        lowers.append(pred.lower[0])
        uppers.append(pred.upper[0])
        used.append(test.state.n_asked)
    extra = {} if cap is None else {"capped": float(np.mean(np.asarray(used) >= cap))}
    return _metrics(label, target.summary_scores()[:len(means)], means, lowers, uppers,
                    np.mean(used), time.perf_counter() - t0, **extra)


def sample_mean_width_row(target, width, seed, n_rows, level=0.9, label="mean@width"):
    """A random static sample read the classical way, asked until its interval is narrow.

    Items in a random order (per target, fixed by ``seed``); after ``n`` answers with
    ``x`` right, the full score's ``level`` interval is the Agresti-Coull interval with
    the finite-population correction ``(N - n) / (N - 1)``:
    ``p̃ ± z √(p̃ (1 - p̃) / (n + z²) · (N - n) / (N - 1))``, ``p̃ = (x + z²/2) / (n + z²)``
    (Agresti & Coull 1998; Cochran 1977, ch. 3). It stops at the first ``n`` whose
    interval is at most ``width`` wide; the estimate is the sample mean ``x / n``.
    """
    from scipy.stats import norm

    t0 = time.perf_counter()
    z = float(norm.ppf(0.5 + level / 2))
    means, lowers, uppers, used = [], [], [], []
    for j, row in enumerate(target.values[:n_rows]):
        y = row[~np.isnan(row)]
        big_n = len(y)
        y = y[np.random.default_rng([seed, j]).permutation(big_n)]
        n = np.arange(1, big_n + 1)
        x = np.cumsum(y)
        p = (x + z**2 / 2) / (n + z**2)
        half = z * np.sqrt(p * (1 - p) / (n + z**2) * (big_n - n) / max(big_n - 1, 1))
        stop = int(np.flatnonzero(2 * half <= width)[0])  # n = N always qualifies
        means.append(x[stop] / n[stop])
        lowers.append(max(0.0, p[stop] - half[stop]))
        uppers.append(min(1.0, p[stop] + half[stop]))
        used.append(n[stop])
    return _metrics(label, target.summary_scores()[:len(means)], means, lowers, uppers,
                    np.mean(used), time.perf_counter() - t0)


def start_spread(name, source, target, k, seed, cache, starts, n_rows, tau):
    """Fluid Benchmarking's variance and rank flips of ``name`` over random starts."""
    estimates = []
    for start in range(starts):
        if name.startswith("cat-"):
            fitted = _fit(name, source, k, seed, cache, tau=tau, randomesque=5,
                          predictor__seed=seed + 1000 * start)
        else:
            fitted = _fit(name, source, k, seed + 1000 * start, cache)
        estimates.append(fitted.predict_array(
            target.values[:n_rows, fitted.coreset.indices]).mean)
    est = np.asarray(estimates)
    order = np.argsort(target.summary_scores()[:n_rows], kind="stable")
    diffs = np.sign(np.diff(est[:, order], axis=1))  # (starts, n_rows - 1) neighbour order
    pairs = [(a, b) for a in range(starts) for b in range(a + 1, starts)]
    flips = np.mean([np.mean(diffs[a] != diffs[b]) for a, b in pairs]) if pairs else np.nan
    return {"start_sd": 100 * float(est.std(axis=0, ddof=1).mean()), "flips": float(flips)}


def _items_ratio(test, other) -> str:
    """Items ``test`` asked over the items ``other`` asked, where every test reached the width.

    Tests that ran into the half-bank cap did not reach the width, so a mean over them is
    no number of items needed; the ratio is then left out with the share capped.
    """
    capped = max(float(np.nan_to_num(row.get("capped", 0.0))) for row in (test, other))
    if capped > 0:
        return f"— ({100 * capped:.0f} % capped)"
    return f"{test['items'] / other['items']:.2f}"


def width_rows(matrix, source, target, k, seed, cache, args) -> list[dict]:
    """The width-stopped rows: cat-score, random order through its bank, the sample mean.

    Tests stop at an interval of ``args.width`` or half the bank (at least ``k``).
    ``cat-random@width`` reads random items through cat-score@width's bank, with the τ
    learnt for the width stop.
    """
    from coreval.adaptive import any_of, max_items, score_width

    cap = max(k, matrix.n_items // 2)
    fitted, score = method_row("cat-score", source, target, cap, seed, cache,
                               label="cat-score@width", n_rows=args.width_targets,
                               cap=cap, width=args.width)
    stop = any_of(score_width(args.width), max_items(cap))
    return [score,
            random_order_row(fitted.predictor.bank_, target, stop, seed, args.width_targets,
                             "cat-random@width", cap=cap),
            sample_mean_width_row(target, args.width, seed, args.width_targets)]


def redo_width_rows(name, matrix, seed, args, stored) -> None:
    """Recompute the width-stopped rows of a stored first-budget part (``--width-only``)."""
    from coreval._atomic import write_text_atomic
    from coreval.base import FitCache, resolve_budget
    from coreval.data.splits import make_split

    part = stored(args.budgets[0])
    if not part.exists():
        return
    rows = json.loads(part.read_text())
    split = make_split(matrix, args.split, seed=seed, n_source=args.n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    k = resolve_budget(args.budgets[0], matrix.n_items)
    cell = {key: rows[0][key] for key in ("dataset", "seed", "budget", "k", "n_source",
                                          "n_target", "cv") if key in rows[0]}
    new = width_rows(matrix, source, target, k, seed, FitCache(), args)
    kept = [r for r in rows if not r["method"].endswith("@width")]
    write_text_atomic(part, json.dumps(kept + [{**cell, **r} for r in new]))
    print(f"{name} seed {seed}: width rows redone", flush=True)


def run_split(name, matrix, seed, args, stored):
    """Every row of one (dataset, seed): static, adaptive, random order, width, exposure.

    ``stored(budget)`` is the file of one budget's rows: a budget whose file exists is
    skipped, and each is written as soon as it is done.
    """
    from coreval._atomic import write_text_atomic
    from coreval.adaptive import max_items
    from coreval.base import FitCache, resolve_budget
    from coreval.data.splits import make_split
    from coreval.pipeline import CV_FOLDS, CV_REPEATS

    split = make_split(matrix, args.split, seed=seed, n_source=args.n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    cache = FitCache()
    for i, budget in enumerate(args.budgets):
        if stored(budget).exists():
            continue
        k = resolve_budget(budget, matrix.n_items)
        cell = {"dataset": name, "seed": seed, "budget": budget, "k": k,
                "n_source": source.n_models, "n_target": target.n_models,
                "cv": f"{CV_FOLDS}x{CV_REPEATS}"}
        found = [method_row(m, source, target, k, seed, cache)[1] for m in args.static]
        fitted = {}
        for rule in args.rules:
            fitted[rule], row = method_row(rule, source, target, k, seed, cache)
            found.append(row)
        score = fitted.get("cat-score") or next(iter(fitted.values()))
        bank, tau = score.predictor.bank_, float(score.predictor.tau_)
        found.append(random_order_row(bank, target, max_items(k), seed, None, "cat-random"))
        for rule in args.exposure_rules:
            found.append(method_row(rule, source, target, k, seed, cache,
                                    label=f"{rule}+exposure",
                                    max_exposure=args.max_exposure)[1])
        if i == 0 and args.width:
            found += width_rows(matrix, source, target, k, seed, cache, args)
        if args.starts > 1:
            for row in found:
                if row["method"] in args.start_methods:
                    row.update(start_spread(row["method"], source, target, k, seed, cache,
                                            args.starts, args.start_targets, tau))
        write_text_atomic(stored(budget), json.dumps([{**cell, **r} for r in found]))
        print(f"{name} seed {seed} budget {budget}: done", flush=True)


def speed(n_items: int = 1000, n_draws: int = 50, steps: int = 30) -> list[dict]:
    """Milliseconds to choose the next item and to take in its answer, per rule and D."""
    from coreval.adaptive import ItemBank, init, next_items, update

    rng = np.random.default_rng(0)
    out = []
    for dims in (1, 2):
        shape = (n_draws, n_items) if dims == 1 else (n_draws, n_items, dims)
        bank = ItemBank(items=[str(i) for i in range(n_items)],
                        a=rng.lognormal(0.0, 0.3, shape),
                        d=rng.normal(0.0, 1.0, (n_draws, n_items)))
        for rule in ("score", "fisher", "kl"):
            state, times, updates = init(bank), [], []
            next_items(state, rule)  # the prior's criterion is computed once per bank
            for _ in range(steps):
                t0 = time.perf_counter()
                item = next_items(state, rule)
                times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                state = update(state, item, [float(rng.random() < 0.5)])
                updates.append(time.perf_counter() - t0)
            out.append({"dims": dims, "rule": rule,
                        "median_ms": 1e3 * float(np.median(times)),
                        "max_ms": 1e3 * float(np.max(times)),
                        "update_ms": 1e3 * float(np.median(updates))})
    return out


def main(argv: list[str] | None = None) -> int:
    from coreval.data.io import load_matrix

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+",
                        default=["arc_challenge", "ifeval", "openllm_math"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0])
    parser.add_argument("--budgets", nargs="+", type=float,
                        default=[0.01, 0.02, 0.05, 0.1])
    parser.add_argument("--split", choices=["random", "binned"], default="random")
    parser.add_argument("--n-source", type=int, default=100)
    parser.add_argument("--static", nargs="+",
                        default=["random", "random++", "mrmr++", "gp-irt", "irt-bayes",
                                 "stack-mrmr"])
    parser.add_argument("--rules", nargs="+", default=["cat-score", "cat-fisher"])
    parser.add_argument("--exposure-rules", nargs="*", default=["cat-fisher"])
    parser.add_argument("--max-exposure", type=float, default=0.5)
    parser.add_argument("--bank-dims", type=int, default=1,
                        help="latent dimensions of the adaptive tests' item bank (D >= 2: "
                             "adaptive Gauss-Hermite quadrature, coreval.adaptive.laplace)")
    parser.add_argument("--choose-dims", action="store_true",
                        help="adaptive tests choose the bank's latent dimensions, 1 to "
                             "--max-dims, in each run (AdaptivePredictor(choose_dims=True))")
    parser.add_argument("--max-dims", type=int, default=2,
                        help="the most dimensions --choose-dims tries")
    parser.add_argument("--width", type=float, default=0.04)
    parser.add_argument("--width-targets", type=int, default=30,
                        help="targets of each split that run the width-stopped tests (the "
                        "first ones; those tests ask up to half the bank)")
    parser.add_argument("--starts", type=int, default=5)
    parser.add_argument("--start-targets", type=int, default=40)
    parser.add_argument("--start-methods", nargs="*",
                        default=["cat-score", "cat-fisher", "random++", "random"])
    parser.add_argument("--tag", default="adaptive",
                        help="results file benchmarks/results/<tag>.md and raw/<tag>/")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--width-only", action="store_true",
                        help="recompute only the width-stopped rows of the stored parts of "
                             "the first budget")
    args = parser.parse_args(argv)
    defaults = vars(parser.parse_args([]))
    # the options that change which rows are made, where they differ from the defaults
    args.method_flags = " ".join(
        f"--{key.replace('_', '-')}" + ("" if value is True else " " + (
            " ".join(map(str, value)) if isinstance(value, list) else str(value)))
        for key, value in vars(args).items()
        if key in ("static", "rules", "exposure_rules", "max_exposure", "bank_dims",
                   "choose_dims", "max_dims", "start_methods", "tag")
        and value != defaults[key])
    if args.bank_dims != 1:
        from coreval.irt.source_fit import BAYES_FIT

        ADAPTIVE_OPTIONS["irt"] = BAYES_FIT.replace(dims=args.bank_dims)
    if args.choose_dims:
        ADAPTIVE_OPTIONS.update(choose_dims=True, max_dims=args.max_dims)
    raw = RESULTS / "raw" / args.tag
    raw.mkdir(parents=True, exist_ok=True)
    if not args.report_only:
        for name in args.datasets:
            matrix = None
            for seed in args.seeds:
                def stored(budget, name=name, seed=seed):
                    return raw / f"{name}_{args.split}{args.n_source}_seed{seed}_b{budget:g}.json"

                if args.width_only:
                    if stored(args.budgets[0]).exists():
                        if matrix is None:
                            matrix = load_matrix(name, data_dir=SHARED / "data")
                        redo_width_rows(name, matrix, seed, args, stored)
                    continue
                if all(stored(b).exists() for b in args.budgets):
                    continue
                if matrix is None:
                    matrix = load_matrix(name, data_dir=SHARED / "data")
                run_split(name, matrix, seed, args, stored)
    parts = sorted(raw.glob("*.json"))
    if not parts:
        raise SystemExit(f"nothing stored under {raw}")
    table = pd.DataFrame([{**r, "setting": _setting(p)} for p in parts
                          for r in json.loads(p.read_text())])
    command = _commands(table, args)
    table["dataset"] = table["dataset"] + " (" + table["setting"].str.replace(
        " ", ", M = ") + ")"
    timing = pd.DataFrame(speed())
    out = RESULTS / f"{args.tag}.md"
    figure = RESULTS / "figures" / f"{args.tag}.png"
    plot(table, figure)
    write_markdown(out, to_markdown(table, timing, args, command, figure))
    print(f"wrote {out}")
    return 0


def _setting(part: Path) -> str:
    """``"random 100"`` from a stored part ``<dataset>_random100_seed0_b0.01.json``."""
    config = part.name.rsplit("_seed", 1)[0].rsplit("_", 1)[1]
    split = config.rstrip("0123456789")
    return f"{split} {config[len(split):]}"


def _commands(table: pd.DataFrame, args) -> str:
    """The commands that fill every stored part (the report reads them all).

    One command per setting and group of seeds that stored the same budgets, with or
    without the width-stopped rows (``--width 0``).
    """
    fixed = f"--starts {args.starts} --start-targets {args.start_targets}"
    if args.method_flags:
        fixed += " " + args.method_flags
    runs: dict[tuple, list[int]] = {}
    for (setting, seed), df in table.groupby(["setting", "seed"], sort=False):
        budgets = " ".join(f"{b:g}" for b in sorted(df["budget"].unique()))
        width = (f"--width {args.width:g} --width-targets {args.width_targets}"
                 if df["method"].str.contains("@width").any() else "--width 0")
        key = (setting, tuple(dict.fromkeys(df["dataset"])), budgets, width)
        runs.setdefault(key, []).append(int(seed))
    out = []
    for (setting, datasets, budgets, width), seeds in runs.items():
        split, n = setting.split()
        out.append(f"python benchmarks/adaptive.py --datasets {' '.join(datasets)} "
                   f"--split {split} --n-source {n} --seeds {' '.join(map(str, seeds))} "
                   f"--budgets {budgets} {width} {fixed}")
    return "`, `".join(out)


def plot(table: pd.DataFrame, path: Path) -> None:
    """RMSE against items used, one panel per dataset (fixed budgets and width stops)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    datasets = list(dict.fromkeys(table["dataset"]))
    ncols = min(4, len(datasets))
    nrows = -(-len(datasets) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.6 * nrows),
                             squeeze=False)
    for ax in axes.ravel()[len(datasets):]:
        ax.set_visible(False)
    mean = table.groupby(["dataset", "method", "budget"], sort=False)[
        ["rmse_pp", "items"]].mean().reset_index()
    for ax, dataset in zip(axes.ravel(), datasets, strict=False):
        df = mean[mean["dataset"] == dataset]
        for method, g in df.groupby("method", sort=False):
            style = "o" if "@" in method else ("-o" if method.startswith("cat-") else "--s")
            ax.plot(g["items"], g["rmse_pp"], style, label=method, ms=4)
        ax.set_xscale("log")
        ax.set_xlabel("items per target model")
        ax.set_ylabel("RMSE of the full score (pp)")
        ax.set_title(dataset, fontsize=9)
    axes.ravel()[len(datasets) - 1].legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.png")
    fig.savefig(tmp, dpi=110)
    os.replace(tmp, path)
    plt.close(fig)


#: Cross-validation of ``calibration="cv"`` in parts stored before parts recorded it.
UNRECORDED_CV = ("5 folds (5 × 3 in the openllm_math seed-1 and HELM M = 50 parts), the "
                 "default when they were run")


def cv_note(table: pd.DataFrame) -> str:
    """Which cross-validation the static ``calibration="cv"`` competitors used, per part."""
    cv = (table["cv"] if "cv" in table else pd.Series(np.nan, index=table.index)).fillna("")
    parts = table.assign(cv=cv).groupby(["dataset", "budget", "seed"])["cv"].first()
    used = []
    for value, group in parts.groupby(parts):
        folds, repeats = value.split("x") if value else ("", "")
        what = (f"{folds} folds × {repeats} repetition{'s' if repeats != '1' else ''}"
                if value else UNRECORDED_CV)
        used.append(f"{what}: {len(group)} of the {len(parts)} parts")
    return ("The static competitors whose interval is `calibration=\"cv\"` (mrmr++, gp-irt) "
            "ran with " + "; ".join(used) + ". The cross-validation changes their coverage "
            "column, not their RMSE.")


def _cell(value, fmt):
    return "" if pd.isna(value) else format(value, fmt)


def to_markdown(table: pd.DataFrame, timing: pd.DataFrame, args, command: str,
                figure: Path) -> str:
    cols = ["rmse_pp", "tau", "coverage90", "width90_pp", "items", "seconds"]
    extra = [c for c in ("max_exposure", "tau_misfit", "bank_dims", "start_sd", "flips")
             if c in table]
    dims_col = args.choose_dims  # the bank's D, chosen in each run
    mean = table.groupby(["dataset", "budget", "k", "method"], sort=False)[
        cols + extra].mean().reset_index()
    seeds = sorted(table["seed"].unique().tolist())
    split = ("Each dataset's heading names its split: `random, M = 100` draws 100 source "
             "models at random and makes all other models targets; `binned, M = 30` is the "
             "item-level grid's binned split with 30 source models")
    lines = ["# Adaptive testing vs static coresets", "", *provenance(command),
             f"{split}; seeds {seeds}; means over seeds. Adaptive tests answer from each "
             "target's recorded row; their misfit term τ is learnt out of fold on the "
             "source models (split conformal). RMSE and width in percentage points of the "
             "full score; `items` is the mean number of items asked (the budget k, or what "
             "the width stop needed). "
             + (f"`@width` rows stop at a {100 * args.width:g} pp wide "
                f"90 % interval (or half the bank), on the first {args.width_targets} "
                "targets; their τ is learnt for that stop: held-out source tests run to half "
                "the bank with τ = 0 and are replayed under each τ, which is the smallest "
                "whose replayed stops cover 90 % of them (`coreval.adaptive.misfit`); "
                "cat-random@width reads random items through the same bank and τ. "
                if args.width else "")
             + "`+exposure` rows use exposure control at "
             f"{args.max_exposure:g} (Sympson-Hetter plus a ceiling over the targets); "
             "`max exp.` is the largest share of targets an item "
             "went to. "
             + (f"`start sd` and `flips` (Fluid Benchmarking's variance and rank "
                f"flips) are over {args.starts} random starts on the first "
                f"{args.start_targets} targets. " if args.starts > 1 else "")
             + "`τ misfit` is the learnt τ (pp). "
             + ("`bank D`: the latent dimensions of the bank each run chose "
                f"(`choose_dims=True`: banks of 1 to {args.max_dims} dimensions run the "
                "misfit folds, and the one whose held-out source tests did best is kept). "
                if args.choose_dims
                else "")
             + (f"The adaptive tests' item bank is a {args.bank_dims}-dimensional 2PL "
                "(ability posterior by adaptive Gauss-Hermite quadrature around the Laplace "
                "approximation, `coreval.adaptive.laplace`). " if args.bank_dims != 1 else "")
             + cv_note(table), "",
             f"![RMSE vs items]({os.path.relpath(figure, RESULTS)})", ""]
    summary, widths = [], []
    seeds_of = table.groupby(["dataset", "budget"], sort=False)["seed"].agg(
        lambda s: ", ".join(map(str, sorted(set(s)))))
    for (dataset, budget, k), df in mean.groupby(["dataset", "budget", "k"], sort=False):
        lines += [f"## {dataset}, budget {budget:g} (k = {k})", "",
                  f"Seeds {seeds_of[(dataset, budget)]}.", "",
                  "| method | RMSE (pp) | τ | coverage90 | width90 (pp) | items | seconds "
                  "| max exp. | τ misfit | " + ("bank D | " if dims_col else "")
                  + "start sd | flips |",
                  "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if dims_col else "")]
        for r in df.to_dict("records"):
            lines.append(
                f"| {r['method']} | {r['rmse_pp']:.2f} | {r['tau']:.3f} "
                f"| {r['coverage90']:.2f} | {r['width90_pp']:.2f} | {r['items']:.1f} "
                f"| {r['seconds']:.1f} | {_cell(r.get('max_exposure'), '.2f')} "
                f"| {_cell(100 * r['tau_misfit'] if 'tau_misfit' in r else np.nan, '.2f')} "
                + (f"| {_cell(r.get('bank_dims'), 'g')} " if dims_col else "")
                + f"| {_cell(r.get('start_sd'), '.2f')} | {_cell(r.get('flips'), '.3f')} |")
        static = df[~df["method"].str.startswith("cat-") & ~df["method"].str.contains("@")]
        adaptive = df[df["method"].isin(args.rules)]
        best_s = static.loc[static["rmse_pp"].idxmin()]
        best_a = adaptive.loc[adaptive["rmse_pp"].idxmin()]
        lines += ["", f"Best adaptive ({best_a['method']}, coverage "
                  f"{best_a['coverage90']:.2f}) / best static ({best_s['method']}) RMSE: "
                  f"**{best_a['rmse_pp'] / best_s['rmse_pp']:.2f}**.", ""]
        summary.append({"dataset": dataset, "budget": budget,
                        "seeds": seeds_of[(dataset, budget)], "ratio":
                        best_a["rmse_pp"] / best_s["rmse_pp"], "adaptive": best_a["method"],
                        "coverage": best_a["coverage90"], "static": best_s["method"]})
        width = df.set_index("method")
        for rule in args.exposure_rules:
            if {rule, f"{rule}+exposure"} <= set(width.index):
                free, held = width.loc[rule], width.loc[f"{rule}+exposure"]
                lines += [f"Exposure control ({rule}): largest share of targets per item "
                          f"{free['max_exposure']:.2f} → {held['max_exposure']:.2f}; RMSE "
                          f"{free['rmse_pp']:.2f} → {held['rmse_pp']:.2f} pp (cost "
                          f"×{held['rmse_pp'] / free['rmse_pp']:.2f}).", ""]
        if {"cat-score@width", "cat-random@width", "mean@width"} <= set(width.index):
            a, r, s = (width.loc[m] for m in ("cat-score@width", "cat-random@width",
                                               "mean@width"))
            lines += [f"Width stop at {100 * args.width:g} pp: cat-score asks "
                      f"{a['items']:.1f} items (coverage {a['coverage90']:.2f}); a random "
                      f"static sample with the sample mean {s['items']:.1f} (coverage "
                      f"{s['coverage90']:.2f}): ratio **{_items_ratio(a, s)}**; "
                      f"random order read through the IRT posterior {r['items']:.1f} "
                      f"(coverage {r['coverage90']:.2f}): ratio "
                      f"**{_items_ratio(a, r)}**.", ""]
            widths.append({"dataset": dataset, "score": a, "random": r, "mean": s})
    lines += ["## Summary: best adaptive / best static RMSE", "",
              "| dataset | budget | seeds | ratio | best adaptive (coverage) | best static |",
              "|---|---|---|---|---|---|"]
    lines += [f"| {r['dataset']} | {r['budget']:g} | {r['seeds']} | {r['ratio']:.2f} | "
              f"{r['adaptive']} ({r['coverage']:.2f}) | {r['static']} |" for r in summary]
    rmse = mean.pivot_table(index=["dataset", "budget"], columns="method", values="rmse_pp",
                            sort=False)
    if {"cat-score", "cat-fisher"} <= set(rmse.columns):
        lines += ["", "## Target-aware rule: cat-score / cat-fisher RMSE at equal items", "",
                  "| dataset | budget | cat-score | cat-fisher | ratio |", "|---|---|---|---|---|"]
        lines += [f"| {d} | {b:g} | {r['cat-score']:.2f} | {r['cat-fisher']:.2f} "
                  f"| {r['cat-score'] / r['cat-fisher']:.2f} |" for (d, b), r in rmse.iterrows()]
    for rule in args.exposure_rules:
        held = f"{rule}+exposure"
        if {rule, held} <= set(rmse.columns):
            share = mean[mean["method"] == held].set_index(["dataset", "budget"])["max_exposure"]
            lines += ["", f"## Exposure control at {args.max_exposure:g} ({rule})", "",
                      "| dataset | budget | max exp. | RMSE without | RMSE with | cost |",
                      "|---|---|---|---|---|---|"]
            lines += [f"| {d} | {b:g} | {share.loc[(d, b)]:.2f} | {r[rule]:.2f} "
                      f"| {r[held]:.2f} | ×{r[held] / r[rule]:.2f} |"
                      for (d, b), r in rmse.iterrows()]
    if widths:
        lines += ["", f"## Width stop at {100 * args.width:g} pp: items asked", "",
                  "| dataset | cat-score (coverage) | its width90 (pp) | its τ misfit (pp) "
                  "| random sample, mean (coverage) "
                  "| ratio | random order, IRT posterior (coverage) | ratio |",
                  "|---|---|---|---|---|---|---|---|"]
        lines += [f"| {w['dataset']} | {w['score']['items']:.1f} "
                  f"({w['score']['coverage90']:.2f}) | {w['score']['width90_pp']:.2f} "
                  f"| {_cell(100 * w['score'].get('tau_misfit', np.nan), '.2f')} "
                  f"| {w['mean']['items']:.1f} "
                  f"({w['mean']['coverage90']:.2f}) "
                  f"| {_items_ratio(w['score'], w['mean'])} "
                  f"| {w['random']['items']:.1f} ({w['random']['coverage90']:.2f}) "
                  f"| {_items_ratio(w['score'], w['random'])} |" for w in widths]
        lines += ["", "A test stops at the first answer after which its interval is "
                  f"{100 * args.width:g} pp wide, or at half the bank; a mean width above "
                  f"{100 * args.width:g} pp means the tests ran into that cap. What keeps the "
                  "interval wide is the ability posterior and the misfit term, not the "
                  "answers still unasked: `width_floor.md` shows that a test that knew the "
                  "target's θ exactly would reach the width after a small fraction of the "
                  "items a random sample needs. The misfit τ learnt for the stop (the "
                  "smallest that keeps the replayed stops of held-out source tests at 90 % "
                  "coverage) guards against stopping early on a lucky run of answers; where "
                  "it is large, the interval τρ (ρ the unasked share) stays wider than the "
                  "target at half the bank, and the capped tests over-cover."]
    lines += ["", "## Speed of choosing the next item (1000 items, 50 draws, one thread)", "",
              "D = 1: the fixed 61-node ability grid; D = 2: adaptive Gauss-Hermite quadrature, "
              "7 × 7 nodes placed anew at each update (`coreval.adaptive.laplace`). Median and "
              "largest time to choose the next item over a 30-item test; update: median time "
              "to take in an answer.", "",
              "| D | rule | median (ms) | max (ms) | update (ms) |", "|---|---|---|---|---|"]
    lines += [f"| {r.dims} | {r.rule} | {r.median_ms:.1f} | {r.max_ms:.1f} | "
              f"{r.update_ms:.1f} |" for r in timing.itertuples(index=False)]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
