"""The ``coreval`` commands: demo, compare, select, predict, fit, adapt, report."""

from __future__ import annotations

import json
import os
import sys
import warnings
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from coreval.cli.arguments import (
    REFIT_FLAGS,
    DataDirOpt,
    LmFilterOpt,
    LmMetricOpt,
    LmTasksOpt,
    OptionsOpt,
    RefitBudgetOpt,
    RefitMethodOpt,
    RefitSeedOpt,
    ResponsesArg,
    budgets_value,
    count_value,
    csv_list,
    lm_eval_options,
    method_options,
    n_jobs_value,
    open_unit,
    out_file,
)
from coreval.cli.console import SHOWN, note_line, one_line_errors, show_once
from coreval.cli.inputs import (
    load_data,
    new_model_responses,
    read_new_logs,
    read_responses,
    source_logs_options,
)
from coreval.errors import CorevalError

app = typer.Typer(
    name="coreval",
    help="Efficient LLM evaluation: pick a small coreset of items and predict full scores "
    "with calibrated intervals.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from coreval import __version__

        typer.echo(f"coreval {__version__}")
        raise typer.Exit()


@app.callback()
def _setup(
    version: Annotated[bool, typer.Option(
        "--version", callback=_print_version, is_eager=True,
        help="Print coreval's version and exit.")] = False,
    quiet: Annotated[bool, typer.Option(
        "--quiet", "-q", help="No progress bars (the same as COREVAL_PROGRESS=0).")] = False,
) -> None:
    """Runs before every command: headless plots, and JAX's persistent compilation cache
    (later runs load compiled programs instead of compiling; see coreval.jax_cache).

    Progress bars are drawn unless ``--quiet`` or ``COREVAL_PROGRESS=0``.
    """
    if quiet:
        os.environ["COREVAL_PROGRESS"] = "0"
    os.environ.setdefault("MPLBACKEND", "Agg")
    # Warnings are notes for the user: one line each, each text once per run.
    warnings.formatwarning = note_line
    warnings.showwarning = show_once(warnings.showwarning)
    SHOWN.clear()
    warnings.filterwarnings("once", category=UserWarning)
    from coreval.jax_cache import enable_compilation_cache

    enable_compilation_cache()



@app.command()
@one_line_errors
def demo(
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("coreval-demo"),
    methods: Annotated[str, typer.Option(help="Comma-separated methods.")] =
        "random,random+,random++,anchor-points++,mrmr++,gp-irt,irt-bayes,stack-mrmr",
    budget: Annotated[float, typer.Option(help="Budget: fraction (<1) or count.")] = 0.1,
    seeds: Annotated[int, typer.Option(min=1, help="Number of seeds (0..n-1).")] = 3,
    n_models: Annotated[int, typer.Option(min=4, help="Simulated models.")] = 150,
    n_items: Annotated[int, typer.Option(min=2, help="Simulated items.")] = 400,
    train_models: Annotated[int, typer.Option(min=3, help="Source models per split.")] = 40,
    n_jobs: Annotated[int, typer.Option(callback=n_jobs_value, help="Parallel jobs (-1: all "
                                        "cores).")] = 1,
) -> None:
    """Simulated leaderboard → several methods at a 10% budget → table and plot.

    Example: ``coreval demo --out coreval-demo``. Writes results.parquet,
    summary.md and true_vs_predicted.png with 90% intervals into OUT.
    """
    from coreval.demo import run_demo

    run_demo(out=out, methods=csv_list(methods), budget=budget, seeds=list(range(seeds)),
             n_models=n_models, n_items=n_items, n_source=train_models, n_jobs=n_jobs)


@app.command()
@one_line_errors
def compare(
    data: Annotated[list[str], typer.Argument(help="Datasets: paths or bare names.")],
    methods: Annotated[str, typer.Option(help="Comma-separated method names.")] = "random,random+",
    budget: Annotated[str, typer.Option(help="Comma-separated budgets; <1 fraction, >=1 count.")]
        = "0.05,0.1",
    train_models: Annotated[str | None, typer.Option(
        "--train-models", help="Comma-separated numbers of source models; 'all' = the "
        "split's own number: every model outside the fold (kfold, lofo), all but the --holdout "
        "share (random), 30 (binned). [default: 30; all with kfold]",
        show_default=False)] = None,
    seeds: Annotated[int, typer.Option(min=1, help="Seeds 0..n-1 (ignored by kfold: every fold "
                                       "runs).")] = 5,
    split: Annotated[str | None, typer.Option(
        help="binned (default for item level), random, kfold (default for benchmark level), lofo."
    )] = None,
    folds: Annotated[int, typer.Option(min=2, help="Folds for --split kfold.")] = 10,
    holdout: Annotated[float, typer.Option(callback=open_unit,
                                           help="Holdout fraction for --split kfold.")] = 0.1,
    out: Annotated[Path, typer.Option(help="Parquet file with one row per run.")] =
        Path("results.parquet"),
    n_jobs: Annotated[int, typer.Option(callback=n_jobs_value, help="Parallel joblib workers (-1: "
                                        "all cores).")] = 1,
    calibration: Annotated[str, typer.Option(
        help="Intervals: 'native' (the predictor's own), 'cv' (split conformal on "
        "out-of-fold residuals with the selection redone in each fold) or 'auto' ('cv' "
        "where the selector read the source scores).")] = "auto",
    scheduler: Annotated[str | None, typer.Option(
        help="dask.distributed scheduler ADDRESS; runs the grid on that cluster (dask "
        "exchanges pickles: connect only to a cluster you trust).")] = None,
    retry_failed: Annotated[bool, typer.Option(
        help="Run again the cells whose stored result is an error.")] = False,
    option: OptionsOpt = None,
    data_dir: DataDirOpt = None,
    lm_metric: LmMetricOpt = None,
    lm_filter: LmFilterOpt = None,
    lm_tasks: LmTasksOpt = None,
) -> None:
    """Run a grid of datasets × methods × budgets × source sizes × seeds.

    Example: ``coreval compare mmlu gsm --methods random+,mrmr++ --budget 0.05,0.1
    --train-models 30 --seeds 5 --split binned --data-dir ../shared/data --out r.parquet``.
    Killed runs resume: finished cells are skipped.
    """
    from coreval.harness import format_summary, run_grid

    out_file(out)
    matrices, origin = {}, {}
    for d in data:
        m = load_data(d, data_dir, lm_eval_options(lm_metric, lm_filter, lm_tasks))
        key = m.name or Path(d).stem
        if key in matrices:
            raise CorevalError(f"datasets {origin[key]!r} and {d!r} are both named {key!r}; "
                               "rename one of the files so that each dataset has its own name")
        matrices[key], origin[key] = m, d
    levels = {m.level for m in matrices.values()}
    if split is None:
        split = "kfold" if levels == {"benchmark"} else "binned"
    if train_models is None:  # kfold's source is every model outside the fold
        train_models = "all" if split == "kfold" else "30"
    n_source = [None if v == "all" else count_value(v, "--train-models")
                for v in csv_list(train_models)]
    # k-fold runs every fold (the split's seed is the fold index); other splits use seeds 0..n-1.
    seed_list = None if split == "kfold" else list(range(seeds))
    df = run_grid(matrices, csv_list(methods), budgets_value(budget), n_source=n_source,
                  seeds=seed_list, split=split, folds=folds, holdout=holdout, out=out,
                  n_jobs=n_jobs, scheduler=scheduler, retry_failed=retry_failed,
                  method_options={m: {**method_options(option, reserved=REFIT_FLAGS),
                                      "calibration": calibration}
                                  for m in dict.fromkeys(csv_list(methods))})
    typer.echo(format_summary(df))
    typer.echo(f"wrote {out}")
    failed = df[df["error"].notna()]
    if len(failed):
        first = failed.iloc[0]
        typer.echo(f"error: {len(failed)} of {len(df)} cells failed; first: {first['dataset']} "
                   f"{first['method']} budget {first['budget']:g} seed {first['seed']}: "
                   f"{first['error']} (rerun with --retry-failed after fixing the cause)",
                   err=True)
        raise typer.Exit(1)


@app.command("select")
@one_line_errors
def select_cmd(
    data: Annotated[str, typer.Argument(help="Score matrix: path or bare name.")],
    method: Annotated[str, typer.Option(help="Method name.")] = "random++",
    budget: Annotated[float, typer.Option(help="Fraction (<1) or count (>=1).")] = 0.1,
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Seed.")] = 0,
    out: Annotated[Path | None, typer.Option(
        help="File to write: the coreset as CSV (item, position, weight), or with --format "
        "lm-eval the JSON for lm_eval --samples.")] = None,
    format_: Annotated[str, typer.Option(
        "--format", help="csv (item, position, weight) or lm-eval (document indices per "
        "task, the JSON that lm_eval run --samples FILE takes; needs lm-eval item ids "
        "task/doc_id).")] = "csv",
    save: Annotated[Path | None, typer.Option(
        "--save", help="Folder to save the fitted selection in (JSON, NPZ, NetCDF; never "
        "pickle), for coreval predict --from DIR RESPONSES without refitting.")] = None,
    option: OptionsOpt = None,
    data_dir: DataDirOpt = None,
    lm_metric: LmMetricOpt = None,
    lm_filter: LmFilterOpt = None,
    lm_tasks: LmTasksOpt = None,
) -> None:
    """Choose which items (or benchmarks) to run on a new model.

    Example: ``coreval select mmlu --method mrmr++ --budget 100 --out coreset.csv``;
    ``coreval select LOGDIR --budget 50 --format lm-eval --out samples.json --save sel``
    then ``lm_eval run ... --samples samples.json --log_samples --output_path new`` and
    ``coreval predict --from sel new``.
    """
    import pandas as pd

    from coreval.api import select

    out_file(out)
    if format_ not in ("csv", "lm-eval"):
        raise CorevalError(f"--format must be csv or lm-eval, got {format_!r}")
    if save is not None:
        from coreval.saved_selection import check_selection_folder

        check_selection_folder(save)  # before the fit, not after it
    lm = lm_eval_options(lm_metric, lm_filter, lm_tasks)
    matrix = load_data(data, data_dir, lm)
    if format_ == "lm-eval":
        from coreval.data.lm_eval import lm_eval_samples

        lm_eval_samples(matrix.items)  # ids that lm-eval cannot take: before the fit
    fitted = select(matrix, method, budget, seed=seed,
                    **method_options(option, reserved=("method", "budget", "seed")))
    cs = fitted.coreset
    if save is not None:
        from coreval.saved_selection import save_selection

        save_selection(fitted, save, provenance=_provenance(data, matrix, lm, cs.items))
        typer.echo(f"saved the fitted selection to {save}", err=out is None)
    if format_ == "lm-eval":
        text = json.dumps(lm_eval_samples(cs.items), indent=1) + "\n"
    else:
        table = pd.DataFrame({"item": cs.items, "position": cs.indices,
                              "weight": cs.weights if cs.weights is not None else float("nan")})
        text = table.to_csv(index=False)
    if out is not None:
        from coreval._atomic import write_text_atomic

        write_text_atomic(out, text)
        typer.echo(f"wrote {len(cs)} items to {out}")
    else:
        typer.echo(text, nl=False)


def _provenance(data: str, matrix, lm: dict, coreset_items) -> dict[str, object]:
    """What a saved selection records about its source data (JSON-able).

    For lm-eval logs: the metric of each task, the filter, and lm-eval's ``doc_hash`` of
    each coreset document, which a new model's logs must match.
    """
    out: dict[str, object] = {"data": str(data), "name": matrix.name,
                              "n_models": int(matrix.n_models), "n_items": int(matrix.n_items)}
    logs = source_logs_options(matrix, lm)
    if logs:
        wanted = set(map(str, coreset_items))
        logs["doc_hash"] = {k: v for k, v in (logs.get("doc_hash") or {}).items()
                            if k in wanted}
        out["lm_eval"] = logs
    return out


@app.command("predict")
@one_line_errors
def predict_cmd(
    data: Annotated[str, typer.Argument(
        help="Score matrix of known models: path or bare name (with --from: leave it out and "
        "give only RESPONSES).")],
    responses: Annotated[Path | None, typer.Argument(
        help="The new model's responses: CSV with columns item, score (or a long table with "
        "one model's model, item, score), or a folder of its lm-eval logs (items outside "
        "the coreset are ignored).", show_default=False)] = None,
    from_: Annotated[Path | None, typer.Option(
        "--from", help="A selection saved by coreval select --save DIR: predict with it, "
        "without refitting (method, budget, seed and options are the saved ones).")] = None,
    method: Annotated[str | None, typer.Option(
        help="Method name (same as used for select). [default: random++]",
        show_default=False)] = None,
    budget: Annotated[float | None, typer.Option(
        help="Same budget as used for select. [default: 0.1]", show_default=False)] = None,
    seed: Annotated[int | None, typer.Option(
        min=0, max=2**32 - 1, help="Same seed as used for select. [default: 0]",
        show_default=False)] = None,
    calibration: Annotated[str | None, typer.Option(
        help="Intervals: 'native' (the predictor's own), 'cv' (split conformal on "
        "out-of-fold residuals with the selection redone in each fold) or 'auto' ('cv' "
        "where the selector read the source scores). [default: auto]",
        show_default=False)] = None,
    option: OptionsOpt = None,
    data_dir: DataDirOpt = None,
    lm_metric: LmMetricOpt = None,
    lm_filter: LmFilterOpt = None,
    lm_tasks: LmTasksOpt = None,
) -> None:
    """Predict a new model's full score (with a 90% interval) from its coreset responses.

    Either reuse a saved selection: ``coreval predict --from sel new_model.csv`` (written by
    ``coreval select ... --save sel``; nothing is refitted), or refit the method with the
    same seed, so that the coreset is the one ``coreval select`` printed: ``coreval predict
    mmlu new_model.csv --method mrmr++ --budget 100``.
    """
    refit_options = {"--method": method, "--budget": budget, "--seed": seed,
                     "--calibration": calibration, "--option": option or None,
                     "--data-dir": data_dir}
    lm = lm_eval_options(lm_metric, lm_filter, lm_tasks)
    if from_ is not None:
        if responses is not None:
            raise CorevalError(f"with --from give only RESPONSES (the new model's scores); "
                               f"got DATA {data!r} too: the saved selection replaces it")
        given = [name for name, value in refit_options.items() if value is not None]
        if given:
            raise CorevalError(f"{', '.join(given)}: not with --from (the saved selection "
                               f"{from_} fixes the method, budget, seed, options and data)")
        fitted, result = _predict_saved(from_, Path(data), lm)
    else:
        if responses is None:
            raise CorevalError("give DATA and RESPONSES (or --from DIR RESPONSES to reuse a "
                               "selection saved by coreval select --save DIR)")
        from coreval.api import select

        method = "random++" if method is None else method
        options = method_options(option, reserved=REFIT_FLAGS)
        source = load_data(data, data_dir, lm)
        series = new_model_responses(responses, source, lm)
        fitted = select(source, method, 0.1 if budget is None else budget,
                        seed=0 if seed is None else seed,
                        calibration="auto" if calibration is None else calibration,
                        **options)
        try:
            pred = fitted.predict(series)
        except CorevalError as err:
            if "coreset" not in str(err):
                raise
            raise CorevalError(f"{err} (the coreset is refitted from --method, --budget, --seed "
                               "and --option: give the values used for select, or save the "
                               "selection with select --save DIR and use predict --from DIR)"
                               ) from None
        result = {"method": method, **_prediction_summary(fitted, pred)}
    from coreval.report.score_card import small_data_caveats

    # benchmarks on native scales have no common score range: only the source count is checked
    lower, upper = (result["lower"], result["upper"]) if "score" in result else (0.0, 0.0)
    caveats = small_data_caveats(fitted.n_source, lower, upper, fitted.score_range or (0.0, 0.0))
    if fitted.model_check is not None:  # the IRT methods' criticism on the source models
        result["model_check"] = fitted.model_check.summary()
        caveats += [note.removeprefix("**caution**: ") for note in fitted.model_check.notes()
                    if note.startswith("**caution**")]
    for caveat in caveats:
        typer.echo(f"note: {caveat}", err=True)
    if caveats:
        result["caveats"] = caveats
    typer.echo(json.dumps(result, indent=2))


def _prediction_summary(fitted, pred) -> dict[str, object]:
    """The new model's predicted full score, or, for a method that imputes whole benchmarks,
    one row per benchmark (``observed``: a coreset benchmark the model was run on)."""
    head = {"k": len(fitted.coreset), "level": pred.level, "interval": pred.interval}
    if fitted.method.task != "impute":
        return {**head, "score": float(pred.mean.ravel()[0]),
                "lower": float(pred.lower.ravel()[0]), "upper": float(pred.upper.ravel()[0])}
    observed = set(fitted.coreset.items.astype(str))
    return {**head, "benchmarks": [
        {"item": str(item), "score": float(m), "lower": float(lo), "upper": float(hi),
         "observed": str(item) in observed}
        for item, m, lo, hi in zip(fitted.source_items, pred.mean[0], pred.lower[0],
                                   pred.upper[0], strict=True)]}



def _predict_saved(folder: Path, responses: Path, lm: dict):
    """Predict with a saved selection; lm-eval logs are read as the source logs were."""
    from coreval.saved_selection import load_selection, read_manifest

    saved_lm = read_manifest(folder).get("provenance", {}).get("lm_eval") or {}
    fitted = load_selection(folder)
    if responses.is_dir():  # read with the metric of each task and the filter of the source
        series = read_new_logs(responses, saved_lm, lm)
    else:
        series = read_responses(responses, lm)
    result = {"method": fitted.method.name, "from": str(folder), "seed": fitted.seed,
              "budget": fitted.budget,
              **_prediction_summary(fitted, fitted.predict(series))}
    return fitted, result


@app.command("fit")
@one_line_errors
def fit_cmd(
    data: Annotated[str, typer.Argument(help="Wide CSV of 0/1 responses (rows = respondents), a "
                                        "pattern × frequency table with a 'freq' column, or any "
                                        "supported score matrix.")],
    model: Annotated[str, typer.Option(help="1pl, 2pl, 3pl, beta, lego, hetero, beta3.")] = "2pl",
    dims: Annotated[int, typer.Option(min=1, help="Latent dimensions.")] = 1,
    method: Annotated[str, typer.Option(help="mml, map, svi or nuts.")] = "map",
    priors: Annotated[str, typer.Option(help="weak or hierarchical.")] = "weak",
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Seed.")] = 0,
    out: Annotated[Path, typer.Option(help="Output folder models/NAME.")] = Path("models/fit"),
    force: Annotated[bool, typer.Option(help="Replace a saved model in OUT (never anything "
                                        "else).")] = False,
    data_dir: DataDirOpt = None,
    lm_metric: LmMetricOpt = None,
    lm_filter: LmFilterOpt = None,
    lm_tasks: LmTasksOpt = None,
) -> None:
    """Fit an IRT model and write models/NAME (posterior.nc, card.json, items.csv).

    Example: ``coreval fit LSAT7.csv --model 2pl --method mml --out models/lsat7``.
    """
    from coreval.data.io import load_matrix
    from coreval.irt import fit
    from coreval.irt.result import check_model_folder

    check_model_folder(out, force=force)  # before the fit, not after it
    matrix = load_matrix(data, data_dir=data_dir,
                         lm_eval=lm_eval_options(lm_metric, lm_filter, lm_tasks))
    result = fit(model, matrix, method=method, dims=dims, priors=priors, seed=seed)
    path = result.save(out, force=force)
    typer.echo(result.items.head(20).to_string(index=False))
    typer.echo(f"wrote {path}")


@app.command("adapt")
@one_line_errors
def adapt_cmd(
    data: Annotated[str, typer.Argument(help="Score matrix of known models (binary): path or "
                                        "bare name; the IRT model is fitted on it.")],
    responses: Annotated[Path | None, typer.Option(
        help="Replay recorded answers: CSV with columns item, score (items not in the file "
        "are never asked).")] = None,
    answer_cmd: Annotated[str | None, typer.Option(
        "--answer-cmd", help="Command that answers: it reads one line per batch (item ids "
        "separated by tabs) on stdin and writes one line of 0/1 scores, in the same order, "
        "on stdout.")] = None,
    rule: Annotated[str, typer.Option(help="score (expected reduction of the full score's "
                                      "variance), fisher or kl.")] = "score",
    width: Annotated[float, typer.Option(min=0.0, help="Stop when the interval is at most "
                                         "this wide (fraction of the full score; 0: no "
                                         "width stop).")] = 0.04,
    max_items: Annotated[int | None, typer.Option(min=1, help="Stop after this many items "
                                                  "(default: 10 % of the bank).")] = None,
    batch: Annotated[int, typer.Option(min=1, help="Items per batch.")] = 1,
    randomesque: Annotated[int, typer.Option(min=1, help="Pick among this many best "
                                             "items (exposure control).")] = 1,
    level: Annotated[float, typer.Option(callback=open_unit, help="Interval level.")] = 0.9,
    model: Annotated[str, typer.Option(help="Logistic IRT model: 2pl, 3pl, 1pl.")] = "2pl",
    dims: Annotated[int, typer.Option(min=1, help="Latent dimensions of the IRT model (2 "
                                      "or more: the ability posterior by adaptive "
                                      "Gauss-Hermite quadrature).")] = 1,
    choose_dims: Annotated[bool, typer.Option(
        help="Fit banks of 1 to --max-dims dimensions and keep the one whose tests of "
        "held-out known models do best (needs --tau cv).")] = False,
    max_dims: Annotated[int, typer.Option(min=2, help="The most dimensions --choose-dims "
                                          "tries.")] = 2,
    fit_method: Annotated[str, typer.Option(help="IRT fit: svi, map or nuts.")] = "svi",
    num_steps: Annotated[int, typer.Option(min=1, help="Optimiser steps of the fit.")] = 2000,
    tau: Annotated[str, typer.Option(help="Misfit sd of a score predicted from no answers, "
                                     "scaled by the share still unanswered: 'cv' (learnt from "
                                     "adaptive tests of held-out known models, 10 folds) or a "
                                     "number (0: the IRT model taken as exact).")] = "cv",
    misfit_shape: Annotated[str, typer.Option(
        help="How the misfit scales: share (with the share still unanswered), "
        "bernoulli-sd or bernoulli-var (also shrinking near scores of 0 and 1), or auto "
        "(the one whose tests of held-out known models are the most efficient; needs "
        "--tau cv).")] = "share",
    seed: Annotated[int, typer.Option(min=0, max=2**32 - 1, help="Seed.")] = 0,
    data_dir: DataDirOpt = None,
    lm_metric: LmMetricOpt = None,
    lm_filter: LmFilterOpt = None,
    lm_tasks: LmTasksOpt = None,
) -> None:
    """Adaptive test of a new model: choose each next item from the posterior, stop when the
    full score's interval is narrow enough, print the score with its interval.

    Example: ``coreval adapt mmlu --answer-cmd "python run_items.py" --width 0.04 --batch 8``,
    or ``coreval adapt mmlu --responses recorded.csv`` to replay recorded answers.
    """
    import subprocess

    from coreval.adaptive import AdaptiveTest, any_of, score_width
    from coreval.adaptive import max_items as stop_after
    from coreval.adaptive.misfit import MISFIT_SHAPES
    from coreval.methods import get_method
    from coreval.pipeline import fit_method as fit_pipeline

    if (responses is None) == (answer_cmd is None):
        raise CorevalError("give exactly one of --responses FILE or --answer-cmd CMD")
    if rule not in ("score", "fisher", "kl"):
        raise CorevalError(f"--rule must be score, fisher or kl, got {rule!r}")
    if misfit_shape not in (*MISFIT_SHAPES, "auto"):
        raise CorevalError(f"--misfit-shape must be {', '.join(MISFIT_SHAPES)} or auto, "
                           f"got {misfit_shape!r}")
    try:
        tau_value: str | float = "cv" if tau == "cv" else float(tau)
    except ValueError:
        raise CorevalError(f"--tau must be 'cv' or a number >= 0, got {tau!r}") from None
    source = load_data(data, data_dir, lm_eval_options(lm_metric, lm_filter, lm_tasks))
    exposure = None
    if responses is not None:
        recorded = new_model_responses(
            responses, source, lm_eval_options(lm_metric, lm_filter, lm_tasks))
        recorded = recorded.dropna()  # a blank score is no recorded answer
        known = set(np.asarray(source.items).astype(str))
        unknown = [i for i in recorded.index if i not in known]
        if unknown:
            raise CorevalError(f"{responses}: items not in {data}: {', '.join(unknown[:5])}")
        exposure = np.isin(np.asarray(source.items).astype(str), recorded.index).astype(float)
        limit = int(exposure.sum())
    else:
        limit = source.n_items
    n_max = min(limit, max_items if max_items is not None else max(1, source.n_items // 10))
    if n_max < 1:
        raise CorevalError(f"{responses}: no answers to replay")
    # The bank and its misfit term τ as the harness's cat-* methods make them: τ from
    # adaptive tests of held-out source models under the same stop (tau="cv"; with a
    # width stop, learnt where those tests stop: coreval.adaptive.misfit).
    stop_width = width if width > 0 else None
    fitted = fit_pipeline(get_method(f"cat-{rule}"), source, n_max, seed=seed, model=model,
                          dims=dims, choose_dims=choose_dims, max_dims=max_dims,
                          fit_method=fit_method, num_steps=num_steps, tau=tau_value,
                          misfit_shape=misfit_shape,
                          width=stop_width, level=level, batch=batch,
                          randomesque=randomesque, calibration="native")
    bank = fitted.predictor.bank_
    stops = [stop_after(n_max)] + ([score_width(width, level)] if stop_width else [])
    test = AdaptiveTest(bank, rule=rule, stop=any_of(*stops),
                        randomesque=randomesque, exposure=exposure, level=level, seed=seed)
    if responses is not None:
        prediction = test.run(lambda items: recorded.loc[items].to_numpy(float), b=batch)
    else:
        prediction = _run_answer_cmd(test, answer_cmd, batch, subprocess)
    result = {"rule": rule, "items_used": test.state.n_asked, "tau": float(fitted.predictor.tau_),
              "misfit_shape": fitted.predictor.misfit_shape_,
              "score": float(prediction.mean[0]), "lower": float(prediction.lower[0]),
              "upper": float(prediction.upper[0]), "level": level,
              "interval": prediction.interval, "items": test.asked}
    typer.echo(json.dumps(result, indent=2))


def _run_answer_cmd(test, command: str, batch: int, subprocess):
    """Drive ``command`` batch by batch over a pipe (protocol in ``coreval adapt --help``)."""
    import shlex

    proc = subprocess.Popen(shlex.split(command), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, bufsize=1)
    try:
        while not test.done:
            items = test.next_items(batch)
            proc.stdin.write("\t".join(items) + "\n")
            proc.stdin.flush()
            line = proc.stdout.readline()
            if not line:
                raise CorevalError(f"--answer-cmd ended without answering {len(items)} items "
                                   f"(exit code {proc.poll()})")
            try:
                scores = [float(v) for v in line.split()]
            except ValueError:
                raise CorevalError(f"--answer-cmd answered {line.strip()!r}; expected "
                                   f"{len(items)} scores of 0 or 1") from None
            if len(scores) != len(items):
                raise CorevalError(f"--answer-cmd gave {len(scores)} scores for "
                                   f"{len(items)} items")
            test.answer(items, scores)
    finally:
        if proc.stdin and not proc.stdin.closed:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
    return test.estimate()


@app.command("report")
@one_line_errors
def report_cmd(
    data: Annotated[str, typer.Argument(help="Score matrix of known models: path or bare name.")],
    responses: ResponsesArg,
    method: RefitMethodOpt = "random++",
    budget: RefitBudgetOpt = 0.1,
    seed: RefitSeedOpt = 0,
    name: Annotated[str, typer.Option(help="Name of the new model on the card.")] = "new model",
    level: Annotated[float, typer.Option(callback=open_unit, help="Interval level.")] = 0.9,
    out: Annotated[Path, typer.Option(help="Card file: .md (Markdown) or .html (HTML).")] =
        Path("score_card.md"),
    data_dir: DataDirOpt = None,
    lm_metric: LmMetricOpt = None,
    lm_filter: LmFilterOpt = None,
    lm_tasks: LmTasksOpt = None,
) -> None:
    """Write an uncertainty-aware score card (score, interval, rank, subtasks) for a new model.

    Refits the method with the same seed, so the coreset is the one ``coreval select``
    printed. Example: ``coreval report mmlu new.csv --method irt-bayes --budget 100
    --out card.html``.
    """
    from coreval.report.score_card import score_card

    lm = lm_eval_options(lm_metric, lm_filter, lm_tasks)
    source = load_data(data, data_dir, lm)
    card = score_card(source, new_model_responses(responses, source, lm), method=method,
                      budget=budget, seed=seed, model_name=name, level=level, out=out)
    typer.echo(json.dumps(card.summary(), indent=2))
    typer.echo(f"score card written to {out}")


def main() -> None:  # pragma: no cover - ``python -m coreval.cli``
    sys.exit(app())
