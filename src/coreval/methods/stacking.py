"""Stacked methods: one coreset, several predictors, weights learnt out of fold.

==================  ==========================  ==============================
name                selector                    predictor
==================  ==========================  ==============================
stack-random        RandomSelector              StackingPredictor
stack-mrmr          MRMRSelector                StackingPredictor
stack-irt-anchors   IRTAnchorSelector           StackingPredictor
==================  ==========================  ==============================

The stack's components (option ``components``) are the sample mean, ridge,
polynomial kernel ridge, the gp-IRT estimator and the irt-bayes posterior
mean, all on the selector's coreset, so the budget holds; ``meta`` picks the
meta-learner (non-negative least squares by default) and ``meta_folds`` the
out-of-fold stage, which re-runs the selection in every fold
(:mod:`coreval.prediction.stacking`). The IRT anchor selector and the gp-IRT
component use gp-irt's IRT fit spec (:data:`coreval.irt.source_fit.GPIRT_FIT`), so
they share one fit per set of source models through the fit cache; an option that
changes it (``model="2pl"``) changes both.
"""

from __future__ import annotations

from coreval.irt.source_fit import GPIRT_FIT
from coreval.methods.registry import declare
from coreval.prediction.stacking import StackingPredictor
from coreval.selection.irt_anchors import IRTAnchorSelector
from coreval.selection.mrmr import MRMRSelector
from coreval.selection.random import RandomSelector

REFERENCE = "Breiman 1996, stacked regressions; components as in their own methods"
COMPONENTS = "mean, ridge, kernel ridge, gp-IRT, irt-bayes mean"

declare("stack-random", RandomSelector, StackingPredictor,
        description=f"random items + stacked {COMPONENTS} (NNLS weights out of fold)",
        reference=REFERENCE)
declare("stack-mrmr", MRMRSelector, StackingPredictor,
        description=f"mRMR items + stacked {COMPONENTS} (NNLS weights out of fold)",
        reference=REFERENCE)
declare("stack-irt-anchors", IRTAnchorSelector, StackingPredictor, shared={"irt": GPIRT_FIT},
        description=f"IRT anchor points + stacked {COMPONENTS} (NNLS weights out of fold)",
        reference=REFERENCE)
