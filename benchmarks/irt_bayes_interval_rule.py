"""irt-bayes intervals on the item-level grid's splits: how the misfit term is calibrated.

irt-bayes widens its posterior predictive by a misfit variance ``τ²``, the split-conformal
quantile of the scores ``r_m² / z² − v_m`` of its out-of-fold source predictions
(:func:`coreval.base.conformal.conformal_inflation`). This script fits irt-bayes with its
defaults on the item-level grid's binned splits (by default the 8 LLM matrices; one M,
one budget, the given seeds; the same splits and ``k`` as ``benchmarks/item_level.py``) and stores,
per split, what the calibration saw and what it gave the targets:

* the out-of-fold residuals ``r_m`` and variances ``v_m`` of the source models;
* the targets' true full scores, posterior means and posterior predictive draws without
  the misfit term, and their interval with it (the method's own output).

From these the report compares calibration rules on the same fits, without refitting:

* ``floored`` (the method): ``τ² = max(0, q)``, ``q`` the conformal quantile of the scores;
* ``floored-quadratic``: the same with the added SD proportional to a quadratic variance
  function of the prediction, ``τ c(ŷ)``, fitted to the out-of-fold squared residuals
  (:func:`coreval.base.conformal.variance_function_scale`, the ``"cv"`` intervals'
  default ``interval_scale``), scores ``(r_m² / z² − v_m) / c(ŷ_m)²``;
* ``signed``: ``q`` itself, negative values narrowing each target's draws about their
  mean to the variance ``max(v + q, 0)``;
* ``scaled``: the normalised score ``r_m² / (z² v_m)``, whose quantile ``κ²`` scales the
  draws about their mean by ``κ``;
* ``scaled-wider``: the same with ``κ`` floored at 1 (it never narrows the posterior);
* ``auto``: ``floored`` or ``scaled``, chosen per split by the mean leave-one-out
  interval score of the out-of-fold points.

Each rule's mean interval score (Gneiting & Raftery 2007: width plus ``2/α`` times the
distance by which the interval misses, pp; lower is better) is reported with its coverage.

Rows: per split, and plain means over the splits of coverage90, width90 and the interval
score (pp), by matrix family and M.

Usage::

    python benchmarks/irt_bayes_interval_rule.py --n-source 30 --seeds 0 1 \\
        --store benchmarks/results/raw/interval_rule_m30
    python benchmarks/irt_bayes_interval_rule.py --report --store A --store B \\
        --out benchmarks/results/irt_bayes_interval_rule.md
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
from scipy.stats import norm

from _results import LLM, RESULTS, SHARED, provenance, write_markdown
from coreval.base import resolve_budget
from coreval.base.conformal import (
    conformal_inflation,
    conformal_rank,
    interval_scores,
    variance_function_scale,
)
from coreval.data import load_matrix
from coreval.data.splits import iter_splits
from coreval.jax_cache import enable_compilation_cache
from coreval.methods import get_method
from coreval.pipeline import fit_method

LEVEL = 0.9


def collect(store: Path, n_source: int, seeds: list[int], budget: float,
            datasets: tuple[str, ...], data_dir: Path) -> None:
    """Fit irt-bayes on each split and store one ``.npz`` per split (skipping stored ones)."""
    store.mkdir(parents=True, exist_ok=True)
    method = get_method("irt-bayes")
    for name in datasets:
        matrix = load_matrix(name, data_dir=data_dir)
        k = resolve_budget(budget, matrix.n_items)
        for split in iter_splits(matrix, "binned", seeds=seeds, n_source=n_source):
            path = store / f"{name}_m{n_source}_s{split.seed}.npz"
            if path.exists() and "oof_rows" in np.load(path).files:
                continue
            t0 = time.perf_counter()
            source, target = matrix.take(split.source), matrix.take(split.target)
            fitted = fit_method(method, source, k, seed=split.seed, show_progress=False)
            x = target.values[:, fitted.coreset.indices]
            pred = fitted.predict_array(x)
            p = fitted.predictor
            tau = float(p.tau_)
            p.tau_ = 0.0  # the same draws without the misfit term (each row has its own stream)
            bare = fitted.predict_array(x)
            p.tau_ = tau
            tmp = path.with_suffix(".tmp.npz")
            np.savez(tmp, truth=target.summary_scores(), mean=pred.mean, lower=pred.lower,
                     upper=pred.upper, draws=bare.draws, tau=tau,
                     oof_residuals=p.oof_residuals_, oof_variances=p.oof_variances_,
                     oof_rows=p.oof_rows_, source_truth=source.summary_scores(),
                     seconds=time.perf_counter() - t0, k=k)
            os.replace(tmp, path)
            cover = float(np.mean((pred.lower <= target.summary_scores())
                                  & (target.summary_scores() <= pred.upper)))
            print(f"{path.name}: tau {100 * tau:.2f} pp, coverage {cover:.3f}, "
                  f"{time.perf_counter() - t0:.0f} s", flush=True)


Z2 = float(norm.ppf(0.5 + LEVEL / 2)) ** 2  # squared standard-normal quantile of the interval


def _kth(scores: np.ndarray) -> float:
    """The split-conformal quantile: the ⌈(n+1)·level⌉-th smallest score (the largest if n is small)."""
    rank = min(conformal_rank(scores.size, LEVEL), scores.size)
    return float(np.sort(scores)[rank - 1])


def signed_q(r2: np.ndarray, v: np.ndarray) -> float:
    """The conformal quantile of ``r²/z² − v`` before any floor (``floored`` takes ``max(0, q)``)."""
    return _kth(r2 / Z2 - v)


def kappa2(r2: np.ndarray, v: np.ndarray) -> float:
    """The conformal quantile ``κ²`` of the normalised scores ``r² / (z² v)``."""
    return _kth(r2 / (Z2 * np.maximum(v, 1e-300)))


def _half_width2(rule: str, r2: np.ndarray, v: np.ndarray, v_new: np.ndarray) -> np.ndarray:
    """Squared half-widths ``z² × variance`` at variances ``v_new``, calibrated on ``(r2, v)``."""
    if rule == "floored":
        return Z2 * (v_new + conformal_inflation(r2, v, LEVEL))
    if rule == "scaled":
        return Z2 * v_new * kappa2(r2, v)
    raise ValueError(rule)


def loo_choice(r2: np.ndarray, v: np.ndarray) -> str:
    """``floored`` or ``scaled``: the lower mean leave-one-out interval score of the OOF points."""
    n = r2.size
    scores = {}
    for rule in ("floored", "scaled"):
        total = 0.0
        for i in range(n):
            keep = np.arange(n) != i
            half = math.sqrt(_half_width2(rule, r2[keep], v[keep], v[i:i + 1])[0])
            total += 2 * half + 2 / (1 - LEVEL) * max(0.0, math.sqrt(r2[i]) - half)
        scores[rule] = total / n
    return "scaled" if scores["scaled"] < scores["floored"] else "floored"


def rule_draws(rule: str, z: np.lib.npyio.NpzFile, rng: np.random.Generator) -> np.ndarray:
    """The targets' draws under one calibration rule (shape ``(draws, targets)``)."""
    r2, v = np.asarray(z["oof_residuals"]) ** 2, np.asarray(z["oof_variances"])
    if rule == "auto":
        rule = loo_choice(r2, v)
    draws = np.asarray(z["draws"], dtype=float)
    centre = draws.mean(axis=0)
    var = draws.var(axis=0)
    if rule == "floored":
        q = conformal_inflation(r2, v, LEVEL)
        return draws + rng.normal(0.0, math.sqrt(q), size=draws.shape)
    if rule == "floored-quadratic":
        resid = np.asarray(z["oof_residuals"])
        oof_mean = np.asarray(z["source_truth"])[np.asarray(z["oof_rows"])] - resid
        q = conformal_inflation(r2, v, LEVEL,
                                scales=variance_function_scale(oof_mean, oof_mean, resid))
        c_new = variance_function_scale(np.asarray(z["mean"]), oof_mean, resid)
        return draws + rng.normal(0.0, 1.0, size=draws.shape) * (math.sqrt(q) * c_new)
    if rule == "signed":
        q = signed_q(r2, v)
        if q >= 0:
            return draws + rng.normal(0.0, math.sqrt(q), size=draws.shape)
        factor = np.sqrt(np.maximum(var + q, 0.0) / np.maximum(var, 1e-300))
        return centre + factor * (draws - centre)
    if rule in ("scaled", "scaled-wider"):
        kappa = math.sqrt(kappa2(r2, v))
        if rule == "scaled-wider":
            kappa = max(kappa, 1.0)
        return centre + kappa * (draws - centre)
    raise ValueError(rule)


def report(stores: list[Path], out: Path, command: str) -> str:
    """Coverage and width of each rule over the stored splits."""
    rules = ("floored", "floored-quadratic", "signed", "scaled", "scaled-wider", "auto")
    alpha = 1 - LEVEL
    rows = []
    for store in stores:
        for path in sorted(store.glob("*.npz")):
            if path.name.endswith(".tmp.npz"):
                continue
            z = np.load(path)
            truth = z["truth"]
            method_cover = float(np.mean((z["lower"] <= truth) & (truth <= z["upper"])))
            row = {"split": path.stem, "tau": 100 * float(z["tau"]), "method": method_cover,
                   "n_oof": int(np.asarray(z["oof_residuals"]).size)}
            r2, v = np.asarray(z["oof_residuals"]) ** 2, np.asarray(z["oof_variances"])
            q = signed_q(r2, v)
            var = np.asarray(z["draws"]).var(axis=0)
            row["q"] = 1e4 * q
            row["oof_sd"] = 100 * float(np.sqrt(np.median(v)))
            row["target_sd"] = 100 * float(np.median(np.sqrt(var)))
            row["collapsed"] = float(np.mean(var + q <= 0))
            for rule in rules:
                d = rule_draws(rule, z, np.random.default_rng(0))
                lo, hi = np.quantile(d, [(1 - LEVEL) / 2, (1 + LEVEL) / 2], axis=0)
                lo, hi = np.clip(lo, 0, 1), np.clip(hi, 0, 1)
                row[f"{rule}_cov"] = float(np.mean((lo <= truth) & (truth <= hi)))
                row[f"{rule}_width"] = 100 * float(np.mean(hi - lo))
                row[f"{rule}_is"] = 100 * float(np.mean(interval_scores(truth, lo, hi, alpha)))
            rows.append(row)
    lines = ["# irt-bayes: calibration rules of the misfit term on the grid's splits", "",
             *provenance(command),
             "irt-bayes with its defaults on the item-level grid's binned splits (10 % of the "
             "items); each rule is applied to the same fits' out-of-fold scores and target "
             "draws (module docstring of `benchmarks/irt_bayes_interval_rule.py`). "
             "`method`: the coverage of the method's own interval; `q`: the conformal "
             "quantile of `r²/z² − v` (pp²); `oof sd`, `target sd`: median predictive SD "
             "without the misfit term of the out-of-fold source predictions and of the "
             "targets (pp); `signed: no width`: the share of targets whose variance `v + q` is "
             "not positive, whose `signed` interval is a point. `auto` takes `floored` or "
             "`scaled` per split, whichever has the lower mean leave-one-out interval score "
             "on the out-of-fold points (Gaussian intervals). The stores were made with "
             "`python benchmarks/irt_bayes_interval_rule.py --n-source M --seeds 0 1 --store "
             "STORE` (M = 30 and 50) and `--n-source 30 --seeds 0 1 2 --datasets mrpc sst2` "
             "(the robustness splits of the GLUE matrices), two processes on 2 cores.", ""]
    head = ("| split | OOF models | τ (pp) | q (pp²) | oof sd | target sd | signed: no width | "
            "method | " + " | ".join(f"{r} cov | {r} width" for r in rules) + " |")
    lines += [head, "|" + "---|" * (8 + 2 * len(rules))]
    for r in rows:
        lines.append(f"| {r['split']} | {r['n_oof']} | {r['tau']:.2f} | {r['q']:.2f} | "
                     f"{r['oof_sd']:.2f} | {r['target_sd']:.2f} | {r['collapsed']:.2f} | "
                     f"{r['method']:.3f} | "
                     + " | ".join(f"{r[f'{x}_cov']:.3f} | {r[f'{x}_width']:.1f}"
                                  for x in rules) + " |")
    lines += ["", "Means over splits (coverage, width and interval score, pp):", "",
              "| group | splits | method | "
              + " | ".join(f"{r} cov | {r} width | {r} IS" for r in rules) + " |",
              "|" + "---|" * (3 + 3 * len(rules))]
    groups: dict[tuple[str, int], list[dict]] = {}
    for r in rows:
        name, rest = r["split"].rsplit("_m", 1)
        family = "8 LLM matrices" if name in LLM else name
        groups.setdefault((family, int(rest.split("_")[0])), []).append(r)
    for (family, m), rs in sorted(groups.items(),
                                  key=lambda kv: (kv[0][0] != "8 LLM matrices", kv[0])):
        lines.append(f"| {family}, M = {m} | {len(rs)} | "
                     f"{np.mean([r['method'] for r in rs]):.3f} | "
                     + " | ".join(f"{np.mean([r[f'{x}_cov'] for r in rs]):.3f} | "
                                  f"{np.mean([r[f'{x}_width'] for r in rs]):.1f} | "
                                  f"{np.mean([r[f'{x}_is'] for r in rs]):.2f}"
                                  for x in rules) + " |")
    lines += ["", "Lowest mean interval score per group: " + "; ".join(
        f"{family}, M = {m}: {best} ({np.mean([r[f'{best}_is'] for r in rs]):.2f}, "
        f"coverage {np.mean([r[f'{best}_cov'] for r in rs]):.3f})"
        for (family, m), rs in sorted(groups.items(),
                                      key=lambda kv: (kv[0][0] != "8 LLM matrices", kv[0]))
        for best in [min(rules, key=lambda x: np.mean([r[f"{x}_is"] for r in rs]))]) + ".",
        "", "Largest share of a split's targets whose `signed` interval is a point: "
        f"{max(r['collapsed'] for r in rows):.2f}."]
    text = "\n".join(lines) + "\n"
    write_markdown(out, text)
    return text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-source", type=int, default=30)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    ap.add_argument("--budget", type=float, default=0.10)
    ap.add_argument("--datasets", nargs="+", default=list(LLM))
    ap.add_argument("--data-dir", type=Path, default=SHARED / "data")
    ap.add_argument("--store", type=Path, action="append", required=True)
    ap.add_argument("--report", action="store_true")
    ap.add_argument("--out", type=Path, default=RESULTS / "irt_bayes_interval_rule.md")
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    command = f"python benchmarks/irt_bayes_interval_rule.py {' '.join(argv)}"
    if args.report:
        print(report(args.store, args.out, command))
        return 0
    enable_compilation_cache()
    collect(args.store[0], args.n_source, args.seeds, args.budget, tuple(args.datasets),
            args.data_dir)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
