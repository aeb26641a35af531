"""The paths, provenance lines and writer shared by the scripts that fill ``benchmarks/results/``.

Every results file names the command that made it and the coreval version that ran it::

    Command: `python benchmarks/NAME.py ...`

    coreval version: X.Y.Z.

The scripts run as ``python benchmarks/NAME.py``, so this folder is on ``sys.path`` and they
import this module as ``_results``.
"""

from __future__ import annotations

import os
from pathlib import Path

import coreval
from coreval._atomic import write_text_atomic

#: The repository root.
REPO = Path(__file__).resolve().parents[1]
#: The shared data and anchors (``../shared`` beside the repository, or ``$COREVAL_SHARED_DIR``).
SHARED = Path(os.environ.get("COREVAL_SHARED_DIR", REPO.parent / "shared"))
#: Where the results files go.
RESULTS = REPO / "benchmarks" / "results"
#: The 8 item-level LLM matrices of the mRMR paper's grid (σ⁻¹-aggregated together).
LLM = ("arc_challenge", "commonsense", "gsm", "ifeval", "math", "med_qa", "mmlu",
       "openllm_math")
#: The GLUE classifier matrices kept for robustness checks.
GLUE = ("mrpc", "sst2")


def version_line() -> str:
    """The ``coreval version: X.Y.Z.`` line of a results file.

    Returns
    -------
    str
        The line, without a newline, for the coreval that is imported.
    """
    return f"coreval version: {coreval.__version__}."


def provenance(command: str, note: str = "") -> list[str]:
    """The markdown lines that open a results file: its command, then the coreval version.

    Parameters
    ----------
    command : str
        The command line that made the file, shown in backticks (outer blanks removed).
    note : str, optional
        Text that follows the closing backtick on the same line, e.g.
        ``" (wall 60 s on the shared 2-core machine)."``.

    Returns
    -------
    list of str
        ``["Command: `...`<note>", "", "coreval version: X.Y.Z.", ""]``.
    """
    return [f"Command: `{command.strip()}`{note}", "", version_line(), ""]


def write_markdown(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating its folder.

    Parameters
    ----------
    path : str or os.PathLike
        The markdown file to write.
    text : str
        Its whole content, written as given.

    Returns
    -------
    pathlib.Path
        ``path``. A temporary file in the same folder is moved onto it with ``os.replace``,
        so an interrupted run leaves the previous file intact.
    """
    return write_text_atomic(path, text)


def stored_rows(raw: Path, datasets) -> list[dict]:
    """The rows of every JSON part under ``raw`` (one list of rows per file), for ``datasets``.

    Parameters
    ----------
    raw : pathlib.Path
        The folder a resumable script writes one part per finished unit of work to.
    datasets : iterable of str
        Keep the rows whose ``"dataset"`` is one of these.

    Returns
    -------
    list of dict
        Raises ``SystemExit`` naming ``raw`` when it holds no part.
    """
    import json

    parts = [json.loads(p.read_text()) for p in sorted(Path(raw).glob("*.json"))]
    if not parts:
        raise SystemExit(f"no stored parts under {raw}; run without --report-only first")
    keep = set(datasets)
    return [row for part in parts for row in part if row["dataset"] in keep]


def command_line(script: str, argv: list[str] | None) -> str:
    """``python benchmarks/SCRIPT ARGS`` as the user typed it, without ``--report-only``."""
    import sys

    given = [a for a in (sys.argv[1:] if argv is None else argv) if a != "--report-only"]
    return f"python benchmarks/{script} {' '.join(given)}".strip()


def grid_runs(df, unit: str = "seed") -> tuple:
    """The successful runs of a :func:`coreval.harness.run_grid` frame and a note on the rest.

    Parameters
    ----------
    df : pandas.DataFrame
        One row per run, with ``error`` and the ``seconds_select`` / ``seconds_fit`` /
        ``seconds_predict`` columns.
    unit : str
        What the ``seed`` column counts, for the note (``"seed"``, or ``"fold"``).

    Returns
    -------
    (pandas.DataFrame, list of str)
        The runs without an error, with ``seconds`` = select + fit + predict; and the
        markdown lines naming the failed runs (none when every run succeeded).
    """
    failed = df["error"].notna() & (df["error"] != "")
    runs = df[~failed].assign(seconds=lambda d: d[["seconds_select", "seconds_fit",
                                                   "seconds_predict"]].sum(axis=1))
    note = ["Failed cells: " + "; ".join(
        f"{r.dataset} {r.method} {unit} {r.seed}: {r.error}" for r in df[failed].itertuples()),
        ""] if failed.any() else []
    return runs, note


def predict_split(matrix, kind: str, seed: int, n_source: int, method: str, k: int,
                  **options) -> tuple:
    """Fit ``method`` with ``k`` items on one split's source models and predict its targets.

    Parameters
    ----------
    matrix : coreval.data.ScoreMatrix
        The whole matrix.
    kind, seed, n_source
        The split (:func:`coreval.data.splits.make_split`).
    method : str
        A registered method, fitted by :func:`coreval.pipeline.fit_method` with its
        defaults and ``options``; its warnings are silenced.
    k : int
        The coreset size.

    Returns
    -------
    (ScoreMatrix, ScoreMatrix, FittedMethod, Prediction, float)
        The source and target matrices, the fitted method, its prediction of the targets
        and the seconds the fit and prediction took.
    """
    import time
    import warnings

    from coreval.data.splits import make_split
    from coreval.methods import get_method
    from coreval.pipeline import fit_method

    split = make_split(matrix, kind, seed=seed, n_source=n_source)
    source, target = matrix.take(split.source), matrix.take(split.target)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fitted = fit_method(get_method(method), source, k, seed=seed, **options)
        pred = fitted.predict_array(target.values[:, fitted.coreset.indices])
    return source, target, fitted, pred, time.perf_counter() - t0
