"""Scales++ (item-centric, cold-start) methods, registered by name.

==============  ===================  =====================================
name            selector             predictor
==============  ===================  =====================================
scales          ScalesSelector       ScalesPredictor (hybrid estimator)
scales-lite     ScalesLiteSelector   ScalesPredictor(lite=True)
==============  ===================  =====================================

Both read item features from ``item_meta`` columns prefixed ``"feat_"`` (or a
``features=`` option); ``scales-lite`` also needs ``"emb_"`` text-embedding
columns for every item and predicts the missing annotations with kNN. Neither
selector reads source-model scores (``uses_source_models = False``).
"""

from __future__ import annotations

from typing import Any

from coreval.prediction.base import Predictor
from coreval.prediction.item_centric import ScalesPredictor
from coreval.registry import Method, register_method
from coreval.selection.base import Selector
from coreval.selection.item_centric import ScalesLiteSelector, ScalesSelector

PAPER = ("Bean, Seedat, Chen & Schwarz, 'Scales++: Compute Efficient Evaluation Subset "
         "Selection with Cognitive Scales Embeddings' (arXiv:2510.26384)")


def _keep(options: dict[str, Any], cls: type) -> dict[str, Any]:
    params = cls._get_param_names()
    return {k: v for k, v in options.items() if k in params and k not in ("k", "seed")}


def scales_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """``ScalesSelector(k, seed, features, feature_prefix, reducer, ...)``."""
    return ScalesSelector(k=k, seed=seed, **_keep(options, ScalesSelector))


def scales_lite_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """``ScalesLiteSelector(k, seed, ...)``."""
    return ScalesLiteSelector(k=k, seed=seed, **_keep(options, ScalesLiteSelector))


def scales_predictor(seed: int = 0, **options: Any) -> Predictor:
    """``ScalesPredictor(...)`` (deterministic; the seed is unused)."""
    return ScalesPredictor(**_keep(options, ScalesPredictor))


def scales_lite_predictor(seed: int = 0, **options: Any) -> Predictor:
    """``ScalesPredictor(lite=True, ...)``."""
    return ScalesPredictor(**{**_keep(options, ScalesPredictor), "lite": True})


register_method(Method("scales", scales_selector, scales_predictor,
                       description="Scales++: UMAP + k-means on item features, hybrid estimator "
                                   "(cold start)", reference=PAPER))
register_method(Method("scales-lite", scales_lite_selector, scales_lite_predictor,
                       description="Scales++ Lite: kNN-imputed annotations from text embeddings",
                       reference=PAPER))
