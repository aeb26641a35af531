"""gp-irt on the three matrices where it is > 0.5 pp behind the reference at 5 %: fit settings.

Runs gp-irt (binned split, M = 30, 5 %, seeds 0-4) on med_qa, commonsense and
openllm_math with the IRT fit options given as a Python dict, and prints the mean
RMSE per dataset (pp). Used for the "gp-irt vs reference" section of
benchmarks/results/irt_methods.md.

Usage::

    python benchmarks/gpirt_settings.py '{"learning_rate": 0.03, "num_steps": 3000}' TAG
"""

import ast
import os
import sys
import warnings
from pathlib import Path

from coreval.data import load_matrix
from coreval.harness import run_grid

REPO = Path(__file__).resolve().parents[1]
DATASETS = ("med_qa", "commonsense", "openllm_math")


def main() -> None:
    warnings.filterwarnings("ignore")
    data_dir = Path(os.environ.get("COREVAL_DATA_DIR", REPO.parent / "shared" / "data"))
    options, tag = ast.literal_eval(sys.argv[1]), sys.argv[2]
    matrices = {d: load_matrix(d, data_dir=data_dir) for d in DATASETS}
    out = REPO / "benchmarks" / "results" / "raw" / f"gpirt_settings_{tag}.parquet"
    df = run_grid(matrices, ["gp-irt"], [0.05], n_source=[30], seeds=range(5), split="binned",
                  out=out, method_options={"gp-irt": options}, progress=False)
    print(tag, (df.groupby("dataset")["rmse"].mean() * 100).round(2).to_dict(), flush=True)


if __name__ == "__main__":
    main()
