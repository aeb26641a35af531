"""SimBA (Subramani et al. 2025) on coreval's benchmark-level matrices: stalk, prowl, pounce.

For each dataset (default: helm_lite_summary and merged) this script measures, all in the
same run:

* **stalk** — fraction of column pairs (datasets) and row pairs (models) per relation label
  (six regressors, R^2 >= 0.5), pairwise-complete;
* **prowl** — coverage curves eta(k) of the greedy PROXY_COVERAGE order for the nine
  similarity measures (plus a beam of 3 for Pearson), SCAUC, |S*| (eta >= 0.95) and the
  proxy-threshold size (gamma = 0.95); references measured in the same run: random orders
  (``--n-random``, 1000 by default), greedy-max and greedy-min (true coverage). Ratios:
  ``SCAUC / SCAUC(random)`` and the position ``(SCAUC - min) / (max - min)`` between the
  greedy-min and greedy-max bounds;
* **pounce** — held-out MSE (normalised scale) of ridge / kNN / MLP(1) / MLP(2) predicting
  the remaining datasets from prefixes of the best similarity's order and of a random order,
  AUC-MSE, the ratio to predicting training means, and noise robustness (sigma^2 = 0.05, 0.1
  added to the inputs);
* **method check** — the registered ``simba-<best similarity>`` method (ridge pounce) on
  random 80/20 model splits: native-unit RMSE of the unselected benchmarks and the empirical
  coverage of its 90 % split-conformal intervals.

Usage::

    python benchmarks/simba.py                      # both datasets, 1000 random orders
    python benchmarks/simba.py --datasets helm_lite_summary --n-random 200

Writes ``benchmarks/results/simba.md`` and PNG coverage curves to
``benchmarks/results/figures/simba_coverage_<dataset>.png``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from sklearn.exceptions import ConvergenceWarning

from _results import provenance, write_markdown
from coreval.base import Coreset
from coreval.data.matrix import ScoreMatrix
from coreval.data.npz import read_npz
from coreval.methods import get_method
from coreval.simba import (
    REGRESSORS,
    SIMILARITIES,
    auc_mse,
    greedy_coverage_order,
    normalise_scores,
    pounce_curve,
    prowl,
    random_coverage_curves,
    scauc,
    similarity_matrix,
    size_at,
    stalk,
    stalk_summary,
)
from coreval.simba.pounce import model_splits

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("COREVAL_SHARED_DIR", REPO.parent / "shared"))
OUT = REPO / "benchmarks" / "results"
FIG = OUT / "figures"
NOISE = (0.05, 0.1)


def fmt(x: object, digits: int = 3) -> str:
    if x is None or (isinstance(x, float) and not np.isfinite(x)):
        return "–"
    if isinstance(x, float) and x.is_integer() and abs(x) >= 1:
        return str(int(x))
    return f"{x:.{digits}f}" if isinstance(x, float) else str(x)


def table(df: pd.DataFrame) -> str:
    cols = list(df.columns)
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):  # keeps each column's dtype (ints stay ints)
        lines.append("| " + " | ".join(fmt(v) for v in row) + " |")
    return "\n".join(lines)


def stalk_section(z: np.ndarray, items: list[str], models: list[str]) -> tuple[list[str], dict]:
    out, timing = [], {}
    rows = []
    for axis, ids in (("columns", items), ("rows", models)):
        t0 = time.perf_counter()
        tab = stalk(z, axis=axis, ids=ids, min_overlap=5)
        timing[axis] = time.perf_counter() - t0
        lab, kind = stalk_summary(tab), stalk_summary(tab, by="kind")
        rows.append({"pairs of": "datasets" if axis == "columns" else "models",
                     "n pairs": int(lab["n_pairs"]),
                     "insufficient": int((tab["label"] == "insufficient").sum()),
                     **{k: float(kind[k]) for k in kind.index if k != "n_pairs"},
                     **{f"[{k}]": float(lab[k]) for k in lab.index if k != "n_pairs"},
                     "seconds": timing[axis]})
        if axis == "columns":
            fitted = tab[(tab["label"] != "insufficient") & (tab["n"] >= 20)]
            top = fitted.sort_values("r2", ascending=False).head(5)
            examples = top[["a", "b", "n", "label", "r2"]]
    df = pd.DataFrame(rows)
    out += ["### Stalk (relation per pair, R² ≥ 0.5; fractions of fitted pairs)", "",
            "Coarse kinds first (linear / exponential / power-law / other = logarithmic, "
            "quadratic or cubic / none), then the six labels in brackets.", "",
            table(df), "", "Strongest dataset pairs (at least 20 common models):", "",
            table(examples), ""]
    return out, timing


def prowl_section(name: str, z: np.ndarray, items: list[str],
                  n_random: int) -> tuple[list[str], dict]:
    t0 = time.perf_counter()
    rand = random_coverage_curves(z, n_runs=n_random, seed=0)
    t_rand = time.perf_counter() - t0
    o_max, c_max = greedy_coverage_order(z, maximise=True)
    _, c_min = greedy_coverage_order(z, maximise=False)
    r_mean = rand.mean(axis=0)
    lo, hi = scauc(c_min), scauc(c_max)
    rand_scauc = np.array([scauc(c) for c in rand])
    rand_sizes = [size_at(c) for c in rand]
    rows = [
        {"order": "greedy-max (true coverage)", "SCAUC": hi, "|S*|": size_at(c_max),
         "n_gamma": None, "SCAUC / random": hi / rand_scauc.mean(), "position": 1.0},
        {"order": f"random (mean of {n_random})", "SCAUC": float(rand_scauc.mean()),
         "|S*|": f"{np.mean([s for s in rand_sizes if s]):.1f}", "n_gamma": None,
         "SCAUC / random": 1.0, "position": (rand_scauc.mean() - lo) / (hi - lo)},
        {"order": "greedy-min (true coverage)", "SCAUC": lo, "|S*|": size_at(c_min),
         "n_gamma": None, "SCAUC / random": lo / rand_scauc.mean(), "position": 0.0},
    ]
    curves, results, timing = {}, {}, {"random": t_rand}
    for measure in [*SIMILARITIES, "pearson-beam3"]:
        base = measure.split("-")[0]
        beam = 3 if measure.endswith("beam3") else 1
        t0 = time.perf_counter()
        sim = results[base].info["similarity"] if base in results else similarity_matrix(z, base)
        res = prowl(z, base, beam=beam, sim=sim)
        timing[measure] = time.perf_counter() - t0
        results[measure] = res
        curves[measure] = res.coverage
        rows.append({"order": f"simba-{measure}", "SCAUC": res.scauc, "|S*|": res.size_at_target,
                     "n_gamma": res.n_gamma, "SCAUC / random": res.scauc / rand_scauc.mean(),
                     "position": (res.scauc - lo) / (hi - lo) if hi > lo else float("nan"),
                     "first 3": ", ".join(str(items[j]) for j in res.order[:3])})
    df = pd.DataFrame(rows)
    best = max(SIMILARITIES, key=lambda m: results[m].scauc)
    # figure
    n = z.shape[1]
    k = np.arange(1, n + 1)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    q5, q95 = np.quantile(rand, [0.05, 0.95], axis=0)
    ax.fill_between(k, q5, q95, color="0.85", label="random 5–95 %")
    ax.plot(k, r_mean, color="0.4", lw=2, label="random mean")
    ax.plot(k, c_max, "k--", lw=1.5, label="greedy-max")
    ax.plot(k, c_min, "k:", lw=1.5, label="greedy-min")
    for measure in SIMILARITIES:
        ax.plot(k, curves[measure], lw=1, label=measure)
    ax.axhline(0.95, color="r", lw=0.8)
    ax.set_xlabel("subset size k")
    ax.set_ylabel("coverage η = Pearson(MWR_full, MWR_S)")
    ax.set_title(f"SimBA prowl coverage: {name}")
    ax.set_xscale("log" if n > 20 else "linear")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    FIG.mkdir(parents=True, exist_ok=True)
    fig_path = FIG / f"simba_coverage_{name}.png"
    fig.savefig(fig_path, dpi=120)
    plt.close(fig)
    out = ["### Prowl (coverage η, SCAUC, |S*| at η ≥ 0.95, proxy size at γ = 0.95)", "",
           "`position` = (SCAUC − greedy-min) / (greedy-max − greedy-min); `n_gamma` = size at "
           "which the proxy coverage reached γ.", "", table(df), "",
           f"![coverage curves](figures/{fig_path.name})", "",
           "Timing (s): " + ", ".join(f"{m} {t:.1f}" for m, t in timing.items()), ""]
    return out, {"best": best, "results": results, "greedy_max": o_max}


def pounce_section(z: np.ndarray, order: np.ndarray, sizes: np.ndarray, n_splits: int,
                   noise_models: tuple[str, ...], best: str) -> list[str]:
    n = z.shape[1]
    rng = np.random.default_rng(0)
    rand_order = rng.permutation(n)
    # reference measured in the same run: predict every target by its training mean
    splits = model_splits(z.shape[0], n_splits=n_splits, seed=0)
    mean_mse = []
    for tr, te in splits:
        mu = np.nanmean(z[tr], axis=0)
        err = (z[te] - mu) ** 2
        mean_mse.append(np.nanmean(err))
    ref = float(np.mean(mean_mse))
    rows = []
    for predictor in REGRESSORS:
        for label, o in ((f"simba-{best}", order), ("random order", rand_order)):
            noises = (0.0, *NOISE) if (label != "random order" and predictor in noise_models) \
                else (0.0,)
            for nv in noises:
                t0 = time.perf_counter()
                s, mse = pounce_curve(z, o, sizes=sizes, predictor=predictor, noise_var=nv,
                                      n_splits=n_splits, seed=0)
                a = auc_mse(s, mse, n)
                rows.append({"predictor": predictor, "order": label, "σ²": nv,
                             "AUC-MSE": a, "AUC-MSE / mean-pred": a / ref,
                             "MSE k=1": float(mse[0]), f"MSE k={s[-1]}": float(mse[-1]),
                             "seconds": time.perf_counter() - t0})
    df = pd.DataFrame(rows)
    return ["### Pounce (held-out MSE on the normalised scale)", "",
            f"{n_splits} random 80/20 model splits; prefix sizes {list(map(int, sizes))}; "
            f"reference: predicting training means, MSE {ref:.4f}. Noise (σ² on the inputs) "
            f"for {', '.join(noise_models)}.", "", table(df), ""]


def _nanmean(values: list[float]) -> float:
    v = np.asarray(values, dtype=float)
    return float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else float("nan")


def method_section(matrix: ScoreMatrix, best: str, ks: list[int], n_splits: int) -> list[str]:
    method = get_method(f"simba-{best}")
    stats: dict[int, dict[str, list]] = {k: {"rmse": [], "cover": [], "cover_fin": [],
                                             "width": [], "finite": []} for k in ks}
    for s, (tr, te) in enumerate(model_splits(matrix.n_models, n_splits=n_splits, seed=1)):
        source, target = matrix.take(tr), matrix.take(te)
        # greedy prowl orders are nested: one fit at the largest k gives every smaller coreset
        order = method.make_selector(k=max(ks), seed=s).fit(source).selected_
        for k in ks:
            coreset = Coreset.from_indices(source, order[:k], method=f"simba-{best}")
            pred = method.make_predictor(seed=s).fit(source, coreset)
            out = pred.predict(target.values[:, coreset.indices])
            rest = np.setdiff1d(np.arange(matrix.n_items), coreset.indices)
            y = target.values[:, rest]
            ok = ~np.isnan(y) & np.isfinite(out.mean[:, rest])
            fin = ok & np.isfinite(out.width[:, rest])
            inside = (y >= out.lower[:, rest]) & (y <= out.upper[:, rest])
            st = stats[k]
            st["rmse"].append(np.sqrt(np.mean((out.mean[:, rest][ok] - y[ok]) ** 2)))
            st["cover"].append(inside[ok].mean())
            st["cover_fin"].append(inside[fin].mean() if fin.any() else np.nan)
            st["finite"].append(fin.sum() / ok.sum())
            st["width"].append(np.median(out.width[:, rest][fin]) if fin.any() else np.nan)
    rows = [{"k": k, "RMSE (native)": float(np.mean(st["rmse"])),
             "coverage90": float(np.mean(st["cover"])),
             "coverage90 (finite only)": _nanmean(st["cover_fin"]),
             "finite intervals": float(np.mean(st["finite"])),
             "median width": _nanmean(st["width"])} for k, st in stats.items()]
    return [f"### Method `simba-{best}` (ridge pounce, split-conformal 90 %)", "",
            f"{n_splits} random 80/20 model splits; unselected benchmarks of the held-out "
            "models, native units. Intervals are infinite where a benchmark has too few "
            "calibration models (counted as covering).", "", table(pd.DataFrame(rows)), ""]


#: What of this implementation comes from the paper, from the issue spec, or is our choice.
PROVENANCE: list[str] = [
    "### Provenance of the details",
    "",
    "Only the paper's **abstract** could be read (arXiv 2510.17998v1 HTML, ACL Anthology "
    "2025.findings-emnlp.711, OpenReview UIvWdSL4mz): the stored copies of the arXiv HTML "
    "page end at the first sentences of Section 1, and the authors' code "
    "(github.com/nishantsubramani/simba) is not in the code index searched. So:",
    "",
    "* **From the paper (abstract):** the three phases — stalk (dataset & model comparisons), "
    "prowl (a representative subset found from raw scores alone, judged by its coverage, "
    "with >= 95 % as the target level) and pounce (predicting held-out models from the "
    "subset, judged by mean-squared error and preserved model ranks) — and its headline "
    "numbers: >= 95 % coverage with 1/16 HELM, 1/58 MMLU and 21/74 BigBenchLite datasets.",
    "* **From the issue spec (not checkable against the paper's text):** the normalisation "
    "`max(0, (x − c)/(1 − c))`; stalk classes linear / exponential / power-law / none with "
    "an R² threshold of 0.5; the nine similarity measures; coverage η = Pearson(MWR(full), "
    "MWR(S)); SCAUC and |S*| at η >= 0.95; greedy PROXY_COVERAGE up to γ with an optional "
    "beam; the random (1000 runs), greedy-min and greedy-max baselines; ridge / kNN / MLP "
    "(1 and 2 hidden layers) pounce predictors; AUC-MSE; noise σ² ∈ {0.05, 0.1}.",
    "* **Our choices (documented in the module docstrings):** the six stalk regressors "
    "(linear, logarithmic, exponential, power-law, quadratic, cubic) and selection by "
    "adjusted R²; win = strictly higher score (ties are not wins); a model without "
    "comparable pairs gets MWR 0.5; a constant MWR vector has coverage 0; the "
    "distance-to-similarity maps; the proxy coverage `mean_j max_{s∈S} sim(j, s)`; SCAUC = "
    "mean of η(k), k = 1..n (area over k/n); AUC-MSE = trapezoid area of MSE over k/n "
    "divided by its range; the pounce protocol (random 80/20 model splits, prefix sizes, "
    "mean imputation, noise added to the regressor inputs); min-max scaling of "
    "native-scale columns; pairwise-complete handling of missing entries.",
    "* **Data caveat:** helm_lite_summary (and merged, as `helm/Mean win rate`) contains "
    "HELM's aggregate column `Mean win rate`, a win-rate summary of the other columns; on "
    "helm_lite_summary it alone has η = 0.994 (GSM8K, OpenbookQA and MedQA alone also reach "
    "0.95). The paper's HELM had 16 datasets; these matrices are not the paper's.",
    "",
]

def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", nargs="+", default=["helm_lite_summary", "merged"])
    ap.add_argument("--n-random", type=int, default=1000)
    ap.add_argument("--splits", type=int, default=5)
    ap.add_argument("--out", default=str(OUT / "simba.md"))
    args = ap.parse_args(argv)
    os.environ.setdefault("COREVAL_PROGRESS", "0")
    warnings.filterwarnings("ignore", category=ConvergenceWarning)
    command = "python benchmarks/simba.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = ["# SimBA: stalk, prowl, pounce", "",
            "Subramani, Gomez & Diab (2025), *SimBA: Simplifying Benchmark Analysis Using "
            "Performance Matrices Alone* (Findings of EMNLP). Scores normalised with "
            "`max(0, (x − chance)/(1 − chance))` (chance 0; native-scale columns min-max "
            "scaled first); missing entries handled pairwise-complete (see "
            "`coreval.simba`).", "", *provenance(command.strip()),
            *PROVENANCE]
    for name in args.datasets:
        t_all = time.perf_counter()
        matrix = read_npz(SHARED / "data" / f"{name}.npz")
        z = normalise_scores(matrix.values)
        items, models = [str(i) for i in matrix.items], [str(m) for m in matrix.models]
        n = z.shape[1]
        print(f"[{name}] {matrix.shape}", flush=True)
        text += [f"## {name} ({matrix.n_models} models × {n} benchmarks, "
                 f"{np.mean(~np.isnan(z)):.0%} observed)", ""]
        part, _ = stalk_section(z, items, models)
        text += part
        print(f"[{name}] stalk done", flush=True)
        part, pr = prowl_section(name, z, items, args.n_random)
        text += part
        print(f"[{name}] prowl done (best {pr['best']})", flush=True)
        if n <= 20:
            sizes, noise_models, splits = np.arange(1, n), REGRESSORS, args.splits
        else:
            sizes = np.unique(np.round(np.geomspace(1, n - 1, 9)).astype(int))
            noise_models, splits = ("ridge", "knn"), max(2, args.splits - 2)
        text += pounce_section(z, pr["results"][pr["best"]].order, sizes, splits,
                               noise_models, pr["best"])
        print(f"[{name}] pounce done", flush=True)
        ks = [1, 2, 3, 5] if n <= 20 else [1, 3, 5, 10]
        text += method_section(matrix, pr["best"], ks, args.splits)
        text += [f"Total time for {name}: {time.perf_counter() - t_all:.0f} s", ""]
    out = Path(args.out)
    write_markdown(out, "\n".join(text))
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
