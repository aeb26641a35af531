"""Scales++ (item-centric, cold-start) methods.

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

from coreval.methods.registry import Component, declare
from coreval.prediction.item_centric import ScalesPredictor
from coreval.selection.item_centric import ScalesLiteSelector, ScalesSelector

PAPER = ("Bean, Seedat, Chen & Schwarz, 'Scales++: Compute Efficient Evaluation Subset "
         "Selection with Cognitive Scales Embeddings' (arXiv:2510.26384)")

declare("scales", ScalesSelector, Component(ScalesPredictor, fixed={"lite": False}),
        description="Scales++: UMAP + k-means on item features, hybrid estimator (cold start)",
        reference=PAPER)
declare("scales-lite", ScalesLiteSelector, Component(ScalesPredictor, fixed={"lite": True}),
        description="Scales++ Lite: kNN-imputed annotations from text embeddings",
        reference=PAPER)
