"""The full item-level comparison: every selector family on the 8 shared matrices.

Runs, through :func:`coreval.harness.run_grid`, the methods of the mRMR paper's
binary comparison (random, random+, random++, anchor-points(+/++), lasso,
search+ with 1000 candidate subsets, gp-irt(+/++), metabench, irt-bayes, mrmr+,
mrmr++) on the 8 shared item-level matrices with the ``binned`` split,
M ∈ {15, 30, 50} source models, budgets 5 %, 10 %, 15 % and seeds 0-4, and
writes ``benchmarks/results/item_level.md``:

* σ⁻¹-aggregated RMSE, MAE, Kendall τ and Spearman ρ (mRMR paper, Eqs. 25-27)
  per M × budget × method, and the per-dataset tables;
* Nogueira's Φ̂ stability of the coresets across seeds;
* 90 % interval coverage and width (each method's own interval);
* median seconds per run (select + fit + predict);
* ``figures/item_level.png``: aggregated RMSE and τ vs budget, one panel per M
  (the layout of the paper's Figure 2).

Cells are stored in ``benchmarks/results/raw/item_level.parquet.parts/`` and a
re-run computes only the missing ones (``--methods`` runs a subset, ``--seeds`` some
seeds; the report covers every stored method, over the seeds whose every dataset × M ×
method × budget is stored, so that all methods are averaged over the same splits).

Usage::

    python benchmarks/item_level.py [--methods m1,m2] [--seeds 0,1] [--n-jobs 1] [--report-only]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from _results import command_line, provenance, write_markdown
from coreval.data import load_matrix
from coreval.harness import run_grid
from coreval.harness.store import read_results
from coreval.harness.summary import (
    dataset_sigmas,
    sigma_weighted_summary,
    stability_table,
    summarize,
)
from coreval.jax_cache import enable_compilation_cache

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
RAW = RESULTS / "raw" / "item_level.parquet"
DATASETS = ("arc_challenge", "ifeval", "openllm_math", "commonsense", "gsm", "math", "med_qa",
            "mmlu")
METHODS = ("random", "random+", "random++", "anchor-points", "anchor-points+",
           "anchor-points++", "lasso", "search+", "gp-irt", "gp-irt+", "gp-irt++", "metabench",
           "irt-bayes", "mrmr+", "mrmr++", "stack-random", "stack-mrmr", "stack-irt-anchors")
N_SOURCE = (15, 30, 50)
BUDGETS = (0.05, 0.10, 0.15)
SEEDS = tuple(range(5))
METRICS = ("rmse", "mae", "kendall", "spearman", "coverage90", "width90")


def run(methods: list[str], data_dir: Path, n_jobs: int,
        seeds: tuple[int, ...] = SEEDS, n_source: tuple[int, ...] = N_SOURCE,
        budgets: tuple[float, ...] = BUDGETS, raw: Path = RAW) -> float:
    """Run (or resume) the grid for ``methods`` into the store ``raw``; returns the wall
    time in seconds."""
    matrices = {name: load_matrix(name, data_dir=data_dir) for name in DATASETS}
    t0 = time.perf_counter()
    run_grid(matrices, methods, list(budgets), n_source=list(n_source), seeds=list(seeds),
             split="binned", out=raw, n_jobs=n_jobs)
    return time.perf_counter() - t0


def _stored_at(raw: Path) -> pd.DataFrame:
    """Every stored cell of the grid written to ``raw`` (its ``.parts`` folder)."""
    parts = sorted((raw.parent / (raw.name + ".parts")).glob("*.parquet"))
    if not parts:
        raise SystemExit(f"no stored cells under {raw}.parts; run without --report-only first")
    return pd.concat([read_results(p) for p in parts], ignore_index=True)


def _md(df: pd.DataFrame, floatfmt: dict[str, str]) -> list[str]:
    cols = list(df.columns)
    out = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    for row in df.itertuples(index=False):
        cells = []
        for c, v in zip(cols, row, strict=True):
            if isinstance(v, float | np.floating):
                cells.append("—" if not np.isfinite(v) else format(v, floatfmt.get(c, ".3f")))
            else:
                cells.append(str(v))
        out.append("| " + " | ".join(cells) + " |")
    return out


def method_table(cells: pd.DataFrame, sigmas: dict[str, float],
                 count: str = "runs") -> pd.DataFrame:
    """One row per method: σ⁻¹-aggregated RMSE (pp), Kendall τ, coverage90 and width90
    (pp), the median seconds per run and the number of runs (column ``count``), sorted
    by RMSE. ``cells`` are successful runs with a ``seconds`` column."""
    agg = sigma_weighted_summary(cells, sigmas, metrics=("rmse", "kendall", "coverage90",
                                                         "width90")).set_index("method")
    return pd.DataFrame({
        "method": agg.index, "rmse": 100 * agg["rmse"].to_numpy(),
        "kendall": agg["kendall"].to_numpy(), "coverage90": agg["coverage90"].to_numpy(),
        "width90": 100 * agg["width90"].to_numpy(),
        "seconds": cells.groupby("method")["seconds"].median().reindex(agg.index).to_numpy(),
        count: cells.groupby("method").size().reindex(agg.index).to_numpy(),
    }).sort_values("rmse")


#: Number formats of :func:`method_table`'s columns for :func:`_md`.
METHOD_TABLE_FORMAT = {"rmse": ".2f", "kendall": ".3f", "coverage90": ".2f", "width90": ".1f",
                       "seconds": ".1f", "runs": ".0f", "splits": ".0f"}


def aggregate(df: pd.DataFrame, data_dir: Path) -> pd.DataFrame:
    """σ⁻¹-weighted metrics per method × M × budget, plus Φ̂ and median seconds."""
    matrices = {name: load_matrix(name, data_dir=data_dir) for name in DATASETS}
    ok = df[df["error"].isna()].copy()
    agg = sigma_weighted_summary(ok, dataset_sigmas(matrices), metrics=METRICS)
    stab = stability_table(ok).groupby(["method", "budget", "n_source"])["phi"].mean()
    ok["seconds"] = ok[["seconds_select", "seconds_fit", "seconds_predict"]].sum(axis=1)
    sec = ok.groupby(["method", "budget", "n_source"])["seconds"].median()
    runs = df.groupby(["method", "budget", "n_source"]).size()
    errs = df[df["error"].notna()].groupby(["method", "budget", "n_source"]).size()
    idx = pd.MultiIndex.from_frame(agg[["method", "budget", "n_source"]])
    agg["phi"] = stab.reindex(idx).to_numpy()
    agg["seconds"] = sec.reindex(idx).to_numpy()
    agg["runs"] = runs.reindex(idx).to_numpy()
    agg["failed"] = errs.reindex(idx).fillna(0).astype(int).to_numpy()
    return agg


def figure(agg: pd.DataFrame, path: Path) -> None:
    """Aggregated RMSE and τ vs budget, one column per M (the paper's Figure 2 layout)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ms = sorted(agg["n_source"].dropna().unique())
    fig, axes = plt.subplots(2, len(ms), figsize=(4.2 * len(ms), 7), sharex=True,
                             squeeze=False)
    cmap = plt.get_cmap("tab20")
    methods = sorted(agg["method"].unique())
    for j, m in enumerate(ms):
        g = agg[agg["n_source"] == m]
        for i, (metric, label) in enumerate((("rmse", "RMSE (pp, σ⁻¹-weighted)"),
                                             ("kendall", "Kendall τ (σ⁻¹-weighted)"))):
            ax = axes[i, j]
            for c, method in enumerate(methods):
                h = g[g["method"] == method].sort_values("budget")
                y = h[metric] * (100 if metric == "rmse" else 1)
                style = "-" if ("mrmr" in method or "irt" in method) else "--"
                ax.plot(100 * h["budget"], y, style, marker="o", ms=3, color=cmap(c % 20),
                        label=method)
            ax.set_title(f"M = {int(m)} source models")
            ax.set_ylabel(label)
            ax.grid(alpha=0.3)
            if i == 1:
                ax.set_xlabel("budget (% of items)")
    axes[0, -1].legend(fontsize=7, loc="upper right", ncol=2)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)


def coverage_by_dataset(df: pd.DataFrame, n_source: int = 30, budget: float = 0.10,
                        methods: tuple[str, ...] = ("irt-bayes", "random+", "gp-irt",
                                                    "metabench", "mrmr+")) -> list[str]:
    """Per-dataset 90 % coverage and width (pp), mean over seeds, at one M and budget."""
    ok = df[df["error"].isna() & (df["n_source"] == n_source)
            & np.isclose(df["budget"], budget) & df["method"].isin(methods)]
    if ok.empty:
        return []
    tab = ok.groupby(["dataset", "method"]).agg(coverage90=("coverage90", "mean"),
                                                width90=("width90", "mean")).unstack("method")
    present = [m for m in methods if m in tab["coverage90"].columns]
    lines = [f"## 90 % interval coverage and width per dataset (M = {n_source}, "
             f"budget {budget:.0%}, mean over seeds)", "",
             "Each cell: coverage / mean width in pp of the method's default interval (see "
             "above; irt-bayes: the posterior predictive with its misfit term learnt out of "
             "fold).", "",
             "| dataset | " + " | ".join(present) + " |", "|---|" + "---|" * len(present)]
    for d in tab.index:
        cells = [f"{tab['coverage90'][m][d]:.2f} / {100 * tab['width90'][m][d]:.1f}"
                 for m in present]
        lines.append(f"| {d} | " + " | ".join(cells) + " |")
    means = [f"{tab['coverage90'][m].mean():.2f} / {100 * tab['width90'][m].mean():.1f}"
             for m in present]
    lines.append("| **mean** | " + " | ".join(means) + " |")
    return [*lines, ""]


def headline(agg: pd.DataFrame) -> list[str]:
    """The mRMR paper's claim per M × budget: mrmr++ vs gp-irt, anchor-points, random++."""
    rivals = ["gp-irt", "anchor-points", "random++"]
    if not {"mrmr++", *rivals} <= set(agg["method"]):
        return []  # a partial grid without the methods the claim compares
    lines = ["## The mRMR paper's headline, per setting", "",
             "Does mrmr++ have a lower σ⁻¹-aggregated RMSE and a higher τ than each of "
             f"{', '.join(rivals)} (the paper's claim, made at M = 30)? `best` = the method "
             "with the lowest RMSE in that setting.", "",
             "| M | budget | mrmr++ RMSE | mrmr++ τ | lower RMSE than all three | higher τ than "
             "all three | best (RMSE) |", "|---|---|---|---|---|---|---|"]
    for (m, b), g in agg.groupby(["n_source", "budget"]):
        g = g.set_index("method")
        if "mrmr++" not in g.index or not set(rivals) <= set(g.index):
            continue
        mine = g.loc["mrmr++"]
        lower = bool((mine["rmse"] < g.loc[rivals, "rmse"]).all())
        higher = bool((mine["kendall"] > g.loc[rivals, "kendall"]).all())
        lines.append(f"| {int(m)} | {b:.0%} | {mine['rmse']:.2f} | {mine['kendall']:.3f} | "
                     f"{'yes' if lower else 'no'} | {'yes' if higher else 'no'} | "
                     f"{g['rmse'].idxmin()} |")
    return [*lines, ""]


def in_budgets(df: pd.DataFrame, budgets: tuple[float, ...]) -> np.ndarray:
    """Which rows of ``df`` have one of ``budgets`` (compared with ``np.isclose``)."""
    return np.isclose(df["budget"].to_numpy(float)[:, None], budgets).any(axis=1)


def complete_seeds(df: pd.DataFrame, n_source: tuple[int, ...] = N_SOURCE,
                   budgets: tuple[float, ...] = BUDGETS) -> list[int]:
    """Seeds with a stored run of every dataset × M × method × budget of the grid."""
    cells = ["dataset", "n_source", "method", "budget"]
    grid = df[df["method"].isin(METHODS) & df["dataset"].isin(DATASETS)
              & df["n_source"].isin(n_source)
              & in_budgets(df, budgets)]
    counts = grid.drop_duplicates([*cells, "seed"]).groupby("seed").size()
    expected = len(DATASETS) * len(n_source) * len(METHODS) * len(budgets)
    return sorted(int(s) for s in counts[counts == expected].index)


def report(data_dir: Path, command: str, wall: float | None,
           n_source: tuple[int, ...] = N_SOURCE, out: Path = RESULTS / "item_level.md",
           budgets: tuple[float, ...] = BUDGETS, raw: Path = RAW) -> str:
    stored = _stored_at(raw)
    stored = stored[stored["n_source"].isin(n_source) & in_budgets(stored, budgets)]
    # every method is averaged over the same splits: a seed counts once it is complete
    seeds = (complete_seeds(stored, n_source, budgets)
             or sorted(int(s) for s in stored["seed"].unique()))
    df = stored[stored["seed"].isin(seeds)]
    pending = stored[~stored["seed"].isin(seeds)]
    agg = aggregate(df, data_dir)
    figure(agg, RESULTS / "figures" / f"{out.stem}.png")
    n_err = int(df["error"].notna().sum())
    total = float(df[["seconds_select", "seconds_fit", "seconds_predict"]].sum().sum())
    seed_text = (f"seeds {seeds[0]}-{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1))
                 and len(seeds) > 1 else "seed " + ", ".join(map(str, seeds)))
    lines = ["# Item-level comparison: all methods, 8 matrices", "",
             *provenance(command),
             f"Binned split; M ∈ {{{', '.join(map(str, n_source))}}} source models, "
             f"budget{'s' if len(budgets) > 1 else ''} "
             f"{'/'.join(f'{100 * b:g}' for b in budgets)} %, {seed_text}; "
             f"{len(df)} stored runs, {n_err} failed; summed select + fit + predict time "
             f"{total / 3600:.2f} h"
             + (f" (wall {wall:.0f} s for the last invocation, which ran only the cells not "
                "already stored)" if wall is not None else "")
             + ". Machine: the shared 2-core CPU box, so seconds are indicative only."
             + (f" {len(pending)} runs of the incomplete seed(s) "
                f"{', '.join(map(str, sorted(pending['seed'].unique())))} are stored and not "
                "reported until their seed is complete." if len(pending) else ""), "",
             "Metrics are on the target models only (all models not among the M sources). "
             "Each metric is averaged over seeds per dataset, then combined across datasets "
             "with weights ∝ 1/σ_d, σ_d = std of dataset d's true scores (mRMR paper, "
             "Eqs. 25-27). RMSE, MAE and width in percentage points; coverage90 = fraction of "
             "target models inside the method's default nominal 90 % interval "
             "(`calibration=\"auto\"`: split conformal on out-of-fold residuals with the "
             "selection re-run per fold wherever the selector reads the source scores, metabench "
             "included, and for the stacks on their own cross-fitted residuals; otherwise the "
             "predictor's own: jackknife+ for the ridge refits on random items, also where the "
             "selection check chose a random coreset, split conformal for random, the "
             "posterior for irt-bayes; each raw cell's `interval` column says which; the "
             "half-width of the `cv` and stack intervals follows a quadratic variance "
             "function of the prediction fitted to the out-of-fold residuals, "
             "`interval_scale=\"quadratic\"`, the default); Φ̂ = "
             "Nogueira et al.'s stability of the coresets across seeds (mean over datasets; — "
             "with one seed); seconds = median select + fit + predict per run (a fit reused "
             "from another run counts with the seconds it took, so the summed time above "
             "counts a shared fit in every run that uses it).", "",
             f"![item level](figures/{out.stem}.png)", ""]
    show = agg.copy()
    for c in ("rmse", "mae", "width90"):
        show[c] = 100 * show[c]
    cols = ["method", "rmse", "mae", "kendall", "spearman", "coverage90", "width90", "phi",
            "seconds", "runs", "failed"]
    fmt = {"rmse": ".2f", "mae": ".2f", "width90": ".1f", "coverage90": ".2f", "phi": ".2f",
           "seconds": ".2f"}
    lines += headline(show)
    for (m, b), g in show.groupby(["n_source", "budget"]):
        lines += [f"## M = {int(m)}, budget {b:.0%} (σ⁻¹-aggregated)", ""]
        lines += _md(g.sort_values("rmse")[cols], fmt)
        lines.append("")
    lines += ["## Per dataset (mean over seeds)", ""]
    per = summarize(df[df["error"].isna()], ("rmse", "mae", "kendall", "spearman",
                                              "coverage90"))
    per = per.rename(columns={f"{c}_mean": c for c in ("rmse", "mae", "kendall", "spearman",
                                                          "coverage90")})
    per["rmse"] *= 100
    per["mae"] *= 100
    for (m, b), g in per.groupby(["n_source", "budget"]):
        lines += [f"### M = {int(m)}, budget {b:.0%}", ""]
        wide = g.pivot_table(index="method", columns="dataset", values="rmse")
        lines += ["RMSE (pp):", ""]
        lines += _md(wide.reset_index(), {c: ".2f" for c in wide.columns})
        wide = g.pivot_table(index="method", columns="dataset", values="kendall")
        lines += ["", "Kendall τ:", ""]
        lines += _md(wide.reset_index(), {})
        lines.append("")
    lines += coverage_by_dataset(df)
    if n_err:
        lines += ["## Failed runs", ""]
        for r in df[df["error"].notna()].itertuples():
            lines.append(f"- {r.dataset} {r.method} M={r.n_source} {r.budget:.0%} seed "
                         f"{r.seed}: {r.error}")
        lines.append("")
    text = "\n".join(lines) + "\n"
    write_markdown(out, text)
    return text


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data-dir", type=Path, default=Path(
        os.environ.get("COREVAL_DATA_DIR", REPO.parent / "shared" / "data")))
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--n-jobs", type=int, default=1)
    ap.add_argument("--seeds", default=",".join(map(str, SEEDS)),
                    help="split seeds to run (comma-separated; the report covers every seed "
                         "whose cells are all stored)")
    ap.add_argument("--n-source", default=",".join(map(str, N_SOURCE)),
                    help="numbers of source models to run and report (comma-separated)")
    ap.add_argument("--budgets", default=",".join(map(str, BUDGETS)),
                    help="budgets (fractions of the items) to run and report (comma-separated)")
    ap.add_argument("--raw", type=Path, default=RAW,
                    help="the grid's store (its cells go under <raw>.parts/); another store "
                         "keeps a partial grid apart from the full one")
    ap.add_argument("--out", type=Path, default=RESULTS / "item_level.md",
                    help="markdown file to write (its figure: figures/<stem>.png)")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args(argv)
    n_source = tuple(int(m) for m in args.n_source.split(",") if m)
    budgets = tuple(float(b) for b in args.budgets.split(",") if b)
    wall = None
    if not args.report_only:
        # as the CLI does: a later run loads the compiled IRT fits instead of compiling
        # each new shape again (about 25 s per shape; coreval.jax_cache)
        enable_compilation_cache()
        wall = run([m for m in args.methods.split(",") if m], args.data_dir, args.n_jobs,
                   tuple(int(s) for s in args.seeds.split(",") if s), n_source, budgets,
                   args.raw)
    text = report(args.data_dir, command_line("item_level.py", argv), wall, n_source, args.out,
                  budgets, args.raw)
    print(text[:3000])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
