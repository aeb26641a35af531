"""Built-in method families; importing a module registers its methods.

One module per family pairs selectors from :mod:`coreval.selection` with
predictors from :mod:`coreval.prediction` under the papers' names.
"""
