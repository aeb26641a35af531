"""Marginal maximum likelihood (MML) for unidimensional dichotomous IRT.

Bock & Aitkin (1981) EM with Gauss-Hermite quadrature as a warm start, then
direct maximisation of the exact marginal log-likelihood: Newton-Raphson with
the observed information of Louis (1982), computed in closed form for the
logistic models, or L-BFGS-B with the analytic gradient (the E-step's expected
complete-data score, Fisher's identity). Standard errors come from the same
observed information.

Parameterisation (slope-intercept), for respondent ``r`` and item ``j``::

    logit P(y_rj = 1 | theta_r) = a_j * theta_r + d_j,    b_j = -d_j / a_j,
    theta_r ~ N(0, 1)                       (N(0, sigma^2) for "rasch")
    3PL:  P = c_j + (1 - c_j) * sigmoid(a_j * theta_r + d_j)

References
----------
Bock, R. D., & Aitkin, M. (1981). Marginal maximum likelihood estimation of
item parameters: Application of an EM algorithm. Psychometrika, 46, 443-459.
Louis, T. A. (1982). Finding the observed information matrix when using the
EM algorithm. JRSS B, 44, 226-233.
Chalmers, R. P. (2012). mirt: A multidimensional item response theory package
for the R environment. Journal of Statistical Software, 48(6).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.linalg import solve_triangular
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from threadpoolctl import threadpool_limits

from coreval._progress import progress_bar
from coreval.errors import ValidationError, preview

__all__ = ["MMLResult", "fit_mml", "marginal_loglik", "quadrature"]

IRTModel = Literal["2pl", "1pl", "rasch", "3pl"]
_MODELS = ("2pl", "1pl", "rasch", "3pl")

# Box constraints on the parameters: they keep items answered all-correct or
# all-wrong (whose likelihood has no finite maximum) at finite values.
A_BOUNDS = (-10.0, 10.0)
#: Largest number of Gauss-Hermite nodes (numpy's nodes overflow from about 371).
MAX_QUAD = 360
#: Nodes of each row's fine grid in :meth:`MMLResult.eap_theta`, and its half-width in sd.
ROW_GRID_NODES = 201
GRID_HALF_WIDTH = 6.0
D_BOUNDS = (-15.0, 15.0)
C_BOUNDS = (1e-6, 0.5)
_EM_WARMUP_TOL = 3e-2  # EM runs until this parameter change, then L-BFGS-B polishes.
_EM_WARMUP_MAX = 50
# Below this many multiply-adds per E-step product, BLAS threads cost more than
# they save (measured 20x slower for 1000 x 50 on a loaded 2-core machine).
_SINGLE_THREAD_WORK = 2e8
# The exact observed information is a dense (2J x 2J) matrix; beyond these sizes
# standard errors are skipped with a warning (per-item blocks alone were tried and
# understate the intercepts' SEs by up to 25% at 60 items: the common shift of all
# intercepts is confounded with the latent mean, a cross-item effect).
_MAX_ITEMS_FULL_SE = 2000
_MAX_MISSING_PATH_WORK = 5e9  # n * J^2 * Q multiply-adds of the missing-data Gram loop
# Newton steps form the Louis Hessian (about 7 n J^2 multiply-adds, ~J/2 E-step
# products with missing data); up to these sizes that beats ~3x more L-BFGS-B steps.
_MAX_ITEMS_NEWTON = 200
_MAX_ITEMS_NEWTON_MISSING = 20


def quadrature(n_quad: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes and weights for a standard normal latent trait.

    Parameters
    ----------
    n_quad : int
        Number of nodes.

    Returns
    -------
    nodes, weights : ndarray, shape (n_quad,)
        ``sum(weights * f(nodes))`` approximates ``E f(theta)``, ``theta ~ N(0, 1)``.
    """
    nodes, weights = hermegauss(n_quad)
    return nodes, weights / np.sqrt(2.0 * np.pi)


# ----------------------------------------------------------------------------- data


@dataclass
class _Data:
    """Responses in the form the E-step uses (duplicate rows collapsed)."""

    y1: np.ndarray  # (n, J) 1.0 where correct, 0 where wrong or missing
    mask: np.ndarray | None  # (n, J) 1.0 where observed; None when nothing is missing
    freq: np.ndarray  # (n,) row frequencies

    @property
    def n_items(self) -> int:
        return self.y1.shape[1]


def _as_binary(y: object, name: str = "y") -> np.ndarray:
    """Validate a 0/1/NaN matrix and return it as float64."""
    try:
        arr = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise ValidationError(
            f"{name} must be a numeric 0/1 matrix (NaN = missing): {exc}") from None
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValidationError(f"{name} must be a non-empty 2-D matrix (respondents x items), "
                              f"got shape {arr.shape}")
    if np.isinf(arr).any():
        raise ValidationError(f"{name} contains infinite values; use 0/1 with NaN for missing")
    observed = arr[~np.isnan(arr)]
    bad = np.unique(observed[(observed != 0.0) & (observed != 1.0)])
    if bad.size:
        raise ValidationError(
            f"{name} must be binary 0/1 (NaN = missing) for dichotomous MML, found values "
            f"{preview(bad.tolist(), 5)}; use a continuous-score IRT model (Beta or Gaussian) "
            "instead")
    return arr


def _prepare(y: np.ndarray, weights: object | None) -> _Data:
    n, _ = y.shape
    if weights is None:
        freq = np.ones(n)
    else:
        try:
            freq = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            raise ValidationError("weights must be numeric row frequencies") from None
        if freq.shape != (n,):
            raise ValidationError(f"weights must have shape ({n},) (one per row of y), "
                                  f"got {freq.shape}")
        if not np.isfinite(freq).all() or (freq < 0).any() or freq.sum() <= 0:
            raise ValidationError("weights must be finite, non-negative and not all zero")
    missing = np.isnan(y)
    # Collapse identical response patterns (pattern x frequency), which makes
    # short tests such as LSAT (2^5 patterns) cost 32 rows instead of 1000.
    codes = np.where(missing, 2, y).astype(np.int8)
    uniq, inverse = np.unique(codes, axis=0, return_inverse=True)
    if uniq.shape[0] < 0.8 * n:
        freq = np.bincount(inverse.ravel(), weights=freq, minlength=uniq.shape[0])
        codes = uniq
    keep = freq > 0
    codes, freq = codes[keep], freq[keep]
    y1 = (codes == 1).astype(np.float64)
    mask = (codes != 2).astype(np.float64) if (codes == 2).any() else None
    return _Data(y1=y1, mask=mask, freq=freq)


def _extreme_items(y: np.ndarray) -> np.ndarray:
    """Items whose observed answers are all correct or all wrong."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        lo, hi = np.nanmin(y, axis=0), np.nanmax(y, axis=0)
    return np.flatnonzero(lo == hi)


# ----------------------------------------------------------------------- model maths


@dataclass
class _Spec:
    """Free-parameter layout of one model: x -> (a, d, c)."""

    model: str
    n_items: int
    prior_a: tuple[float, float] | None
    prior_c: tuple[float, float]

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        j = self.n_items
        if self.model == "2pl":
            return x[:j], x[j:], None
        if self.model == "1pl":
            return np.full(j, x[0]), x[1:], None
        if self.model == "rasch_fixed":
            return np.ones(j), x, None
        return x[:j], x[j:2 * j], x[2 * j:]

    def pack(self, a: np.ndarray, d: np.ndarray, c: np.ndarray | None) -> np.ndarray:
        if self.model == "2pl":
            return np.concatenate([a, d])
        if self.model == "1pl":
            return np.concatenate([[np.mean(a)], d])
        if self.model == "rasch_fixed":
            return d.copy()
        return np.concatenate([a, d, c])

    def fold_grad(self, ga: np.ndarray, gd: np.ndarray, gc: np.ndarray | None) -> np.ndarray:
        """Chain rule from per-item (a, d, c) gradients to the free parameters."""
        if self.model == "2pl":
            return np.concatenate([ga, gd])
        if self.model == "1pl":
            return np.concatenate([[ga.sum()], gd])
        if self.model == "rasch_fixed":
            return gd
        return np.concatenate([ga, gd, gc])

    def bounds(self) -> list[tuple[float, float]]:
        j = self.n_items
        a_lo = 1e-3 if self.prior_a is not None else A_BOUNDS[0]
        a_b, d_b = (a_lo, A_BOUNDS[1]), D_BOUNDS
        if self.model == "2pl":
            return [a_b] * j + [d_b] * j
        if self.model == "1pl":
            return [a_b] + [d_b] * j
        if self.model == "rasch_fixed":
            return [d_b] * j
        return [a_b] * j + [d_b] * j + [C_BOUNDS] * j

    def log_prior(self, x: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        """Log prior density, its gradient and the diagonal of its Hessian.

        Lognormal prior on the slopes (``prior_a = (mu, sigma)`` of ``log a``)
        and Beta(alpha, beta) on the 3PL guessing parameters.
        """
        lp, grad, hess = 0.0, np.zeros_like(x), np.zeros_like(x)
        j = self.n_items
        if self.prior_a is not None and self.model in ("2pl", "1pl", "3pl"):
            mu, sigma = self.prior_a
            idx = slice(0, 1) if self.model == "1pl" else slice(0, j)
            a = x[idx]
            la = np.log(a)
            s2 = sigma**2
            lp += float(np.sum(-la - (la - mu) ** 2 / (2 * s2)))
            grad[idx] = -1.0 / a - (la - mu) / (s2 * a)
            hess[idx] = 1.0 / a**2 - (1.0 - (la - mu)) / (s2 * a**2)
        if self.model == "3pl":
            alpha, beta = self.prior_c
            c = x[2 * j:]
            lp += float(np.sum((alpha - 1) * np.log(c) + (beta - 1) * np.log1p(-c)))
            grad[2 * j:] = (alpha - 1) / c - (beta - 1) / (1 - c)
            hess[2 * j:] = -(alpha - 1) / c**2 - (beta - 1) / (1 - c) ** 2
        return lp, grad, hess


@dataclass
class _EStep:
    """Quantities of one E-step at given item parameters."""

    loglik: float
    post: np.ndarray  # (n, Q) posterior over nodes per row
    r1: np.ndarray  # (J, Q) expected number correct at each node
    nobs: np.ndarray  # (J, Q) expected number observed at each node
    p: np.ndarray  # (J, Q) P(correct) at each node
    sig: np.ndarray  # (J, Q) sigmoid(a theta + d)


def _estep(data: _Data, a: np.ndarray, d: np.ndarray, c: np.ndarray | None,
           nodes: np.ndarray, log_w: np.ndarray) -> _EStep:
    """E-step of Bock & Aitkin (1981): node posteriors and expected counts ``r_jq, n_jq``."""
    z = a[:, None] * nodes[None, :] + d[:, None]
    sig = expit(z)
    if c is None:
        p = sig
        log_p, log_q = log_expit(z), log_expit(-z)
    else:
        p = c[:, None] + (1.0 - c[:, None]) * sig
        log_p, log_q = np.log(p), np.log1p(-c)[:, None] + log_expit(-z)
    # Row log-likelihood at every node as two matrix products (BLAS does the
    # work); with no missing entries the log(1-p) term is the same for every row.
    ll = data.y1 @ (log_p - log_q)
    ll += log_q.sum(axis=0) if data.mask is None else data.mask @ log_q
    ll += log_w
    # Normalise in place (scipy's logsumexp would allocate several n x Q copies).
    top = ll.max(axis=1, keepdims=True)
    ll -= top
    post = np.exp(ll, out=ll)
    total = post.sum(axis=1, keepdims=True)
    post /= total
    lse = (top + np.log(total)).ravel()
    fpost = post * data.freq[:, None]
    r1 = data.y1.T @ fpost
    nobs = (np.broadcast_to(fpost.sum(axis=0), r1.shape) if data.mask is None
            else data.mask.T @ fpost)
    return _EStep(loglik=float(data.freq @ lse), post=post, r1=r1, nobs=nobs, p=p, sig=sig)


def _item_grads(es: _EStep, nodes: np.ndarray, c: np.ndarray | None
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """Gradient of the marginal log-likelihood w.r.t. per-item (a, d, c).

    By Fisher's identity (Louis 1982, sec. 3) it is the expected complete-data
    score: sum_q (r_jq - n_jq p_jq) x_q for the logistic models.
    """
    if c is None:
        gz = es.r1 - es.nobs * es.p
        return gz @ nodes, gz.sum(axis=1), None
    one_c = (1.0 - c)[:, None]
    wrong = es.nobs - es.r1
    gz = es.r1 * one_c * es.sig * (1.0 - es.sig) / es.p - wrong * es.sig
    gc = (es.r1 * (1.0 - es.sig) / es.p - wrong / one_c).sum(axis=1)
    return gz @ nodes, gz.sum(axis=1), gc


def _em_newton_2pl(es: _EStep, nodes: np.ndarray, a: np.ndarray, d: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray]:
    """Vectorised M-step of Bock & Aitkin (1981) for all 2PL items at once.

    One Newton step on each item's expected complete-data log-likelihood
    ``sum_q r_jq log p_jq + (n_jq - r_jq) log(1 - p_jq)``; the 2x2 systems are
    solved in closed form for all items together (no loop over items).
    """
    for _ in range(2):
        z = a[:, None] * nodes + d[:, None]
        p = expit(z)
        gz = es.r1 - es.nobs * p
        w = es.nobs * p * (1.0 - p)
        g_a, g_d = gz @ nodes, gz.sum(axis=1)
        h_aa, h_ad, h_dd = w @ nodes**2, w @ nodes, w.sum(axis=1)
        det = h_aa * h_dd - h_ad**2
        ok = det > 1e-10 * np.maximum(h_aa * h_dd, 1e-300)
        det = np.where(ok, det, 1.0)
        step_a = np.where(ok, (h_dd * g_a - h_ad * g_d) / det, 0.0)
        step_d = np.where(ok, (h_aa * g_d - h_ad * g_a) / det, g_d / np.maximum(h_dd, 1e-12))
        # Damp very long steps (separated items) so EM stays inside the box.
        scale = np.minimum(1.0, 2.0 / np.maximum(np.abs(step_a), np.abs(step_d)).clip(1e-12))
        a = np.clip(a + scale * step_a, *A_BOUNDS)
        d = np.clip(d + scale * step_d, *D_BOUNDS)
    return a, d


# ------------------------------------------------------------------ observed information


def _louis_hessian_2pl(data: _Data, es: _EStep, nodes: np.ndarray) -> np.ndarray:
    """Hessian of the 2PL marginal log-likelihood in closed form (Louis 1982).

    ``H = sum_r f_r [ E(d2 l_r) + E(g g^T) - E(g) E(g)^T ]`` with expectations over
    each row's node posterior. The parameter order is ``(a_1..a_J, d_1..d_J)``.
    Written out by hand because no library computes the observed information of
    a quadrature-based marginal likelihood; the products are arranged so that
    without missing data only three J x J Gram matrices are needed.
    """
    y, mask, f, post, p = data.y1, data.mask, data.freq, es.post, es.p
    n_items = y.shape[1]
    v = post * f[:, None]  # (n, Q)
    pw = [nodes**m for m in range(3)]  # theta^0, theta^1, theta^2
    moments = []  # A^(m) = sum_r sum_q v_rq theta_q^m e_rjq e_rkq, e = y - mask * p
    if mask is None:
        s = v.sum(axis=0)
        for m in range(3):
            u = v @ pw[m]
            cross = (es.r1 * pw[m]) @ p.T
            moments.append((y * u[:, None]).T @ y - cross - cross.T + (p * (pw[m] * s)) @ p.T)
    else:
        moments = [np.zeros((n_items, n_items)) for _ in range(3)]
        for q in range(nodes.size):
            # Rows whose posterior mass at this node is negligible add nothing;
            # dropping them makes the loop several times cheaper for long tests.
            rows = np.flatnonzero(v[:, q] > 1e-14 * f)
            e = y[rows] - mask[rows] * p[:, q]
            gram = (e.T * v[rows, q]) @ e
            for m in range(3):
                moments[m] += pw[m][q] * gram
    # E(g) per row: gbar_a = y theta_bar - mask * (post diag(theta) p^T), gbar_d likewise.
    m_obs = 1.0 if mask is None else mask
    theta_bar = post @ nodes
    g_a = y * theta_bar[:, None] - m_obs * ((post * nodes) @ p.T)
    g_d = y - m_obs * (post @ p.T)
    g = np.hstack([g_a, g_d])
    outer = g.T @ (g * f[:, None])
    # Expected complete-data Hessian: -sum_q n_jq p q x x^T, block-diagonal.
    w = es.nobs * p * (1.0 - p)
    hess = np.block([[moments[2], moments[1]], [moments[1], moments[0]]]) - outer
    idx = np.arange(n_items)
    hess[idx, idx] -= w @ pw[2]
    hess[idx, idx + n_items] -= w @ pw[1]
    hess[idx + n_items, idx] -= w @ pw[1]
    hess[idx + n_items, idx + n_items] -= w @ pw[0]
    return hess


def _numerical_hessian(grad_fn, x: np.ndarray, bounds: list[tuple[float, float]]) -> np.ndarray:
    """Central finite differences of an analytic gradient, symmetrised.

    scipy has no Hessian-from-gradient routine; steps shrink near the box.
    """
    n = x.size
    hess = np.empty((n, n))
    for i in range(n):
        h = 1e-5 * max(1.0, abs(x[i]))
        lo, hi = bounds[i]
        hp, hm = min(h, hi - x[i]), min(h, x[i] - lo)
        if hp <= 0 or hm <= 0:
            hp = hm = h
        xp, xm = x.copy(), x.copy()
        xp[i] += hp
        xm[i] -= hm
        hess[:, i] = (grad_fn(xp) - grad_fn(xm)) / (hp + hm)
    return 0.5 * (hess + hess.T)


# ----------------------------------------------------------------------------- result


@dataclass(frozen=True)
class MMLResult:
    """Item estimates of :func:`fit_mml` (slope-intercept parameterisation).

    Attributes
    ----------
    model : str
        ``"2pl"``, ``"1pl"``, ``"rasch"`` or ``"3pl"``.
    a, d, b : ndarray, shape (n_items,)
        Slopes, intercepts and difficulties ``b = -d / a``.
    c : ndarray or None
        3PL guessing parameters (None for the other models).
    latent_variance : float
        Variance of theta (1 unless estimated, as for ``"rasch"``).
    loglik : float
        Exact marginal log-likelihood (on the quadrature) at the estimate, without priors.
    se_a, se_d : ndarray or None
        Standard errors from the observed information (inverse negative Hessian of
        the marginal log-likelihood plus log-prior). 0 where a parameter is fixed,
        NaN where it sits on its bound; None when ``compute_se=False``.
    se_c : ndarray or None
        Standard errors of ``c`` (3PL only).
    se_latent_variance : float or None
        Delta-method standard error of ``latent_variance`` when it is estimated.
    se_method : str
        ``"louis"`` (exact observed information, closed form), ``"finite-difference"``
        (3PL) or ``"none"`` (not requested, or skipped above 2000 items / for very
        large data with missing entries, with a warning).
    n_iter : int
        EM iterations plus Newton / L-BFGS-B iterations.
    converged : bool
        Whether the optimiser met ``tol`` before ``max_iter``.
    n_quad : int
        Number of Gauss-Hermite nodes used.
    extreme_items : ndarray of int
        Items answered all-correct or all-wrong (bounded estimates only).
    """

    model: str
    a: np.ndarray
    d: np.ndarray
    b: np.ndarray
    c: np.ndarray | None
    latent_variance: float
    loglik: float
    se_a: np.ndarray | None
    se_d: np.ndarray | None
    n_iter: int
    converged: bool
    n_quad: int = 61
    se_c: np.ndarray | None = None
    se_latent_variance: float | None = None
    se_method: str = "none"
    extreme_items: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))

    @property
    def n_items(self) -> int:
        return self.a.size

    def theta_posterior(self, y: object) -> tuple[np.ndarray, np.ndarray]:
        """Posterior of each row's theta on the quadrature grid.

        Parameters
        ----------
        y : array-like, shape (n_resp, n_items)
            0/1 responses, NaN = missing.

        Returns
        -------
        nodes : ndarray, shape (n_quad,)
            Theta values of the grid (scaled by ``sqrt(latent_variance)``).
        posterior : ndarray, shape (n_resp, n_quad)
            Posterior probabilities of the nodes; each row sums to 1.
        """
        arr = _as_binary(y)
        if arr.shape[1] != self.n_items:
            raise ValidationError(f"y has {arr.shape[1]} items, the fit has {self.n_items}")
        missing = np.isnan(arr)
        data = _Data(y1=(arr == 1).astype(np.float64),
                     mask=(~missing).astype(np.float64) if missing.any() else None,
                     freq=np.ones(arr.shape[0]))
        std_nodes, w = quadrature(self.n_quad)
        nodes = np.sqrt(self.latent_variance) * std_nodes
        es = _estep(data, self.a, self.d, self.c, nodes, np.log(w))
        return nodes, es.post

    def eap_theta(self, y: object) -> tuple[np.ndarray, np.ndarray]:
        """Expected a posteriori theta and posterior standard deviation per row.

        Parameters
        ----------
        y : array-like, shape (n_resp, n_items)
            0/1 responses, NaN = missing.

        Returns
        -------
        eap, psd : ndarray, shape (n_resp,)
            Posterior mean and standard deviation of theta (Bock & Mislevy 1982), from
            a fine grid of :data:`ROW_GRID_NODES` nodes per row: spanning ±6 of the
            quadrature posterior's sd (at least the local node spacing), then ±6 of the
            refined sd around the refined mean.
        """
        nodes, post = self.theta_posterior(y)
        return _refined_moments(_as_binary(y), self.a, self.d, self.c, self.latent_variance,
                                nodes, post)


def _refined_moments(arr: np.ndarray, a: np.ndarray, d: np.ndarray, c: np.ndarray | None,
                     latent_variance: float, nodes: np.ndarray, post: np.ndarray,
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of theta per row, refined from the quadrature posterior.

    The fixed quadrature is coarse next to the posterior of a long test (node spacing
    0.4 at 61 nodes, posterior sd 0.05 at 1000 items: EAPs snap to nodes), so each
    row's moments are recomputed on its own grid of :data:`ROW_GRID_NODES` nodes: first
    ±6 of the quadrature posterior's sd (at least the local node spacing) around its
    mean, then ±6 of the refined sd around the refined mean.
    """
    eap = post @ nodes
    psd = np.sqrt(np.maximum(post @ nodes**2 - eap**2, 0.0))
    spacing = np.interp(eap, (nodes[1:] + nodes[:-1]) / 2, np.diff(nodes))
    for width in (np.maximum(psd, spacing), None):
        half = GRID_HALF_WIDTH * (np.maximum(psd, 1e-3) if width is None else width)
        eap, psd = _eap_on_row_grids(arr, a, d, c, latent_variance, eap, half)
    return eap, psd


def _eap_on_row_grids(arr: np.ndarray, a: np.ndarray, d: np.ndarray, c: np.ndarray | None,
                      latent_variance: float, centre: np.ndarray, half: np.ndarray,
                      ) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of theta per row on a regular grid ``centre ± half``.

    ``p(theta | y) ∝ N(theta; 0, latent_variance) Π_j P_j(theta)^y_j (1 − P_j(theta))^(1−y_j)``
    over the observed entries, with ``P_j = c_j + (1 − c_j) σ(a_j theta + d_j)``.
    """
    u = np.linspace(-1.0, 1.0, ROW_GRID_NODES)
    obs = ~np.isnan(arr)
    y1 = np.where(obs, arr, 0.0)
    cc = np.zeros_like(a) if c is None else c
    eap, psd = np.empty(arr.shape[0]), np.empty(arr.shape[0])
    rows = max(1, int(2e7 // max(1, arr.shape[1] * u.size)))
    for start in range(0, arr.shape[0], rows):
        sl = slice(start, start + rows)
        theta = centre[sl, None] + half[sl, None] * u                  # (R, G)
        z = a[None, :, None] * theta[:, None, :] + d[None, :, None]    # (R, J, G)
        log1mc = np.log1p(-cc)[None, :, None]
        logp = np.logaddexp(np.log(np.maximum(cc, 1e-300))[None, :, None],
                            log1mc + log_expit(z)) if c is not None else log_expit(z)
        logq = log1mc + log_expit(-z)
        yy, oo = y1[sl][:, :, None], obs[sl][:, :, None]
        ll = np.sum(np.where(oo, yy * logp + (1.0 - yy) * logq, 0.0), axis=1)
        lp = ll - theta**2 / (2.0 * latent_variance)
        w = np.exp(lp - lp.max(axis=1, keepdims=True))
        w /= w.sum(axis=1, keepdims=True)
        m = np.sum(w * theta, axis=1)
        eap[sl] = m
        psd[sl] = np.sqrt(np.maximum(np.sum(w * (theta - m[:, None]) ** 2, axis=1), 0.0))
    return eap, psd


def marginal_loglik(y: object, a: object, d: object, c: object | None = None, *,
                    weights: object | None = None, latent_variance: float = 1.0,
                    n_quad: int = 61) -> float:
    """Exact (quadrature) marginal log-likelihood of item parameters.

    ``sum_r f_r log sum_q w_q prod_j P(y_rj | theta_q)`` with Gauss-Hermite nodes
    ``theta_q`` for ``N(0, latent_variance)`` (Bock & Aitkin 1981); missing
    entries contribute nothing.

    Parameters
    ----------
    y : array-like, shape (n_resp, n_items)
        0/1 responses, NaN = missing.
    a, d : array-like, shape (n_items,)
        Slopes and intercepts.
    c : array-like, shape (n_items,), optional
        3PL guessing parameters.
    weights : array-like, shape (n_resp,), optional
        Row frequencies.
    latent_variance : float
        Variance of theta.
    n_quad : int
        Number of Gauss-Hermite nodes.

    Returns
    -------
    float
    """
    arr = _as_binary(y)
    j = arr.shape[1]
    params = [np.asarray(v, dtype=np.float64) for v in (a, d)]
    cc = None if c is None else np.asarray(c, dtype=np.float64)
    for name, v in (("a", params[0]), ("d", params[1]), ("c", cc)):
        if v is not None and v.shape != (j,):
            raise ValidationError(f"{name} must have shape ({j},), got {v.shape}")
    if not latent_variance > 0:
        raise ValidationError(f"latent_variance must be positive, got {latent_variance}")
    data = _prepare(arr, weights)
    nodes, w = quadrature(int(n_quad))
    return _estep(data, params[0], params[1], cc, np.sqrt(latent_variance) * nodes,
                  np.log(w)).loglik


# ------------------------------------------------------------------------------ fit


def _check_args(model: str, n_quad: int, max_iter: int, tol: float,
                prior_a: object, prior_c: object, estimate_latent_variance: bool | None) -> bool:
    if model not in _MODELS:
        raise ValidationError(f"unknown IRT model {model!r}; choose one of {', '.join(_MODELS)}")
    if int(n_quad) != n_quad or not 5 <= n_quad <= MAX_QUAD:
        raise ValidationError(f"n_quad must be an integer from 5 to {MAX_QUAD} (more "
                              f"Gauss-Hermite nodes overflow), got {n_quad}")
    if int(max_iter) != max_iter or max_iter < 1:
        raise ValidationError(f"max_iter must be a positive integer, got {max_iter}")
    if not tol > 0:
        raise ValidationError(f"tol must be positive, got {tol}")
    if prior_a is not None and (len(prior_a) != 2 or not prior_a[1] > 0):
        raise ValidationError(f"prior_a must be (mu, sigma>0) of log(a), got {prior_a}")
    if prior_a is not None and model == "rasch":
        raise ValidationError("prior_a does not apply to model='rasch' (its slopes are fixed to 1)")
    if len(prior_c) != 2 or not min(prior_c) > 0:
        raise ValidationError(f"prior_c must be Beta (alpha>0, beta>0), got {prior_c}")
    if estimate_latent_variance is None:
        return model == "rasch"
    if estimate_latent_variance and model != "rasch":
        raise ValidationError(f"estimate_latent_variance is only identified with fixed slopes "
                              f"(model='rasch'); the {model} slopes absorb the latent scale")
    return bool(estimate_latent_variance)


def _initial(data: _Data) -> tuple[np.ndarray, np.ndarray]:
    """Start values: a = 1, d = logit of each item's (smoothed) proportion correct."""
    nobs = data.freq @ (np.ones_like(data.y1) if data.mask is None else data.mask)
    prop = (data.freq @ data.y1 + 0.5) / (nobs + 1.0)
    d = np.clip(np.log(prop / (1.0 - prop)) * 1.4, *D_BOUNDS)  # 1.4 ~ sqrt(1 + a^2) for a = 1
    return np.ones(data.n_items), d


def fit_mml(
    y: object,
    *,
    model: IRTModel = "2pl",
    weights: object | None = None,
    n_quad: int = 61,
    max_iter: int = 500,
    tol: float = 1e-6,
    prior_a: tuple[float, float] | None = None,
    prior_c: tuple[float, float] = (5.0, 17.0),
    estimate_latent_variance: bool | None = None,
    compute_se: bool = True,
    show_progress: bool | None = None,
) -> MMLResult:
    """Fit a unidimensional dichotomous IRT model by marginal maximum likelihood.

    Bock & Aitkin (1981) EM on a Gauss-Hermite grid (vectorised Newton M-step over
    all items) until the parameters move less than 0.03, then direct maximisation
    of the exact marginal log-likelihood until its (projected) gradient per
    respondent is below ``tol``: Newton-Raphson with the closed-form Louis (1982)
    Hessian for the logistic models up to 200 items (20 with missing entries),
    otherwise L-BFGS-B with the analytic gradient (Fisher's identity).

    Parameters
    ----------
    y : array-like, shape (n_resp, n_items)
        0/1 responses; NaN marks a missing entry, which contributes nothing.
    model : {"2pl", "1pl", "rasch", "3pl"}
        ``"1pl"``: one common slope; ``"rasch"``: slopes fixed to 1 and (by default)
        the latent variance estimated, as mirt's ``itemtype="Rasch"``; ``"3pl"``:
        guessing ``c_j`` with a Beta ``prior_c`` (MAP for ``c``).
    weights : array-like, shape (n_resp,), optional
        Frequency of each row (response-pattern x frequency tables).
    n_quad : int
        Gauss-Hermite nodes (61 as mirt's default for one dimension).
    max_iter : int
        Maximum number of EM plus Newton / L-BFGS-B iterations.
    tol : float
        Convergence tolerance on the projected gradient of the mean log-likelihood.
    prior_a : (mu, sigma), optional
        Lognormal prior ``log a ~ N(mu, sigma)`` on the slopes (then ``a > 0``).
    prior_c : (alpha, beta)
        Beta prior of the 3PL guessing parameters; the default Beta(5, 17) has its
        mode at 0.2.
    estimate_latent_variance : bool, optional
        Estimate Var(theta). Default: True for ``"rasch"`` (fitted as a common slope
        ``sigma`` on a N(0, 1) trait, which is the same model), else False; only
        identified with fixed slopes.
    compute_se : bool
        Compute standard errors from the observed information (closed-form Louis
        Hessian for 2pl/1pl/rasch, finite differences of the gradient for 3pl).
    show_progress : bool, optional
        Progress bar (default: ``COREVAL_PROGRESS``).

    Returns
    -------
    MMLResult

    References
    ----------
    Bock & Aitkin (1981), Psychometrika 46; Louis (1982), JRSS B 44.
    """
    arr = _as_binary(y)
    work = arr.shape[0] * arr.shape[1] * n_quad if isinstance(n_quad, int | np.integer) else 0
    limit = 1 if work < _SINGLE_THREAD_WORK else None
    return _fit(arr, model=model, weights=weights, n_quad=n_quad, max_iter=max_iter, tol=tol,
                prior_a=prior_a, prior_c=prior_c, estimate_latent_variance=estimate_latent_variance,
                compute_se=compute_se, show_progress=show_progress, blas_threads=limit)


def _fit(arr: np.ndarray, *, model: str, weights: object | None, n_quad: int, max_iter: int,
         tol: float, prior_a: tuple[float, float] | None, prior_c: tuple[float, float],
         estimate_latent_variance: bool | None, compute_se: bool,
         show_progress: bool | None, blas_threads: int | None) -> MMLResult:
    est_var = _check_args(model, n_quad, max_iter, tol, prior_a, prior_c,
                          estimate_latent_variance)
    empty = np.flatnonzero(np.isnan(arr).all(axis=0))
    if empty.size:
        raise ValidationError(f"items {preview(empty.tolist())} have no observed response")
    data = _prepare(arr, weights)
    if data.freq.sum() < 2:
        raise ValidationError(f"MML needs at least 2 respondents (total weight), "
                              f"got {data.freq.sum():g}")
    extreme = _extreme_items(arr)
    if extreme.size:
        warnings.warn(
            f"items {preview(extreme.tolist())} are answered all-correct or all-wrong; their "
            f"estimates are identified only by the bounds {D_BOUNDS} (or a prior)",
            UserWarning, stacklevel=3)
    internal = {"rasch": "1pl" if est_var else "rasch_fixed"}.get(model, model)
    spec = _Spec(internal, data.n_items, None if prior_a is None else tuple(prior_a),
                 tuple(prior_c))
    nodes, w = quadrature(int(n_quad))
    log_w = np.log(w)
    n_total = float(data.freq.sum())
    bar = progress_bar(total=int(max_iter), desc=f"MML {model}", show=show_progress)

    # The optimisation runs with `blas_threads` BLAS threads (one for small problems).
    with threadpool_limits(limits=blas_threads, user_api="blas"):
        # Stage 1: Bock-Aitkin EM (2PL M-step) as a robust warm start.
        a, d = _initial(data)
        n_iter = 0
        if internal != "rasch_fixed":
            for _ in range(min(_EM_WARMUP_MAX, int(max_iter))):
                es = _estep(data, a, d, None, nodes, log_w)
                a_new, d_new = _em_newton_2pl(es, nodes, a, d)
                if prior_a is not None:
                    a_new = np.maximum(a_new, 1e-3)
                change = max(np.abs(a_new - a).max(), np.abs(d_new - d).max())
                a, d = a_new, d_new
                n_iter += 1
                bar.update(1)
                if change < _EM_WARMUP_TOL:
                    break
        c0 = None
        if internal == "3pl":
            alpha, beta = spec.prior_c
            c0 = np.full(data.n_items, (alpha - 1) / (alpha + beta - 2) if alpha > 1 else 0.1)
        x0 = np.clip(spec.pack(a, d, c0), *np.array(spec.bounds()).T)

        def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
            aa, dd, cc = spec.unpack(x)
            es = _estep(data, aa, dd, cc, nodes, log_w)
            grad = spec.fold_grad(*_item_grads(es, nodes, cc))
            lp, glp, _ = spec.log_prior(x)
            return -(es.loglik + lp) / n_total, -(grad + glp) / n_total

        # Stage 2: Newton with the exact (Louis) Hessian where it is cheap to form, else
        # (or when Newton gives up, e.g. at the box) L-BFGS-B, on the exact marginal
        # log-likelihood.
        x, converged = x0, False
        j = data.n_items
        if internal != "3pl" and extreme.size == 0 and n_iter < max_iter and (
                j <= _MAX_ITEMS_NEWTON if data.mask is None else j <= _MAX_ITEMS_NEWTON_MISSING):
            x, steps, converged = _newton(spec, data, x0, nodes, log_w, tol,
                                          int(max_iter) - n_iter, bar)
            n_iter += steps
        if not converged and n_iter < max_iter:
            remaining = int(max_iter) - n_iter
            opt = minimize(objective, x, jac=True, method="L-BFGS-B", bounds=spec.bounds(),
                           callback=lambda *_: bar.update(1),
                           options={"maxiter": remaining, "gtol": tol, "ftol": 1e-14, "maxcor": 20})
            x = opt.x
            n_iter += int(opt.nit)
            converged = bool(opt.success) and int(opt.status) == 0
        bar.close()
    aa, dd, cc = spec.unpack(x)
    es = _estep(data, aa, dd, cc, nodes, log_w)
    # es.post is over the collapsed rows of `data`; the fit's trait is N(0, 1)
    _warn_fit_limits(aa, *_refined_moments(_unique_rows(data), aa, dd, cc, 1.0, nodes,
                                           es.post), nodes, int(n_quad))

    se, se_method = None, "none"
    if compute_se:
        # Dense algebra on the information matrix (O(P^3)) is worth BLAS threads
        # even when the E-step products are not.
        se_threads = blas_threads if x.size**3 < _SINGLE_THREAD_WORK * 10 else None
        with threadpool_limits(limits=se_threads, user_api="blas"):
            se, se_method = _standard_errors(spec, data, es, x, nodes, objective)

    var = 1.0
    a_out, se_a, se_var = aa.copy(), None, None
    if model == "rasch":
        if est_var:
            var = float(x[0] ** 2)
            se_var = None if se is None else float(2.0 * abs(x[0]) * se[0])
        a_out = np.ones(data.n_items)
    se_a = se_d = se_c = None
    if se is not None:
        j = data.n_items
        if internal == "2pl" or internal == "3pl":
            se_a, se_d = se[:j], se[j:2 * j]
            se_c = se[2 * j:] if internal == "3pl" else None
        elif internal == "1pl":
            se_a = np.zeros(j) if model == "rasch" else np.full(j, se[0])
            se_d = se[1:]
        else:
            se_a, se_d = np.zeros(j), se
    with np.errstate(divide="ignore", invalid="ignore"):
        b = -dd / a_out
    return MMLResult(model=model, a=a_out, d=dd.copy(), b=b,
                     c=None if cc is None else cc.copy(), latent_variance=var,
                     loglik=es.loglik, se_a=se_a, se_d=se_d, n_iter=n_iter,
                     converged=converged, n_quad=int(n_quad), se_c=se_c,
                     se_latent_variance=se_var, se_method=se_method, extreme_items=extreme)


def _model_hessian(spec: _Spec, data: _Data, es: _EStep, nodes: np.ndarray,
                   x: np.ndarray) -> np.ndarray:
    """Exact Hessian of log-likelihood plus log-prior in the free parameters (logistic models)."""
    j = spec.n_items
    h2 = _louis_hessian_2pl(data, es, nodes)
    if spec.model == "2pl":
        hess = h2
    elif spec.model == "1pl":
        # Chain rule for the common slope: a_j = a for every item.
        t = np.zeros((2 * j, j + 1))
        t[:j, 0] = 1.0
        t[j:, 1:] = np.eye(j)
        hess = t.T @ h2 @ t
    else:
        hess = h2[j:, j:]
    return hess + np.diag(spec.log_prior(x)[2])


def _newton(spec: _Spec, data: _Data, x: np.ndarray, nodes: np.ndarray, log_w: np.ndarray,
            tol: float, max_iter: int, bar) -> tuple[np.ndarray, int, bool]:
    """Newton-Raphson on the exact marginal log-likelihood with the Louis Hessian.

    Damped by step halving; returns ``(x, iterations, converged)``. It gives up
    (``converged=False``) when the Hessian is not negative definite, the line
    search fails or a step would leave the box, and the caller falls back to
    L-BFGS-B. From the EM warm start it typically converges in 3 steps.
    """
    lo, hi = np.array(spec.bounds()).T
    n_total = float(data.freq.sum())

    def evaluate(z: np.ndarray) -> tuple[_EStep, float, np.ndarray]:
        a, d, c = spec.unpack(z)
        es = _estep(data, a, d, c, nodes, log_w)
        lp, glp, _ = spec.log_prior(z)
        return es, es.loglik + lp, spec.fold_grad(*_item_grads(es, nodes, c)) + glp

    es, value, grad = evaluate(x)
    for it in range(max_iter):
        if np.abs(grad).max() / n_total < tol:
            return x, it, True
        try:
            chol = np.linalg.cholesky(-_model_hessian(spec, data, es, nodes, x))
        except np.linalg.LinAlgError:
            return x, it, False
        step = np.linalg.solve(chol.T, np.linalg.solve(chol, grad))
        scale = 1.0
        while True:
            trial = x + scale * step
            if np.any(trial <= lo) or np.any(trial >= hi):
                return x, it, False
            es_t, value_t, grad_t = evaluate(trial)
            if value_t >= value - 1e-10 * abs(value):
                break
            scale /= 2.0
            if scale < 1e-3:
                return x, it, False
        x, es, value, grad = trial, es_t, value_t, grad_t
        bar.update(1)
    return x, max_iter, bool(np.abs(grad).max() / n_total < tol)


def _unique_rows(data: _Data) -> np.ndarray:
    """The E-step's (collapsed) response rows, NaN where missing."""
    return data.y1 if data.mask is None else np.where(data.mask > 0, data.y1, np.nan)


def _warn_fit_limits(a: np.ndarray, mean: np.ndarray, sd: np.ndarray, nodes: np.ndarray,
                     n_quad: int) -> None:
    """Warn about slopes on their bound and a quadrature too coarse for the posteriors.

    A slope at ``A_BOUNDS`` (a Heywood case: duplicated items, or an item that separates
    the respondents perfectly) has no finite estimate. When the rows' posterior sd of
    theta is below a third of the spacing of the nodes around it (long tests: about 0.05
    at 1000 items against 0.4 at 61 nodes), the marginal likelihood is poorly integrated
    and the slopes come out too small (simulated 2PL, 200 rows: mean â/a 0.90 at 400 items
    with 61 nodes, 1.01 with 241; a third is where the two started to differ by more
    than a few per cent).
    """
    at_bound = np.flatnonzero(np.abs(a) >= A_BOUNDS[1] - 1e-6)
    if at_bound.size:
        warnings.warn(f"items {preview(at_bound.tolist())} have slopes on the bound "
                      f"±{A_BOUNDS[1]:g} (a Heywood case: duplicated or perfectly separating "
                      "items); their slopes are not estimated", UserWarning, stacklevel=4)
    spacing = np.interp(mean, (nodes[1:] + nodes[:-1]) / 2, np.diff(nodes))
    if np.median(sd / spacing) < 1.0 / 3.0:
        more = (f"raise n_quad (at most {MAX_QUAD})" if n_quad < MAX_QUAD
                else "fit by SVI or NUTS instead")
        warnings.warn(f"the {n_quad}-node quadrature is coarse for these posteriors: the "
                      f"median posterior sd of theta ({np.median(sd):.3g}) is below a third of the "
                      f"node spacing ({np.median(spacing):.3g}), so the slopes are biased toward "
                      f"0; {more}", UserWarning, stacklevel=4)


def _standard_errors(spec: _Spec, data: _Data, es: _EStep, x: np.ndarray,
                     nodes: np.ndarray, objective) -> tuple[np.ndarray | None, str]:
    """Square roots of the diagonal of the inverse observed information.

    Returns the standard errors (NaN for parameters on a bound; None when the
    problem is too large, with a warning) and the method: ``"louis"`` (exact,
    closed form), ``"finite-difference"`` (3PL) or ``"none"``.
    """
    bounds = spec.bounds()
    j = spec.n_items
    n, _ = data.y1.shape
    full = j <= _MAX_ITEMS_FULL_SE and (
        data.mask is None or n * j * j * nodes.size <= _MAX_MISSING_PATH_WORK)
    at_bound = np.array([x[i] <= lo + 1e-8 or x[i] >= hi - 1e-8
                         for i, (lo, hi) in enumerate(bounds)])
    if spec.model == "3pl" and full:
        hess = -_numerical_hessian(lambda z: objective(z)[1], x, bounds) * float(data.freq.sum())
        method = "finite-difference"
    elif full:
        hess = _model_hessian(spec, data, es, nodes, x)
        method = "louis"
    else:
        warnings.warn(f"standard errors skipped: the observed information of {j} items "
                      f"x {n} rows is too large to form (pass compute_se=False to silence)",
                      UserWarning, stacklevel=4)
        return None, "none"
    free = ~at_bound
    info = -hess[np.ix_(free, free)]
    se = np.full(x.size, np.nan)
    try:
        # diag(I^-1) from the Cholesky factor: I = L L^T, so the diagonal of I^-1 holds
        # the squared column norms of L^-1 (a third of the work of a full inverse).
        chol = np.linalg.cholesky(info)
        diag = np.sum(solve_triangular(chol, np.eye(chol.shape[0]), lower=True) ** 2, axis=0)
    except np.linalg.LinAlgError:
        diag = np.diag(np.linalg.pinv(info))
    se[free] = np.where(diag > 0, np.sqrt(np.abs(diag)), np.nan)
    return se, method
