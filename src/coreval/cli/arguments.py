"""The command line's arguments: the options the commands share, and their parsing and checks."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Annotated

import typer

from coreval.errors import CorevalError


def n_jobs_value(value: int) -> int:
    if value == 0 or value < -1:
        raise typer.BadParameter(f"must be a positive number of workers or -1 (all cores), "
                                 f"got {value}")
    return value


def open_unit(value: float) -> float:
    if not 0.0 < value < 1.0:
        raise typer.BadParameter(f"must be strictly between 0 and 1, got {value}")
    return value


def out_file(path: Path | None) -> Path | None:
    """An output file path: refuse a folder (the file would be written inside nothing)."""
    if path is not None and path.is_dir():
        raise CorevalError(f"--out {path} is a folder; give a file name")
    return path


def csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def count_value(value: str, what: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise CorevalError(f"{what} takes whole numbers (or 'all'), got {value!r}") from None
    if n < 1:
        raise CorevalError(f"{what} must be positive, got {n}")
    return n


def budgets_value(value: str) -> list[float]:
    out = []
    for v in csv_list(value):
        try:
            out.append(float(v))
        except ValueError:
            raise CorevalError(f"budget {v!r} is not a number") from None
    return out


def method_options(pairs: list[str] | None, reserved: tuple[str, ...] = ()) -> dict[str, object]:
    """``["degree=3", "scheme=mid"]`` → ``{"degree": 3, "scheme": "mid"}`` (Python literals or text).

    A key in ``reserved`` is set by the command's own flag (``--seed``, ``--calibration``,
    ...) and is an error here, rather than a clash or a value quietly overridden.
    """
    out: dict[str, object] = {}
    for pair in pairs or []:
        key, sep, text = pair.partition("=")
        if not sep or not key.strip():
            raise CorevalError(f"--option takes KEY=VALUE, got {pair!r}")
        if key.strip() in reserved:
            raise CorevalError(f"--option {key.strip()}: give it as --{key.strip()}")
        try:
            value = ast.literal_eval(text)
        except (ValueError, SyntaxError):
            value = text
        out[key.strip()] = value
    return out


#: Options that predict and compare take as flags of their own.
REFIT_FLAGS = ("method", "budget", "seed", "calibration")

OptionsOpt = Annotated[list[str] | None, typer.Option(
    "--option", "-o", help="Method option KEY=VALUE, repeatable (e.g. -o degree=3); "
    "an option the method does not accept is an error listing the accepted ones.")]



def lm_eval_options(metric: list[str] | None, filter_: str | None,
                     tasks: str | None) -> dict[str, object]:
    """``--metric [TASK=]KEY``, ``--filter``, ``--tasks`` → :func:`read_lm_eval` options."""
    options: dict[str, object] = {}
    per_task: dict[str, str] = {}
    for entry in metric or []:
        task, sep, key = entry.partition("=")
        if not sep:
            options["metric"] = entry.strip()
        elif not task.strip() or not key.strip():
            raise CorevalError(f"--metric takes KEY or TASK=KEY, got {entry!r}")
        else:
            per_task[task.strip()] = key.strip()
    if per_task:
        if "metric" in options:
            raise CorevalError("--metric: give either one KEY for every task or TASK=KEY "
                               "entries (others get the automatic choice), not both")
        options["metric"] = per_task
    if filter_:
        options["filter"] = filter_
    if tasks:
        options["tasks"] = csv_list(tasks)
    return options


LmMetricOpt = Annotated[list[str] | None, typer.Option(
    "--metric", help="lm-eval logs: per-sample metric, KEY for every task or TASK=KEY "
    "(repeatable); default: acc_norm where a task logs it, else acc, else exact_match, ...")]
LmFilterOpt = Annotated[str | None, typer.Option(
    "--filter", help="lm-eval logs: the filter of tasks logged under several (e.g. "
    "strict-match).")]
LmTasksOpt = Annotated[str | None, typer.Option(
    "--tasks", help="lm-eval logs: comma-separated tasks to read (default: all).")]


# Options shared by the commands that refit a method to score a new model (predict, report).
ResponsesArg = Annotated[Path, typer.Argument(
    help="The new model's responses: CSV with columns item, score, or a folder of its "
    "lm-eval logs (items outside the coreset are ignored).")]
RefitMethodOpt = Annotated[str, typer.Option(help="Method name (same as used for select).")]
RefitBudgetOpt = Annotated[float, typer.Option(help="Same budget as used for select.")]
RefitSeedOpt = Annotated[int, typer.Option(min=0, max=2**32 - 1,
                                           help="Same seed as used for select.")]

DataDirOpt = Annotated[
    Path | None,
    typer.Option("--data-dir", help="Folder where bare dataset names are looked up "
                 "(default: $COREVAL_DATA_DIR)."),
]
