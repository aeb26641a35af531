"""The lm-eval subset loop: select → lm-eval on the coreset only → logs → predict --from.

The source models are lm-eval logs written here in the harness's documented format; the
new model is a deterministic dummy language model (answers by a hash of the prompt: no
network, no weights) run through the real ``lm_eval run`` command on a tiny local task
(JSONL file + YAML task config), with ``--samples`` from ``coreval select --format
lm-eval`` and ``--log_samples``. That end-to-end test needs the ``lmeval`` extra and
skips without it; the others do not.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from coreval.cli import app
from coreval.data.lm_eval import lm_eval_samples, read_lm_eval
from coreval.errors import ValidationError

TASKS = ("coreval_tiny_a", "coreval_tiny_b")
N_DOCS = 20
STAMP = "2024-05-01T10-00-00.000000"


def _docs(task: str) -> list[dict]:
    """The documents of a tiny multiple-choice task."""
    t = TASKS.index(task)
    return [{"question": f"{task}: question {i}?", "choices": ["w", "x", "y", "z"],
             "answer": (i + t) % 4} for i in range(N_DOCS)]


def _doc_hash(doc: dict) -> str:
    """lm-eval's ``doc_hash``: SHA-256 of the document as indented JSON (evaluator.py)."""
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _write_source_logs(folder: Path, n_models: int = 12, seed: int = 0) -> None:
    """Per-sample logs of ``n_models`` source models, one folder each (2PL-like scores)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(size=(len(TASKS), N_DOCS))
    for m, ability in enumerate(np.linspace(-1.5, 1.5, n_models)):
        model = folder / f"org__source-{m}"
        model.mkdir(parents=True)
        for t, task in enumerate(TASKS):
            p = 1.0 / (1.0 + np.exp(-(ability - difficulty[t])))
            rows = [{"doc_id": i, "doc": doc, "filter": "none", "metrics": ["acc"],
                     "doc_hash": _doc_hash(doc), "acc": float(rng.random() < p[i])}
                    for i, doc in enumerate(_docs(task))]
            (model / f"samples_{task}_{STAMP}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows))


def test_lm_eval_samples_per_task():
    got = lm_eval_samples(["b/7", "a/3", "b/2", "a/10", "org/task/5"])
    assert got == {"b": [2, 7], "a": [3, 10], "org/task": [5]}
    assert list(got) == ["b", "a", "org/task"]
    with pytest.raises(ValidationError, match=r"item7.*not lm-eval document ids"):
        lm_eval_samples(["a/1", "item7"])


def test_select_format_lm_eval_writes_the_samples_json(tmp_path):
    _write_source_logs(tmp_path / "source")
    out = tmp_path / "samples.json"
    res = CliRunner().invoke(app, ["select", str(tmp_path / "source"), "--method", "random+",
                                   "--budget", "6", "--format", "lm-eval", "--out", str(out)])
    assert res.exit_code == 0, res.output
    samples = json.loads(out.read_text())
    csv = CliRunner().invoke(app, ["select", str(tmp_path / "source"), "--method", "random+",
                                   "--budget", "6"])
    items = [line.split(",")[0] for line in csv.output.strip().splitlines()[1:]]
    assert samples == lm_eval_samples(items)
    assert sum(len(v) for v in samples.values()) == 6
    assert set(samples) <= set(TASKS)
    assert all(v == sorted(v) and all(isinstance(i, int) for i in v) for v in samples.values())


def test_predict_from_refuses_logs_of_other_documents(tmp_path):
    """A new model's log whose doc_hash differs from the source logs' names task and doc."""
    _write_source_logs(tmp_path / "source")
    runner = CliRunner()
    sel = runner.invoke(app, ["select", str(tmp_path / "source"), "--method", "random+",
                              "--budget", "6", "--save", str(tmp_path / "sel")])
    assert sel.exit_code == 0, sel.output
    from coreval.saved_selection import load_selection

    coreset = load_selection(tmp_path / "sel").coreset.items.astype(str)
    new = tmp_path / "new" / "org__new-model"
    new.mkdir(parents=True)
    shifted = sorted(coreset)[0]  # this document's id now names another document
    for task in TASKS:
        docs = _docs(task)
        rows = [{"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": 1.0,
                 "doc_hash": _doc_hash(docs[(i + 1) % N_DOCS] if f"{task}/{i}" == shifted
                                       else docs[i])}
                for i in range(N_DOCS) if f"{task}/{i}" in set(coreset)]
        if rows:
            (new / f"samples_{task}_{STAMP}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows))
    res = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(new)])
    task, _, doc = shifted.rpartition("/")
    assert res.exit_code == 2
    assert f"task {task!r} doc {doc}: doc_hash differs from the source logs" in res.output
    # the same logs with the right documents predict
    for path in new.iterdir():
        task = path.name[len("samples_"):-len(f"_{STAMP}.jsonl")]
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        for r in rows:
            r["doc_hash"] = _doc_hash(_docs(task)[r["doc_id"]])
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    ok = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"), str(new)])
    assert ok.exit_code == 0, ok.output


def _write_new_logs(folder: Path, items, *, acc: float = 0.0, acc_norm: float = 1.0,
                    extra_task: bool = False, shifted: str | None = None) -> None:
    """A new model's logs of ``items`` that log acc and acc_norm (the source logs only acc);
    ``shifted``: that document's hash names another document."""
    folder.mkdir(parents=True)
    wanted = set(map(str, items))
    for task in TASKS:
        docs = _docs(task)
        rows = [{"doc_id": i, "filter": "none", "metrics": ["acc", "acc_norm"], "acc": acc,
                 "acc_norm": acc_norm,
                 "doc_hash": _doc_hash(docs[(i + 1) % N_DOCS] if f"{task}/{i}" == shifted
                                       else docs[i])}
                for i in range(N_DOCS) if f"{task}/{i}" in wanted]
        if rows:
            (folder / f"samples_{task}_{STAMP}.jsonl").write_text(
                "".join(json.dumps(r) + "\n" for r in rows))
    if extra_task:  # a task the source models were never run on
        (folder / f"samples_other_task_{STAMP}.jsonl").write_text(
            json.dumps({"doc_id": 0, "filter": "none", "acc": 1.0}) + "\n")


def test_predict_reads_a_new_models_logs_as_the_source_logs_were_read(tmp_path):
    """Refitting (predict DATA LOGDIR) and --from read the new logs alike: the source's
    metric per task (not the new logs' automatic choice), its doc hashes, only its tasks."""
    import coreval

    _write_source_logs(tmp_path / "source")
    source = read_lm_eval(tmp_path / "source")
    runner = CliRunner()
    # a seed whose coreset lies in one task: the new model is run on that task only
    seed = next(s for s in range(50) if len({i.split("/")[0] for i in coreval.select(
        source, "random+", budget=3, seed=s).coreset.items}) == 1)
    coreset = coreval.select(source, "random+", budget=3, seed=seed).coreset.items
    _write_new_logs(tmp_path / "new" / "org__new", coreset, extra_task=True)
    csv = tmp_path / "zeros.csv"
    csv.write_text("item,score\n" + "".join(f"{i},0\n" for i in coreset))
    args = ["--method", "random+", "--budget", "3", "--seed", str(seed)]
    res = runner.invoke(app, ["predict", str(tmp_path / "source"), str(csv), *args])
    assert res.exit_code == 0, res.output
    want = json.loads(res.output[res.output.index("{"):])
    got = runner.invoke(app, ["predict", str(tmp_path / "source"), str(tmp_path / "new"),
                              *args, "--tasks", ",".join(TASKS)])
    assert got.exit_code == 0, got.output
    assert json.loads(got.output[got.output.index("{"):])["score"] == want["score"]  # acc
    # a document of another version of the task is refused on this path too
    _write_new_logs(tmp_path / "bad" / "org__new", coreset, shifted=str(coreset[0]))
    bad = runner.invoke(app, ["predict", str(tmp_path / "source"), str(tmp_path / "bad"),
                              *args])
    assert bad.exit_code == 2 and "doc_hash differs" in bad.output, bad.output
    # --from: a --metric that differs from the source's is refused, not merged
    sel = runner.invoke(app, ["select", str(tmp_path / "source"), *args, "--save",
                              str(tmp_path / "sel")])
    assert sel.exit_code == 0, sel.output
    task = coreset[0].split("/")[0]
    other = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"),
                                str(tmp_path / "new"), "--metric", f"{task}=acc_norm"])
    assert other.exit_code == 2 and "differs from the metric" in other.output, other.output
    same = runner.invoke(app, ["predict", "--from", str(tmp_path / "sel"),
                               str(tmp_path / "new"), "--metric", f"{task}=acc"])
    assert same.exit_code == 0, same.output
    assert json.loads(same.output[same.output.index("{"):])["score"] == want["score"]


def test_read_lm_eval_refuses_unknown_metric_tasks_and_nan_scores(tmp_path):
    _write_source_logs(tmp_path / "source", n_models=2)
    with pytest.raises(ValidationError, match="coreval_tiny_x"):
        read_lm_eval(tmp_path / "source", metric={"coreval_tiny_x": "acc"})
    path = next((tmp_path / "source").rglob(f"samples_{TASKS[0]}_*.jsonl"))
    lines = path.read_text().splitlines()
    lines[3] = lines[3].replace('"acc": 1.0', '"acc": NaN').replace('"acc": 0.0', '"acc": NaN')
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ValidationError, match="not a finite number"):
        read_lm_eval(tmp_path / "source")


def test_select_format_lm_eval_needs_lm_eval_ids(tmp_path):
    from coreval.data.simulate import simulate

    path = tmp_path / "m.csv"
    simulate(20, 30, seed=0).matrix.to_frame().to_csv(path)
    res = CliRunner().invoke(app, ["select", str(path), "--format", "lm-eval"])
    assert res.exit_code == 2 and "not lm-eval document ids" in res.output
    bad = CliRunner().invoke(app, ["select", str(path), "--format", "json"])
    assert bad.exit_code == 2 and "--format must be csv or lm-eval" in bad.output


# ----------------------------------------------------------------- end to end with lm-eval
def _dummy_lm_class():
    """A deterministic dummy LM for lm-eval: log-likelihoods from a hash of the prompt."""
    from lm_eval.api.model import LM

    class HashLM(LM):
        def __init__(self, pretrained: str = "dummy/hash-lm", **kwargs) -> None:
            super().__init__()
            self.pretrained = pretrained

        def _score(self, *parts: str) -> float:
            digest = hashlib.sha256("\x1f".join((self.pretrained, *parts)).encode()).digest()
            return -int.from_bytes(digest[:4], "big") / 2**32

        def loglikelihood(self, requests, disable_tqdm: bool = False):
            return [(self._score(*r.args), False) for r in requests]

        def loglikelihood_rolling(self, requests, disable_tqdm: bool = False):
            return [self._score(*r.args) for r in requests]

        def generate_until(self, requests, disable_tqdm: bool = False):
            return [str(int(-10 * self._score(r.args[0]))) for r in requests]

    return HashLM


def run_lm_eval(argv: list[str]) -> None:
    """``lm_eval`` with the dummy model registered (run in a subprocess by the test)."""
    from lm_eval.__main__ import cli_evaluate
    from lm_eval.api.registry import register_model

    register_model("coreval-hash-lm")(_dummy_lm_class())
    sys.argv = ["lm_eval", *argv]
    cli_evaluate()


def _write_tasks(folder: Path) -> None:
    """Two multiple-choice tasks, each a YAML config over a local JSONL file."""
    folder.mkdir()
    for task in TASKS:
        data = folder / f"{task}.jsonl"
        data.write_text("".join(json.dumps(d) + "\n" for d in _docs(task)))
        (folder / f"{task}.yaml").write_text(
            f"task: {task}\n"
            "dataset_path: json\n"
            f"dataset_kwargs:\n  data_files:\n    test: {data}\n"
            "test_split: test\n"
            "output_type: multiple_choice\n"
            'doc_to_text: "{{question}}"\n'
            'doc_to_choice: "{{choices}}"\n'
            'doc_to_target: "{{answer}}"\n'
            "metric_list:\n  - metric: acc\n")


def test_select_lm_eval_on_the_subset_then_predict_from(tmp_path):
    pytest.importorskip("lm_eval", reason="needs lm-eval (the test-only extra: pip install "
                                          "-e '.[lmeval]')")
    _write_source_logs(tmp_path / "source")
    runner = CliRunner()
    samples, saved = tmp_path / "samples.json", tmp_path / "selection"
    sel = runner.invoke(app, ["select", str(tmp_path / "source"), "--method", "random++",
                              "--budget", "8", "--seed", "2", "--format", "lm-eval",
                              "--out", str(samples), "--save", str(saved)])
    assert sel.exit_code == 0, sel.output
    wanted = json.loads(samples.read_text())

    _write_tasks(tmp_path / "tasks")
    hf = tmp_path / "hf"
    env = {**os.environ, "HF_HOME": str(hf), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1",
           "TRANSFORMERS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
    argv = ["run", "--model", "coreval-hash-lm", "--model_args", "pretrained=dummy/new-model",
            "--tasks", ",".join(TASKS), "--include_path", str(tmp_path / "tasks"),
            "--samples", str(samples), "--log_samples", "--output_path", str(tmp_path / "new")]
    code = (f"import sys; sys.path.insert(0, {str(Path(__file__).parent)!r}); "
            f"import test_lm_eval_loop as t; t.run_lm_eval({argv!r})")
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]

    logs = read_lm_eval(tmp_path / "new", strict=False)
    assert logs.models.tolist() == ["dummy/new-model"]  # from the results JSON
    # the documents lm-eval ran are those of the source logs (same doc_hash)
    source = read_lm_eval(tmp_path / "source")
    assert (logs.item_meta["doc_hash"] == source.item_meta["doc_hash"].reindex(logs.items)).all()
    assert lm_eval_samples(logs.items) == {t: wanted[t] for t in logs.item_meta["group"]
                                           .unique()}  # lm-eval ran the coreset only
    assert len(logs.items) == 8
    predict = runner.invoke(app, ["predict", "--from", str(saved), str(tmp_path / "new")])
    assert predict.exit_code == 0, predict.output
    card = json.loads(predict.stdout[predict.stdout.index("{"):])
    assert card["method"] == "random++" and card["k"] == 8 and card["seed"] == 2
    assert 0.0 <= card["lower"] <= card["score"] <= card["upper"] <= 1.0
    assert card["upper"] > card["lower"] and card["interval"] == "jackknife+"
