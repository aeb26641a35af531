"""Tests of coreval.data.splits: reference reproductions and split invariants."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from coreval.data import ScoreMatrix, Split, iter_splits, load_matrix, make_split, simulate
from coreval.errors import ValidationError

BINNED_DATASETS = ["arc_challenge", "ifeval", "openllm_math", "commonsense", "gsm", "math",
                   "med_qa", "mmlu"]


def _load(shared_dir, name: str) -> ScoreMatrix:
    # load_matrix, not the read_npz-based load_shared fixture: three Open LLM files repeat
    # model ids (identical rows), which load_matrix renames while keeping row positions.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return load_matrix(shared_dir / "data" / f"{name}.npz")


@pytest.fixture(scope="module")
def binned_reference(anchors_dir):
    path = anchors_dir / "mrmr_eval" / "splits_binned_n30.json"
    if not path.exists():
        pytest.skip(f"needs {path}, which is absent")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def sim() -> ScoreMatrix:
    return simulate(120, 60, n_families=6, seed=3).matrix


# ------------------------------------------------------------------------ binned
@pytest.mark.shared
@pytest.mark.parametrize("name", BINNED_DATASETS)
def test_binned_reproduces_mrmr_eval_reference(shared_dir, binned_reference, name):
    """Exact source/target index lists (including order) of mrmr_eval, seeds 0-4."""
    matrix = _load(shared_dir, name)
    reference = binned_reference[name]
    assert sorted(reference, key=int) == ["0", "1", "2", "3", "4"]
    for seed, ref in reference.items():
        split = make_split(matrix, "binned", seed=int(seed), n_source=30)
        assert split.source.tolist() == ref["train"], f"{name} seed {seed} source"
        assert split.target.tolist() == ref["test"], f"{name} seed {seed} target"
        assert split.kind == "binned" and split.seed == int(seed)


@pytest.mark.shared
def test_binned_iter_splits_matches_reference_and_default_is_30(shared_dir, binned_reference):
    matrix = _load(shared_dir, "mmlu")
    splits = iter_splits(matrix, "binned", seeds=range(5))
    assert [s.source.tolist() for s in splits] == [
        binned_reference["mmlu"][str(s)]["train"] for s in range(5)]


def test_binned_invariants_on_simulated_data(sim):
    split = make_split(sim, "binned", seed=7, n_source=25)
    assert split.n_source == 25 and split.n_target == sim.n_models - 25
    assert np.array_equal(np.sort(np.concatenate([split.source, split.target])),
                          np.arange(sim.n_models))
    assert np.all(np.diff(split.target) > 0)  # target ascending
    acc = sim.summary_scores()
    # source is ordered by accuracy bin: bin ids along the source never decrease
    edges = np.linspace(acc.min(), acc.max() + 1e-10, 11)
    bins = np.clip(np.digitize(acc[split.source], edges) - 1, 0, 9)
    assert np.all(np.diff(bins) >= 0)
    same = make_split(sim, "binned", seed=7, n_source=25)
    assert np.array_equal(same.source, split.source)
    other = make_split(sim, "binned", seed=8, n_source=25)
    assert not np.array_equal(other.source, split.source)


def test_binned_uses_all_but_one_model_at_the_limit(sim):
    split = make_split(sim, "binned", seed=0, n_source=sim.n_models - 1)
    assert split.n_target == 1


@pytest.mark.parametrize("n_source", [0, 1])
def test_too_few_source_models_raise(sim, n_source):
    with pytest.raises(ValidationError, match="too few source models"):
        make_split(sim, "binned", seed=0, n_source=n_source)


@pytest.mark.parametrize("kind", ["binned", "random"])
def test_n_source_larger_than_models_minus_one_raises(sim, kind):
    with pytest.raises(ValidationError, match="n_source=120"):
        make_split(sim, kind, seed=0, n_source=sim.n_models)


# ------------------------------------------------------------------------ kfold
@pytest.mark.shared
@pytest.mark.parametrize(("name", "val_sizes", "train_sizes"), [
    ("mteb", [27, 27, 27] + [26] * 7, [236, 236, 236] + [237] * 7),
    ("merged", [12] * 8 + [11] * 2, [106] * 10),
    ("benchpress", [9] * 3 + [8] * 7, [74] * 3 + [75] * 7),
])
def test_kfold_fold_sizes_match_benchmark_selection_protocol(shared_dir, name, val_sizes,
                                                             train_sizes):
    matrix = _load(shared_dir, name)
    splits = make_split(matrix, "kfold", seed=None)
    assert [s.n_target for s in splits] == val_sizes
    assert [s.n_source for s in splits] == train_sizes
    assert [s.fold for s in splits] == list(range(10))
    assert [s.seed for s in splits] == list(range(10))
    # validation folds partition the models
    assert np.array_equal(np.sort(np.concatenate([s.target for s in splits])),
                          np.arange(matrix.n_models))


@pytest.mark.shared
def test_kfold_merged_subsampling_follows_protocol(shared_dir):
    """Protocol §2 written out: folds 8-9 of MERGED drop one model of a 107-model pool."""
    matrix = _load(shared_dir, "merged")
    m = matrix.n_models
    parts = np.array_split(np.random.default_rng(42).permutation(m), 10)
    splits = make_split(matrix, "kfold", seed=None)
    for f, split in enumerate(splits):
        pool = np.concatenate([parts[j] for j in range(10) if j != f])
        assert split.target.tolist() == parts[f].tolist()
        if len(pool) == 107:
            expected = np.random.default_rng((42, f, 1000)).permutation(pool)[:106]
            assert split.source.tolist() == expected.tolist()
        else:
            assert split.source.tolist() == pool.tolist()
    assert sum(len(s.source) + len(s.target) < m for s in splits) == 2


def test_kfold_iter_splits_selects_folds(sim):
    every = iter_splits(sim, "kfold", seeds=None, folds=5)
    assert len(every) == 5
    chosen = iter_splits(sim, "kfold", seeds=[3, 1], folds=5)
    assert [s.fold for s in chosen] == [3, 1]
    assert np.array_equal(chosen[0].target, every[3].target)
    with pytest.raises(ValidationError, match=r"folds 0\.\.4"):
        iter_splits(sim, "kfold", seeds=[5], folds=5)


def test_kfold_rejects_n_source_and_bad_folds(sim):
    with pytest.raises(ValidationError, match="n_source does not apply"):
        make_split(sim, "kfold", seed=None, n_source=10)
    with pytest.raises(ValidationError, match="folds must be between"):
        make_split(sim, "kfold", seed=None, folds=1)


def test_kfold_larger_holdout_subsamples_the_pool(sim):
    splits = make_split(sim, "kfold", seed=None, folds=10, holdout=0.5)
    assert all(s.n_source == 60 for s in splits)  # round(0.5 * 120) < pool of 108


# ------------------------------------------------------------------------ random
def test_random_split_is_seeded_and_disjoint(sim):
    split = make_split(sim, "random", seed=1, n_source=40)
    assert split.n_source == 40 and split.n_target == 80
    assert np.intersect1d(split.source, split.target).size == 0
    assert np.array_equal(np.sort(np.concatenate([split.source, split.target])),
                          np.arange(sim.n_models))
    again = make_split(sim, "random", seed=1, n_source=40)
    assert np.array_equal(again.source, split.source)
    expected = np.sort(np.random.default_rng(1).permutation(sim.n_models)[:40])
    assert np.array_equal(split.source, expected)
    assert not np.array_equal(make_split(sim, "random", seed=2, n_source=40).source,
                              split.source)


def test_random_default_holds_out_the_holdout_fraction(sim):
    split = make_split(sim, "random", seed=0, holdout=0.25)
    assert split.n_target == 30


def test_iter_splits_one_per_seed(sim):
    splits = iter_splits(sim, "random", seeds=[4, 5, 6], n_source=10)
    assert [s.seed for s in splits] == [4, 5, 6]
    with pytest.raises(ValidationError, match="at least one seed"):
        iter_splits(sim, "random", seeds=None)


# ------------------------------------------------------------------------ lofo
def test_lofo_one_split_per_family(sim):
    splits = make_split(sim, "lofo", seed=0)
    families = sim.families.astype(str)
    assert [s.label for s in splits] == sorted(set(families))
    for split in splits:
        assert set(families[split.target]) == {split.label}
        assert split.label not in set(families[split.source])
        assert split.n_source + split.n_target == sim.n_models


def test_lofo_subsample_and_single_model_family():
    meta = pd.DataFrame({"family": ["a", "a", "b", "b", "b", "c"]},
                        index=[f"model{i}" for i in range(6)])
    matrix = ScoreMatrix(np.eye(6), model_meta=meta)
    splits = make_split(matrix, "lofo", seed=3, n_source=2)
    assert [s.label for s in splits] == ["a", "b", "c"]
    assert splits[2].target.tolist() == [5]
    assert all(s.n_source == 2 for s in splits)
    with pytest.raises(ValidationError, match="exceeds the 3 models outside family 'b'"):
        make_split(matrix, "lofo", seed=0, n_source=4)


def test_lofo_errors():
    values = np.eye(4)
    with pytest.raises(ValidationError, match="no 'family' column"):
        make_split(ScoreMatrix(values), "lofo", seed=0)
    meta = pd.DataFrame({"family": ["a", None, "b", ""]},
                        index=[f"model{i}" for i in range(4)])
    with pytest.raises(ValidationError, match="without a family label: model1, model3"):
        make_split(ScoreMatrix(values, model_meta=meta), "lofo", seed=0)
    meta = pd.DataFrame({"family": ["a", "a", "a", "b"]}, index=[f"model{i}" for i in range(4)])
    with pytest.raises(ValidationError, match="family 'a': too few source models"):
        make_split(ScoreMatrix(values, model_meta=meta), "lofo", seed=0)


# ------------------------------------------------------------------------ misc
def test_unknown_kind_and_bad_arguments(sim):
    with pytest.raises(ValidationError, match="unknown split kind"):
        make_split(sim, "stratified", seed=0)
    with pytest.raises(ValidationError, match="holdout"):
        make_split(sim, "random", seed=0, holdout=1.5)
    with pytest.raises(ValidationError, match="integer seed"):
        make_split(sim, "random", seed=None)
    with pytest.raises(ValidationError, match="at least 3 models"):
        make_split(ScoreMatrix(np.eye(2)), "random", seed=0)


def test_split_apply_and_overlap_check(sim):
    split = make_split(sim, "random", seed=0, n_source=5)
    source, target = split.apply(sim)
    assert source.shape == (5, sim.n_items) and target.n_models == sim.n_models - 5
    assert np.array_equal(source.values, sim.values[split.source])
    with pytest.raises(ValidationError, match="overlap"):
        Split(np.array([0, 1]), np.array([1, 2]), "random", 0)
