"""Adaptive tests, by selection rule: ``cat-score``, ``cat-fisher``, ``cat-kl``.

The "coreset" is the whole item bank and the budget is the number of items each target
model answers (:class:`coreval.selection.item_bank.ItemBankSelector`); the predictor runs
one adaptive test per target model (:class:`coreval.prediction.adaptive.AdaptivePredictor`).
Option ``width=0.04`` adds the interval-width stop.

References
----------
Chang, H.-H. & Ying, Z. (1996), a global information approach to computerized adaptive
testing (KL); Lord, F. M. (1980), Applications of IRT to practical testing problems
(Fisher information); Hofmann et al. (2025), Fluid Benchmarking.
"""

from __future__ import annotations

from coreval.irt.source_fit import BAYES_FIT
from coreval.methods.registry import Component, declare
from coreval.prediction.adaptive import AdaptivePredictor
from coreval.selection.item_bank import ItemBankSelector

RULES = {"cat-score": ("score", "expected reduction of the full score's variance"),
         "cat-fisher": ("fisher", "Fisher information at the posterior mean ability"),
         "cat-kl": ("kl", "posterior-weighted KL information")}

for _name, (_rule, _what) in RULES.items():
    declare(_name, ItemBankSelector, Component(AdaptivePredictor, fixed={"rule": _rule}),
            shared={"irt": BAYES_FIT},
            description=f"adaptive test, next item by {_what}",
            reference="coreval; Chang & Ying 1996; Lord 1980")
