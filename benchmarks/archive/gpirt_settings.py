"""gp-irt against the reference ``gpirt1`` under different IRT fit settings.

Runs gp-irt (binned split, M = 30, seeds 0-4) on the eight shared item-level
matrices at 5 % and 10 % with the IRT fit options given as a Python dict and
prints, per dataset × budget, the mean RMSE (pp), the reference's and the
difference, then how many of the 16 rows are within 0.5 pp. Used for the
"gp-irt fit settings" section of benchmarks/results/irt_methods.md.

Usage::

    python benchmarks/gpirt_settings.py '{"priors": "weak"}' TAG [--datasets med_qa gsm]
"""

import argparse
import ast
import warnings

import pandas as pd

from coreval.data import load_matrix
from coreval.harness import run_grid
from irt_methods import DATASETS, REPO, SHARED, TOLERANCE_PP, load_reference


def reference() -> pd.Series:
    """Mean RMSE (pp) of the reference ``gpirt1`` per (dataset, budget), binned split."""
    ref = load_reference(SHARED / "anchors" / "mrmr_eval" / "results.csv")
    ref = ref[ref["method"] == "gpirt1"]
    ref = ref.assign(budget=ref["coreset"].str.rstrip("%").astype(float) / 100)
    return ref.groupby(["dataset", "budget"])["rmse_pp"].mean()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("options", help="IRT fit options of gp-irt, a Python dict literal")
    ap.add_argument("tag", help="name of the raw result file")
    ap.add_argument("--datasets", nargs="+", default=list(DATASETS))
    ap.add_argument("--budgets", nargs="+", type=float, default=[0.05, 0.1])
    args = ap.parse_args()
    warnings.filterwarnings("ignore")
    options = {"show_progress": False, **ast.literal_eval(args.options)}
    matrices = {d: load_matrix(d, data_dir=SHARED / "data") for d in args.datasets}
    out = REPO / "benchmarks" / "results" / "raw" / f"gpirt_settings_{args.tag}.parquet"
    df = run_grid(matrices, ["gp-irt"], args.budgets, n_source=[30], seeds=range(5),
                  split="binned", out=out, method_options={"gp-irt": options}, progress=False)
    table = pd.DataFrame({"rmse": df.groupby(["dataset", "budget"])["rmse"].mean() * 100})
    table = table.join(reference().rename("ref"))
    table["diff"] = table["rmse"] - table["ref"]
    print(table.round(2).to_string())
    within = int((table["diff"] <= TOLERANCE_PP).sum())
    print(f"{args.tag}: {within}/{len(table)} rows within {TOLERANCE_PP} pp, mean diff "
          f"{table['diff'].mean():+.2f} pp, worst {table['diff'].max():+.2f} pp", flush=True)


if __name__ == "__main__":
    main()
