"""Gaussian-process regression imputation vs the Gaussian conditional, Smola's Table 4 protocol.

The benchmark-level matrices MTEB and MERGED; ``run_grid(split="kfold", folds=10,
holdout=0.1)``, the protocol's 10 folds, k = 5 benchmarks chosen on the training models
by greedy MI or greedy variance reduction (with its exchange step), the rest imputed for
the held-out models by the Gaussian conditional mean (``gauss-*``, the protocol's imputer)
or by one Gaussian-process regression per benchmark (``gpr-*``,
:class:`coreval.prediction.gp_imputer.GPImputer`) on the same selections, its intervals
with the default cross-conformal factor and, in the rows marked
``calibration_folds=None``, with the leave-one-out factor alone. R² pooled in the
training-standardised space, mean over folds (with the folds where the GP is higher);
coverage and width (standardised units) of the 90 % intervals over the unselected
observed cells; seconds per fold.

Run from the repository root::

    python benchmarks/gp_imputer.py [--n-jobs 2]

Cells are stored in ``benchmarks/results/raw/gp_imputer.parquet.parts/`` and, for the
variants with options, ``raw/gp_imputer_<label>.parquet.parts/`` (a re-run computes only
the missing ones); the report is ``benchmarks/results/gp_imputer.md``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("COREVAL_PROGRESS", "0")

import pandas as pd

from _results import RESULTS, SHARED, command_line, grid_runs, provenance, write_markdown

OUT = RESULTS / "raw" / "gp_imputer.parquet"
#: The issue's goals for R² at k = 5 (Smola's Table 4 reports 0.76 and 0.51 with MI).
GOALS = {"mteb": 0.80, "merged": 0.60}
PAIRS = (("gauss-variance", "gpr-variance"), ("gauss-mi", "gpr-mi"))
#: Variants run with options, each in a store of its own: label -> (store suffix, options).
VARIANTS = {"calibration_folds=None": ("loo", {"calibration_folds": None})}
K = 5


def report(df: pd.DataFrame, command: str) -> str:
    """The markdown of ``gp_imputer.md``."""
    df, failed = grid_runs(df, unit="fold")
    lines = ["# Gaussian-process regression imputation on MTEB and MERGED", "",
             *provenance(command),
             f"Smola's Table 4 protocol: the 10 folds of `split=\"kfold\"` (holdout 0.1), "
             f"k = {K} benchmarks chosen on the training models, the rest imputed for the "
             "held-out models. `gauss-*`: the Gaussian conditional mean of the EM "
             "correlation (the protocol's imputer); `gpr-*`: the same conditional mean plus "
             "one Gaussian-process correction per benchmark on the selected ones (ARD RBF "
             "kernel, hyperparameters by marginal likelihood on the training models; "
             "`coreval.prediction.gp_imputer.GPImputer`), on the same selections. Its "
             "interval is the GP predictive scaled by the conformal quantile of the GP's "
             "leave-one-out scores and, by default, by a cross-conformal factor: the "
             "method, selection included, re-run without each of 5 folds of the training "
             "models scores the fold's models (`calibration_folds=None`: the leave-one-out "
             "factor alone). R²: "
             "pooled in the training-standardised space, mean over folds; `folds higher`: "
             "the folds where the GP's R² is above the Gaussian's with the same selector; "
             "coverage90 and width90 (standardised units) of the 90 % intervals over the "
             "unselected observed cells; seconds: median per fold.", "",
             "| dataset | goal R² | method | R² | fold range | folds higher | coverage90 | "
             "width90 | seconds |", "|---|---|---|---|---|---|---|---|---|"]
    for name in sorted(df["dataset"].unique()):
        part = df[df["dataset"] == name]
        for gauss, gpr in PAIRS:
            a = part[(part["method"] == gauss) & (part["variant"] == "")].set_index("seed")
            if not len(a):
                continue
            rows = [(gauss, a, "—")]
            for variant in ("", *VARIANTS):
                b = part[(part["method"] == gpr) & (part["variant"] == variant)]
                if len(b):
                    b = b.set_index("seed")
                    higher = int((b["r2"] > a["r2"].reindex(b.index)).sum())
                    label = f"{gpr} ({variant})" if variant else gpr
                    rows.append((label, b, f"{higher} / {len(b)}"))
            for method, x, tally in rows:
                lines.append(
                    f"| {name} | {GOALS.get(name, float('nan')):.2f} | {method} | "
                    f"{x['r2'].mean():.3f} | {x['r2'].min():.3f}–{x['r2'].max():.3f} | "
                    f"{tally} | {x['coverage90'].mean():.3f} | {x['width90'].mean():.2f} | "
                    f"{x['seconds'].median():.1f} |")
    lines += ["", "Not a blind test: the GP correction was designed on these two matrices "
              "(a GP on the selected benchmarks alone, without the Gaussian conditional as "
              "its mean, reached R² 0.84 on MTEB but 0.33 on MERGED, where most cells are "
              "missing and the conditional borrows strength across benchmarks). The "
              "cross-conformal factor was added after the leave-one-out factor alone was "
              "seen to under-cover here; it is checked beside that on simulated benchmarks "
              "(`tests/test_gp_imputer.py`).", "", *failed]
    return "\n".join(lines) + "\n"


def _variant_store(suffix: str) -> Path:
    return OUT.with_name(f"gp_imputer_{suffix}.parquet")


def main(argv: list[str] | None = None) -> int:
    from coreval.data.npz import read_npz
    from coreval.harness import run_grid
    from coreval.harness.store import read_results

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=SHARED / "data")
    parser.add_argument("--n-jobs", type=int, default=1)
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args(argv)
    methods = [m for pair in PAIRS for m in pair]
    if not args.report_only:
        datasets = {n: read_npz(args.data_dir / f"{n}.npz", name=n) for n in GOALS}
        run_grid(datasets, methods, [K], split="kfold", folds=10, holdout=0.1, seeds=None,
                 out=OUT, n_jobs=args.n_jobs)
        gprs = [gpr for _, gpr in PAIRS]
        for suffix, options in VARIANTS.values():
            run_grid(datasets, gprs, [K], split="kfold", folds=10, holdout=0.1, seeds=None,
                     out=_variant_store(suffix), n_jobs=args.n_jobs,
                     method_options={m: options for m in gprs})
    frames = [read_results(OUT).assign(variant="")]
    frames += [read_results(_variant_store(suffix)).assign(variant=label)
               for label, (suffix, _) in VARIANTS.items()
               if _variant_store(suffix).exists()]
    df = pd.concat(frames, ignore_index=True)
    text = report(df[df["method"].isin(methods)], command_line("gp_imputer.py", argv))
    print(write_markdown(RESULTS / "gp_imputer.md", text))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
