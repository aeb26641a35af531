"""Baseline methods of the mRMR paper, registered by name.

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

from typing import Any

from coreval.methods._variants import kernel_ridge_predictor, ridge_predictor
from coreval.prediction.base import Predictor
from coreval.prediction.mean import MeanPredictor
from coreval.registry import Method, register_method
from coreval.selection.anchor_points import AnchorPointsSelector
from coreval.selection.base import Selector
from coreval.selection.lasso import LassoPredictor, LassoSelector
from coreval.selection.random import RandomSelector
from coreval.selection.random_search import RandomSearchSelector

PAPER = ("Bowyer et al., 'Efficient Benchmarking Is Just Feature Selection and Multiple "
         "Regression' (baselines; reference code sambowyer/mrmr_eval)")


def _keep(options: dict[str, Any], cls: type) -> dict[str, Any]:
    params = cls._get_param_names()
    return {k: v for k, v in options.items() if k in params}


def random_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """``RandomSelector(k, seed)``."""
    return RandomSelector(k=k, seed=seed)


def anchor_points_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """``AnchorPointsSelector(k, seed, max_iter)``."""
    return AnchorPointsSelector(k=k, seed=seed, **_keep(options, AnchorPointsSelector))


def lasso_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """``LassoSelector(k, alphas, max_iter)`` (deterministic; the seed is unused)."""
    opts = _keep(options, LassoSelector)
    opts.pop("seed", None)
    return LassoSelector(k=k, seed=seed, **opts)


def search_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """``RandomSearchSelector(k, n_search=1000, seed, kernel=False)``."""
    opts = _keep(options, RandomSearchSelector)
    opts.pop("seed", None)
    return RandomSearchSelector(k=k, seed=seed, **opts)


def kernel_search_selector(k: int, seed: int = 0, **options: Any) -> Selector:
    """``RandomSearchSelector(k, n_search=1000, seed, kernel=True)``."""
    opts = _keep(options, RandomSearchSelector)
    opts.pop("seed", None)
    opts["kernel"] = True
    return RandomSearchSelector(k=k, seed=seed, **opts)


def mean_predictor(seed: int = 0, **options: Any) -> Predictor:
    """``MeanPredictor(level)``; uses the coreset's weights when it has them."""
    return MeanPredictor(**_keep(options, MeanPredictor))


def lasso_predictor(seed: int = 0, **options: Any) -> Predictor:
    """``LassoPredictor(level, max_iter)``: the selector's lasso, jackknife+ interval."""
    return LassoPredictor(**_keep(options, LassoPredictor))


def _register() -> None:
    from coreval.methods._variants import register_with_refits

    register_with_refits("random", random_selector, mean_predictor,
                         description="uniformly random items, mean score", reference=PAPER)
    register_with_refits("anchor-points", anchor_points_selector, mean_predictor,
                         description="k-medoids anchor points, cluster-weighted mean",
                         reference="Vivek et al. 2024, 'Anchor Points'; " + PAPER)
    register_with_refits("lasso", lasso_selector, lasso_predictor,
                         description="lasso support, lasso prediction", reference=PAPER)
    register_method(Method("search+", search_selector, ridge_predictor,
                           description="best of 1000 random coresets (ridge on held-out "
                                       "source models) + ridge refit", reference=PAPER))
    register_method(Method("search++", kernel_search_selector, kernel_ridge_predictor,
                           description="best of 1000 random coresets (kernel ridge) + "
                                       "polynomial kernel ridge refit", reference=PAPER))


_register()
