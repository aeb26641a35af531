"""Reader for per-sample logs of EleutherAI's lm-evaluation-harness.

``lm_eval --output_path OUT --log_samples`` writes, per model, a folder
``OUT/<model_name_sanitized>/`` holding ``results_<timestamp>.json`` (aggregate
scores and the run configuration) and one ``samples_<task>_<timestamp>.jsonl``
per task with one JSON object per evaluated document::

    {"doc_id": 0, "doc": {...}, "target": "...", "arguments": {...},
     "resps": [...], "filtered_resps": [...], "filter": "none",
     "metrics": ["acc", "acc_norm"], "doc_hash": "...", ..., "acc": 1.0, "acc_norm": 0.0}

Generative tasks with several filters (e.g. gsm8k's ``strict-match`` and
``flexible-extract``) log one object per document *and filter*.
File names follow the harness's own parsing: the task is the text between the
first and the last underscore, the timestamp (``datetime.isoformat()`` with
``:`` replaced by ``-``) the text after the last underscore; results and sample
files of one run share the timestamp.

References
----------
EleutherAI lm-evaluation-harness, ``lm_eval/loggers/evaluation_tracker.py``
(``save_results_aggregated``, ``save_results_samples``) and ``lm_eval/utils.py``
(``get_file_task_name``, ``get_file_datetime``).
"""

from __future__ import annotations

import json
import math
import os
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from coreval.data.matrix import Kind, ScoreMatrix
from coreval.errors import ValidationError, preview

#: Per-sample metrics chosen for a task when none is given (``metric="auto"``), in order of
#: preference: the length-normalised accuracy where the task reports it (multiple choice),
#: accuracy, then the exact match and overlap scores of generative tasks.
METRIC_PREFERENCE: tuple[str, ...] = ("acc_norm", "acc", "exact_match", "em", "f1",
                                      "pass@1", "bleu", "rouge1", "chrf")

SAMPLES_PREFIX = "samples_"
RESULTS_PREFIX = "results_"
#: keys of ``config.model_args`` that name the evaluated model, in order of preference
MODEL_ARG_KEYS: tuple[str, ...] = ("pretrained", "model", "path", "model_name", "engine")


@dataclass(frozen=True)
class SampleFile:
    """One ``samples_<task>_<timestamp>.jsonl`` file and the model it belongs to."""

    path: Path
    model: str
    task: str
    timestamp: str


def _split_name(name: str, suffix: str) -> tuple[str, str]:
    """(task, timestamp) of ``samples_<task>_<timestamp><suffix>`` as the harness parses it."""
    stem = name[: -len(suffix)]
    first, last = stem.find("_"), stem.rfind("_")
    return stem[first + 1: last], stem[last + 1:]


def _model_from_args(model_args) -> str | None:
    """The model named by ``config.model_args`` (a ``k=v,k=v`` string or a dict)."""
    if isinstance(model_args, Mapping):
        args = {str(k): v for k, v in model_args.items()}
    elif isinstance(model_args, str):
        args = {}
        for part in model_args.split(","):
            key, sep, value = part.partition("=")
            if sep:
                args[key.strip()] = value.strip()
    else:
        return None
    for key in MODEL_ARG_KEYS:
        if args.get(key):
            return str(args[key])
    return None


def _model_from_results(path: Path) -> str | None:
    """``model_name`` of a results file, else the model in ``config.model_args``."""
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValidationError(f"cannot read lm-eval results file {path}: {exc}") from exc
    if not isinstance(data, dict):
        return None
    if data.get("model_name"):
        return str(data["model_name"])
    config = data.get("config")
    return _model_from_args(config.get("model_args")) if isinstance(config, dict) else None


def _folder_models(folder: Path) -> dict[str, str]:
    """Map timestamp → model id for the results files of a folder.

    Results files are ``results_<timestamp>.json``, or ``<stem>_<timestamp>.json``
    when ``--output_path`` named a ``.json`` file (the samples then sit next to it).
    """
    out = {}
    for path in sorted(folder.glob("*_*.json")):
        if not path.name.startswith(RESULTS_PREFIX) and not _looks_like_results(path):
            continue
        model = _model_from_results(path)
        if model:
            out[path.stem[path.stem.rfind("_") + 1:]] = model
    return out


def _looks_like_results(path: Path) -> bool:
    """Whether a JSON file is an lm-eval results file (a dict with ``results`` and ``config``)."""
    try:
        with path.open(encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, json.JSONDecodeError, UnicodeDecodeError):
        return False
    return isinstance(data, dict) and "results" in data and "config" in data


def find_sample_files(directory: str | os.PathLike) -> list[SampleFile]:
    """All sample files under ``directory`` (recursively), each with its model id.

    The model id of a samples file is the ``model_name`` (else the model in
    ``config.model_args``) of the results file with the same timestamp, else of
    the newest results file in its folder, else the folder name with ``__`` read as
    ``/`` (lm-eval's own sanitising of model names).
    """
    root = Path(directory)
    if not root.is_dir():
        raise ValidationError(f"lm-eval output folder not found: {root}")
    files = sorted(root.rglob(f"{SAMPLES_PREFIX}*.jsonl"))
    out: list[SampleFile] = []
    models_by_folder: dict[Path, dict[str, str]] = {}
    for path in files:
        folder = path.parent
        if folder not in models_by_folder:
            models_by_folder[folder] = _folder_models(folder)
        by_time = models_by_folder[folder]
        task, stamp = _split_name(path.name, ".jsonl")
        if not task or not stamp:
            raise ValidationError(f"cannot parse task and timestamp from {path.name}; expected "
                                  "samples_<task>_<timestamp>.jsonl")
        if stamp in by_time:
            model = by_time[stamp]
        elif by_time:
            model = by_time[max(by_time)]
        else:  # lm-eval names the folder after the model with "/" written as "__"
            model = folder.name.replace("__", "/")
        out.append(SampleFile(path, model, task, stamp))
    return out


def _not_utf8(path: Path, exc: UnicodeDecodeError) -> ValidationError:
    return ValidationError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); "
                           "lm-eval writes its logs as UTF-8")


def _first_sample(path: Path) -> dict:
    try:
        with path.open(encoding="utf-8") as fh:
            for line in fh:
                if line.strip():
                    try:
                        obj = json.loads(line)
                    except json.JSONDecodeError:
                        return {}
                    return obj if isinstance(obj, dict) else {}
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None
    return {}


def _auto_metric(path: Path) -> str:
    """The metric of :data:`METRIC_PREFERENCE` that a samples file logs (the first one)."""
    obj = _first_sample(path)
    logged = [k for k in obj.get("metrics", []) if isinstance(k, str)] or [
        k for k, v in obj.items() if isinstance(v, int | float) and not isinstance(v, bool)
        and k not in ("doc_id",)]
    for name in METRIC_PREFERENCE:
        if name in logged and name in obj:
            return name
    if len(logged) == 1 and logged[0] in obj:
        return logged[0]
    raise ValidationError(f"{path}: cannot choose a metric among {preview(logged) or 'none'}; "
                          "pass metric=<key> (CLI: --metric TASK=KEY)")


def _metric_for(metric: str | Mapping[str, str], task: str, path: Path) -> str:
    """The metric of ``task``: the mapping's entry, the given key, or the automatic choice."""
    if isinstance(metric, Mapping):
        metric = metric.get(task, "auto")
    return _auto_metric(path) if metric == "auto" else metric


def _read_samples(sample: SampleFile, metric: str, filter_name: str | None) -> pd.DataFrame:
    """(doc_id, score) of one samples file, for one filter."""
    path = sample.path
    try:
        return _parse_samples(path, metric, filter_name)
    except UnicodeDecodeError as exc:
        raise _not_utf8(path, exc) from None


def _parse_samples(path: Path, metric: str, filter_name: str | None) -> pd.DataFrame:
    rows = []
    with path.open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValidationError(f"{path}: line {lineno} is not valid JSON ({exc.msg})") \
                    from exc
            if not isinstance(obj, dict) or "doc_id" not in obj:
                raise ValidationError(f"{path}: line {lineno} has no 'doc_id'")
            if metric not in obj:
                have = [k for k in obj.get("metrics", []) if isinstance(k, str)]
                hint = f" (logged metrics: {preview(have)})" if have else ""
                raise ValidationError(f"{path}: line {lineno} has no metric key {metric!r}{hint}")
            value = obj[metric]
            if isinstance(value, bool):
                value = float(value)
            if not isinstance(value, int | float) or not math.isfinite(value):
                raise ValidationError(f"{path}: metric {metric!r} of doc {obj['doc_id']} is not "
                                      f"a finite number: {str(value)[:40]}")
            rows.append((str(obj["doc_id"]), obj.get("filter"), float(value),
                         obj.get("doc_hash")))
    if not rows:
        raise ValidationError(f"{path}: no samples")
    frame = pd.DataFrame(rows, columns=["doc_id", "filter", "score", "doc_hash"])
    filters = [f for f in pd.unique(frame["filter"]) if f is not None]
    if not filters and frame["doc_id"].duplicated().any():
        frame = _first_row_per_doc(frame, path, filter_name)
    if len(filters) > 1 and filter_name is not None:  # the filter matters only here
        if filter_name not in filters:
            raise ValidationError(f"{path}: no samples with filter {filter_name!r}; it has "
                                  f"{preview(filters)}")
        frame = frame[frame["filter"] == filter_name]
    elif len(filters) > 1:
        raise ValidationError(f"{path}: samples logged under several filters "
                              f"({preview(filters)}); pass filter=<one of them>")
    dup = frame["doc_id"].duplicated()
    if dup.any():
        raise ValidationError(f"{path}: duplicate doc_id {preview(frame['doc_id'][dup].unique())}")
    return frame[["doc_id", "score", "doc_hash"]]


def _first_row_per_doc(frame: pd.DataFrame, path: Path, filter_name: str | None
                       ) -> pd.DataFrame:
    """Older lm-eval releases log one row per filter and doc without a ``filter`` key.

    Every document must have the same number of rows (one per filter, in the task's
    filter order); the first row (the task's first filter) is taken, with a warning that
    says so, since a named filter cannot be located without the key.
    """
    counts = frame.groupby("doc_id", sort=False).size()
    if counts.nunique() != 1:
        raise ValidationError(f"{path}: duplicate doc_id {preview(counts.index[counts > 1])} "
                              "with different numbers of rows and no 'filter' key")
    skipped = (f"; filter {filter_name!r} cannot be located without the key"
               if filter_name is not None else "")
    warnings.warn(f"{path.name}: {int(counts.iloc[0])} rows per doc_id and no 'filter' key "
                  f"(an older lm-eval release logs one row per filter); took the first row of "
                  f"each document, the task's first filter{skipped}", UserWarning, stacklevel=4)
    return frame.drop_duplicates("doc_id", keep="first")


def _check_doc_hashes(long: pd.DataFrame) -> None:
    """The same ``(task, doc_id)`` must be the same document for every model.

    lm-eval logs ``doc_hash`` (a hash of the document); two models whose logs give one
    ``doc_id`` different hashes were run on different task versions, and their answers
    to that "item" are not comparable.
    """
    hashed = long.dropna(subset=["doc_hash"])
    if hashed.empty:
        return
    counts = hashed.groupby(["task", "doc_id"])["doc_hash"].nunique()
    bad = counts[counts > 1]
    if len(bad):
        task, doc = bad.index[0]
        rows = hashed[(hashed["task"] == task) & (hashed["doc_id"] == doc)]
        models = rows.drop_duplicates("doc_hash")["model"].tolist()[:2]
        raise ValidationError(
            f"task {task!r} doc {doc}: doc_hash differs between models {models[0]!r} and "
            f"{models[1]!r} ({len(bad)} document(s) in all); were they run on different "
            "versions of the task?")


def _doc_sort_key(doc_id: str) -> tuple[int, int | str]:
    return (0, int(doc_id)) if doc_id.lstrip("-").isdigit() else (1, doc_id)


def read_lm_eval(directory: str | os.PathLike, metric: str | Mapping[str, str] = "auto",
                 tasks: Iterable[str] | None = None, *, filter: str | None = None,
                 name: str | None = None, kind: Kind | None = None,
                 strict: bool = True) -> ScoreMatrix:
    """Build a models × items score matrix from lm-evaluation-harness sample logs.

    Parameters
    ----------
    directory : path-like
        Output folder of ``lm_eval ... --log_samples`` (searched recursively;
        usually one sub-folder per model).
    metric : str or mapping
        Per-sample metric key (``"acc"``, ``"acc_norm"``, ``"exact_match"``, ...),
        ``"auto"`` (the first of :data:`METRIC_PREFERENCE` that the task logs, chosen once
        per task), or a mapping task → key (tasks not in it: ``"auto"``). The metric of
        each task is in ``item_meta["metric"]``.
    tasks : iterable of str, optional
        Tasks to read (default: all found). Unknown tasks raise.
    filter : str, optional
        For tasks logged under several filters (e.g. ``"strict-match"``,
        ``"flexible-extract"``), the filter to read. Required when a file has
        more than one filter; tasks logged under one filter use it.
    name : str, optional
        Dataset name (default: the folder name).
    kind : {"binary", "continuous"}, optional
        Score type (inferred from the values when omitted).
    strict : bool
        Passed to :class:`ScoreMatrix`; use ``False`` to read the logs of a
        single new model (a strict matrix needs at least two models).

    Returns
    -------
    ScoreMatrix
        Rows = models (sorted ids), columns = ``"<task>/<doc_id>"`` (tasks in
        the order given, else sorted; documents by numeric id), NaN where a
        model lacks a task. ``item_meta`` has ``group`` (= task), ``doc_id``, ``metric``
        and, where the logs have it, ``doc_hash`` (lm-eval's hash of the document).
        When a model has several runs of a task (also across folders), the
        newest timestamp is used.

    Raises
    ------
    ValidationError
        Missing folder, no sample files, unknown tasks, a sample without the
        metric key (naming file and key), non-numeric scores, ambiguous filters.
    """
    root = Path(directory)
    files = find_sample_files(root)
    if not files:
        raise ValidationError(f"no lm-eval sample files (samples_<task>_<timestamp>.jsonl) "
                              f"under {root}; run lm_eval with --log_samples")
    found = sorted({f.task for f in files})
    if tasks is None:
        task_order = found
    else:
        task_order = list(dict.fromkeys(str(t) for t in ([tasks] if isinstance(tasks, str)
                                                          else tasks)))
        unknown = [t for t in task_order if t not in found]
        if unknown:
            raise ValidationError(f"tasks not found under {root}: {preview(unknown)} "
                                  f"(found: {preview(found)})")
    if isinstance(metric, Mapping):  # a misspelt task would quietly get the automatic metric
        stray = [t for t in metric if t not in found]
        if stray:
            raise ValidationError(f"metric names tasks that are not under {root}: "
                                  f"{preview(stray)} (found: {preview(found)})")
    newest: dict[tuple[str, str], SampleFile] = {}
    for sample in files:
        if sample.task not in task_order:
            continue
        key = (sample.model, sample.task)
        if key not in newest or sample.timestamp > newest[key].timestamp:
            newest[key] = sample  # ISO timestamps order lexicographically by time
    parts, chosen = [], {}
    for (model, task), sample in newest.items():
        if task not in chosen:  # one metric per task, for every model
            chosen[task] = _metric_for(metric, task, sample.path)
        frame = _read_samples(sample, chosen[task], filter)
        frame.insert(0, "task", task)
        frame.insert(0, "model", model)
        parts.append(frame)
    long = pd.concat(parts, ignore_index=True)
    _check_doc_hashes(long)
    task_rank = {t: i for i, t in enumerate(task_order)}
    columns = (long[["task", "doc_id"]].drop_duplicates()
               .assign(key=lambda d: [(task_rank[t], _doc_sort_key(i))
                                      for t, i in zip(d["task"], d["doc_id"], strict=True)])
               .sort_values("key"))
    items = (columns["task"] + "/" + columns["doc_id"]).to_numpy()
    models = np.array(sorted(long["model"].unique()), dtype=object)
    values = np.full((len(models), len(items)), np.nan)
    rows = pd.Index(models).get_indexer(long["model"])
    cols = pd.Index(items).get_indexer(long["task"] + "/" + long["doc_id"])
    values[rows, cols] = long["score"].to_numpy()
    item_meta = pd.DataFrame({"group": columns["task"].to_numpy(),
                              "doc_id": columns["doc_id"].to_numpy(),
                              "metric": [chosen[t] for t in columns["task"]]},
                             index=pd.Index(items, name="item"))
    hashed = long.dropna(subset=["doc_hash"])
    if len(hashed):  # checked equal across models above: one hash per document
        by_item = pd.Series(hashed["doc_hash"].to_numpy(),
                            index=hashed["task"] + "/" + hashed["doc_id"])
        by_item = by_item[~by_item.index.duplicated()]
        item_meta["doc_hash"] = by_item.reindex(item_meta.index).astype(object).to_numpy()
    return ScoreMatrix(values, models=models, items=items, kind=kind, level="item",
                       item_meta=item_meta, name=name or root.resolve().name, strict=strict)


def lm_eval_samples(items: Iterable[str]) -> dict[str, list[int]]:
    """The document indices per task that lm-eval's ``--samples`` option takes.

    ``lm_eval run ... --samples FILE`` (in lm-eval 0.4.13's ``lm_eval run --help``) reads a
    JSON object mapping each task to the indices of the documents to evaluate, e.g.
    ``{"arc_easy": [3, 17], "gsm8k": [0, 5]}``, and logs them under the same
    ``doc_id``; this turns coreset item ids ``"<task>/<doc_id>"`` (as :func:`read_lm_eval`
    names them) into that object (tasks in order of appearance, indices sorted).

    Raises
    ------
    ValidationError
        An item id that is not ``<task>/<non-negative integer>``.
    """
    out: dict[str, list[int]] = {}
    bad = []
    for item in items:
        task, sep, doc = str(item).rpartition("/")
        if not sep or not task or not doc.isdigit():
            bad.append(item)
            continue
        out.setdefault(task, []).append(int(doc))
    if bad:
        raise ValidationError(f"items {preview(bad, 3)} are not lm-eval document ids "
                              "(<task>/<doc_id>); lm-eval's --samples needs a matrix read from "
                              "lm-eval logs")
    return {task: sorted(set(docs)) for task, docs in out.items()}
