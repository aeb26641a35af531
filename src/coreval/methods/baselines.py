"""Baseline methods of the mRMR paper.

==================  ==========================  ==============================
name                selector                    predictor
==================  ==========================  ==============================
random              RandomSelector              MeanPredictor (split conformal)
random+ / ++        RandomSelector              ridge / poly kernel ridge
anchor-points       AnchorPointsSelector        weighted MeanPredictor
anchor-points+/++   AnchorPointsSelector        ridge / poly kernel ridge
lasso               LassoSelector               LassoPredictor (selector's model)
lasso+ / ++         LassoSelector               ridge / poly kernel ridge
search+ / ++        RandomSearchSelector        ridge / poly kernel ridge
==================  ==========================  ==============================

``search++`` scores its candidate coresets with kernel ridge as well
(the reference's ``krandom_search_and_learn``).
"""

from __future__ import annotations

from coreval.methods.registry import Component, declare
from coreval.prediction.lasso import LassoPredictor
from coreval.prediction.mean import MeanPredictor
from coreval.prediction.ridge import KernelRidgePredictor, RidgePredictor
from coreval.selection.anchor_points import AnchorPointsSelector
from coreval.selection.lasso import LassoSelector
from coreval.selection.random import RandomSelector
from coreval.selection.random_search import RandomSearchSelector

PAPER = ("Bowyer et al., 'Efficient Benchmarking Is Just Feature Selection and Multiple "
         "Regression' (baselines; reference code sambowyer/mrmr_eval)")

declare("random", RandomSelector, MeanPredictor, refits=True,
        description="uniformly random items, mean score", reference=PAPER)
declare("anchor-points", AnchorPointsSelector, MeanPredictor, refits=True,
        description="k-medoids anchor points, cluster-weighted mean",
        reference="Vivek et al. 2024, 'Anchor Points'; " + PAPER)
declare("lasso", LassoSelector, LassoPredictor, refits=True,
        description="lasso support, lasso prediction", reference=PAPER)
declare("search+", Component(RandomSearchSelector, fixed={"kernel": False}), RidgePredictor,
        description="best of 1000 random coresets (ridge on held-out source models) "
                    "+ ridge refit", reference=PAPER)
declare("search++", Component(RandomSearchSelector, fixed={"kernel": True}),
        KernelRidgePredictor,
        description="best of 1000 random coresets (kernel ridge) + polynomial kernel ridge "
                    "refit", reference=PAPER)
