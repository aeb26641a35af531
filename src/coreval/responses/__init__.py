"""Cached model responses: a response store, embedders and an on-disk embedding cache."""

from coreval.responses.embed import (
    CallableEmbedder,
    EmbeddedResponses,
    EmbeddingCache,
    EmbedStats,
    OneHotEmbedder,
    SentenceTransformerEmbedder,
    embed_responses,
    embed_texts,
)
from coreval.responses.store import ResponseStore

__all__ = [
    "CallableEmbedder",
    "EmbedStats",
    "EmbeddedResponses",
    "EmbeddingCache",
    "OneHotEmbedder",
    "ResponseStore",
    "SentenceTransformerEmbedder",
    "embed_responses",
    "embed_texts",
]
