"""Prior blocks shared by the IRT models: discrimination, intercept, guessing, abilities.

Three prior families are offered (``priors=``):

``"weak"``
    Plain weakly-informative priors: ``a ~ LogNormal(0, 1)`` (D = 1),
    ``d ~ Normal(0, 3)``, ``theta ~ Normal(0, I)``.
``"hierarchical"``
    The shared hierarchical priors of the mRMR paper, appendix G.2
    ("Efficient Benchmarking Is Just Feature Selection and Multiple Regression"):
    location ``mu ~ Normal(0, 10)`` and precision ``u ~ Gamma(1, 1)`` per
    parameter family (per latent dimension for discriminations), and
    ``x ~ Normal(mu, 1 / u)`` (variance ``1/u``). The paper writes the per-item
    location as ``theta_i``, the per-model offset as ``beta_m`` and the ability
    as ``gamma_m``; following its reference code (py-irt ``multidim_2pl``) coreval
    implements the standard 2PL with per-item discrimination ``a_i`` (the paper's
    ``theta_i``) and per-item intercept ``d_i`` (the paper's ``-beta``), and keeps
    the ability ``theta_m ~ Normal(0, I)`` fixed, which identifies the scale and
    location of the latent space. For D = 1 the discriminations are kept positive
    by truncating their Normal prior at zero, ``a ~ Normal(mu_a, 1/u_a)`` restricted
    to ``a > 0``. (A hierarchy on ``log a`` instead, which coreval used before,
    lets the learnt spread grow on small near-separable matrices: with 30 HELM
    source models ``u_a`` fell to 0.3, 5 % of the items got ``a > 20`` and gp-IRT's
    error rose 3.6 pp on mmlu. The Normal's light tail is what keeps the reference
    fit from doing so; see benchmarks/results/irt_methods.md.) The 3PL's guessing
    parameters get a learnt level, ``mu_c ~ Beta(1, 4)`` and
    ``c ~ Beta(5 mu_c, 5 (1 - mu_c))`` (:func:`guessing`); under ``"weak"`` they
    are ``c ~ Beta(1, 4)``.
``"signed"``
    The hierarchical family with D = 1 discriminations of either sign:
    ``a_i ~ Normal(mu_a, 1/u_a)`` (variance ``1/u_a``, ``u_a ~ Gamma(1, 1)``) with a
    *positive* location ``mu_a ~ LogNormal(0, 1)``. The 2PL is invariant under the
    reflection ``theta -> -theta, a -> -a, d -> d``; the truncation of
    ``"hierarchical"`` breaks it by forbidding ``a < 0``, which forces an item
    whose correct answers go with *lower* ability (a negative item-total
    correlation: label noise, an item a majority-class heuristic gets right) to
    ``a ≈ 0``. Here the symmetry is broken by the prior of the hierarchy's mean
    instead: the orientation in which discriminations are positive *on average*
    has the higher prior density, so the latent scale still means "more able"
    while single items may load negatively (on this reflection invariance and its
    identification by priors see Bafumi, Gelman, Park & Kaplan 2005, "Practical
    issues in implementing and understanding Bayesian ideal point estimation",
    Political Analysis 13(2)). For such an item the difficulty ``b = -d / a`` is the ability at
    which ``P = 1/2`` but the item gets *easier* below it; item tables mark these
    items (column ``reversed``). Intercepts, guessing, the 1PL's shared (positive)
    discrimination and the D > 1 loadings are as under ``"hierarchical"``.

Rotation for D > 1
------------------
A D-dimensional 2PL is invariant under rotations of the latent space. coreval
fixes it with a lower-triangular loading constraint on the first D items:
``a[j, l] = 0`` for ``l > j`` and ``a[j, j] > 0`` (``j < D``). Loadings other
than these anchors are real-valued. Item ``j < D`` therefore defines the sign
and orientation of dimension ``j``; compare multidimensional fits only up to
this convention (e.g. through ``a @ a.T``).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist

#: Names accepted by ``priors=``.
PRIORS: tuple[str, ...] = ("weak", "hierarchical", "signed")

#: Prior families with the hierarchical hyperpriors (``mu``, ``u``) of appendix G.2.
HIERARCHICAL: frozenset[str] = frozenset({"hierarchical", "signed"})

WEAK_LOG_A_SCALE = 1.0
WEAK_D_SCALE = 3.0
HYPER_LOC_SCALE = 10.0
#: ``mu_a ~ LogNormal(0, SIGNED_LOG_MU_SCALE)`` under ``priors="signed"``.
SIGNED_LOG_MU_SCALE = 1.0


def lower_triangular_mask(n_items: int, dims: int) -> np.ndarray:
    """Boolean (n_items, dims) mask of free loadings: False where ``l > j`` for ``j < dims``."""
    mask = np.ones((n_items, dims), dtype=bool)
    for j in range(min(dims, n_items)):
        mask[j, j + 1:] = False
    return mask


def _hyper(name: str, shape: tuple[int, ...] = ()) -> tuple[jnp.ndarray, jnp.ndarray]:
    """Location ``mu ~ N(0, 10)`` and scale ``1/sqrt(u)``, ``u ~ Gamma(1, 1)`` (appendix G.2)."""
    mu = numpyro.sample(f"mu_{name}", dist.Normal(0.0, HYPER_LOC_SCALE).expand(shape).to_event(
        len(shape)))
    u = numpyro.sample(f"u_{name}", dist.Gamma(1.0, 1.0).expand(shape).to_event(len(shape)))
    return mu, 1.0 / jnp.sqrt(u)


def discrimination(n_items: int, dims: int, priors: str, *, shared: bool = False) -> jnp.ndarray:
    """Sample item discriminations ``a`` of shape (n_items, dims).

    Parameters
    ----------
    n_items, dims : int
        Number of items and latent dimensions.
    priors : {"weak", "hierarchical", "signed"}
        Prior family (see the module docstring).
    shared : bool
        One common positive discrimination for every item (the 1PL; D = 1 only),
        which is the Rasch model with an estimated latent variance.

    Returns
    -------
    jnp.ndarray
        Loadings (n_items, dims); recorded as the site ``"a"``.
    """
    if shared:
        if priors in HIERARCHICAL:
            mu, scale = _hyper("a")
            prior = dist.TruncatedNormal(mu, scale, low=0.0)
        else:
            prior = dist.LogNormal(0.0, WEAK_LOG_A_SCALE)
        a0 = numpyro.sample("a_shared", prior)
        return numpyro.deterministic("a", jnp.full((n_items, 1), a0))
    if priors == "signed" and dims == 1:
        # Signed discriminations; the positive hierarchy mean fixes the reflection.
        mu = numpyro.sample("mu_a", dist.LogNormal(0.0, SIGNED_LOG_MU_SCALE).expand([1])
                            .to_event(1))
        u = numpyro.sample("u_a", dist.Gamma(1.0, 1.0).expand([1]).to_event(1))
        with numpyro.plate("items", n_items):
            return numpyro.sample("a", dist.Normal(mu, 1.0 / jnp.sqrt(u)).to_event(1))
    if priors in HIERARCHICAL:
        mu, scale = _hyper("a", (dims,))
    else:
        mu, scale = jnp.zeros(dims), jnp.full(dims, WEAK_LOG_A_SCALE)
    if dims == 1:
        positive = (dist.TruncatedNormal(mu, scale, low=0.0) if priors == "hierarchical"
                    else dist.LogNormal(mu, scale))
        with numpyro.plate("items", n_items):
            return numpyro.sample("a", positive.to_event(1))
    # D > 1: positive anchors on the diagonal of the first D items, free loadings elsewhere,
    # zeros above the diagonal (rotation constraint, see module docstring).
    a_diag = numpyro.sample("a_diag", dist.LogNormal(0.0, WEAK_LOG_A_SCALE).expand([dims])
                            .to_event(1))
    load_scale = scale if priors in HIERARCHICAL else jnp.ones(dims)
    load_loc = mu if priors in HIERARCHICAL else jnp.zeros(dims)
    with numpyro.plate("items", n_items):
        a_load = numpyro.sample("a_load", dist.Normal(load_loc, load_scale).to_event(1))
    free = jnp.asarray(lower_triangular_mask(n_items, dims), dtype=a_load.dtype)
    a = a_load * free
    k = min(dims, n_items)
    a = a.at[jnp.arange(k), jnp.arange(k)].set(a_diag[:k])
    return numpyro.deterministic("a", a)


def intercept(n_items: int, priors: str) -> jnp.ndarray:
    """Sample item intercepts ``d`` (n_items,): ``N(0, 3)`` or hierarchical ``N(mu_d, 1/u_d)``."""
    if priors in HIERARCHICAL:
        mu, scale = _hyper("d")
    else:
        mu, scale = 0.0, WEAK_D_SCALE
    with numpyro.plate("items", n_items):
        return numpyro.sample("d", dist.Normal(mu, scale))


#: Concentration of the hierarchical guessing prior (:func:`guessing`).
GUESSING_CONCENTRATION = 5.0


def guessing(n_items: int, priors: str = "weak") -> jnp.ndarray:
    """Sample 3PL lower asymptotes ``c`` of shape (n_items,).

    ``"weak"``: ``c ~ Beta(1, 4)`` (prior mean 0.2). ``"hierarchical"``: the
    benchmark's guessing level is learnt, ``mu_c ~ Beta(1, 4)`` and
    ``c ~ Beta(κ mu_c, κ (1 - mu_c))`` with ``κ =`` :data:`GUESSING_CONCENTRATION`,
    so at ``mu_c = 0.2`` the items' prior is the weak one, and on an open-ended
    benchmark without a chance floor ``mu_c`` (and with it every ``c``) can
    shrink towards 0 instead of being pulled to 0.2.
    """
    if priors not in HIERARCHICAL:
        with numpyro.plate("items", n_items):
            return numpyro.sample("c", dist.Beta(1.0, 4.0))
    mu = numpyro.sample("mu_c", dist.Beta(1.0, 4.0))
    with numpyro.plate("items", n_items):
        return numpyro.sample("c", dist.Beta(GUESSING_CONCENTRATION * mu,
                                             GUESSING_CONCENTRATION * (1.0 - mu)))
