"""Covariance and correlation of a benchmark-level score matrix with missing entries.

Implements Section 4.3 of Smola, "Submodular Benchmark Selection" (2026) as run by the
reference code (``smolix/benchmark-selection``, ``code/em_cov.py`` and
``estimate_corr_em`` of ``code/eval_entropy_vs_mi.py``; protocol in
``shared/anchors/benchmark_selection/PROTOCOL.md`` sections 3-4):

1. per-column standardisation with the observed-entry mean and standard deviation
   (ddof 1), the standard deviation floored at ``0.01 (|mean| + 1)``;
2. a pairwise-complete covariance projected onto the PSD cone (eigenvalue floor ``eps``);
3. EM for Gaussian data with missing entries (Dempster, Laird & Rubin 1977; Little & Rubin
   2019, ch. 11): the E-step fills missing entries with their conditional means and adds the
   conditional covariances in the M-step (divisor M), followed by a PSD projection;
4. optional linear shrinkage to the scaled identity, ``alpha = (N - M) / N`` ("auto") when
   there are fewer rows than columns, applied at initialisation and once after the loop
   (exactly as the reference code does, not inside the loop);
5. the correlation ``R = Sigma / sqrt(diag Sigma diag Sigma^T)``.

Speed: the E-step groups rows with the same missingness pattern and factorises one block
per pattern (``Sigma_oo``, or the precision block ``K_mm`` when fewer entries are missing
than observed) with one LAPACK ``dposv`` that also returns the block's inverse and the rows'
solves; blocks and residuals of all patterns are gathered with one ``take`` per iteration.
The conditional covariances of all rows are summed with two matrix products and one
``bincount`` instead of one N x N matrix per row, and the observed-data log-likelihood
(monitoring) comes from the same factors, so no second pass is needed. The PSD projection
skips its eigendecomposition when ``Sigma - eps I`` has a Cholesky factor (floor inactive).
BLAS threads are limited with ``threadpoolctl`` (default one thread: the matrices are small,
and more threads only add synchronisation overhead). See ``benchmarks/results/em_speed.md``.
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy.linalg import cho_factor, cho_solve, eigh, lapack
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from coreval._progress import progress_bar
from coreval.errors import ValidationError, preview

Release = Literal["head", "prev"]
Estimator = Literal["auto", "em", "pairwise"]
Transform = Literal["none", "logit"]

#: Relative floor of the standard deviation used by the reference code (``0.01 (|mean| + 1)``).
STD_FLOOR = 0.01
#: Convergence tolerance of the relative Frobenius change used by the protocol.
PROTOCOL_TOL = 5e-4
#: Clip of logit-transformed scores (values are clipped to ``[LOGIT_CLIP, 1 - LOGIT_CLIP]``).
LOGIT_CLIP = 1e-4
_LOG_2PI = float(np.log(2.0 * np.pi))


# --------------------------------------------------------------------------- standardise
@dataclass(frozen=True)
class Standardization:
    """Per-column location and scale: ``z = (x - mean) / std``.

    Attributes
    ----------
    mean, std : ndarray of shape (n_columns,)
        Observed-entry mean and floored standard deviation of each column.
    transform : {"none", "logit"}
        Transform applied to the raw scores before standardising.
    """

    mean: np.ndarray
    std: np.ndarray
    transform: str = "none"

    def forward(self, values: np.ndarray) -> np.ndarray:
        """Raw scores -> standardised scores (NaN stays NaN)."""
        return (apply_transform(values, self.transform) - self.mean) / self.std

    def inverse(self, z: np.ndarray) -> np.ndarray:
        """Standardised scores -> raw scores (undoes :meth:`forward`)."""
        return invert_transform(np.asarray(z) * self.std + self.mean, self.transform)


def apply_transform(values: np.ndarray, transform: str = "none") -> np.ndarray:
    """Apply the score transform: identity or ``logit`` of scores in [0, 1].

    Parameters
    ----------
    values : ndarray
        Raw scores, NaN for missing.
    transform : {"none", "logit"}
        ``"logit"`` clips to ``[1e-4, 1 - 1e-4]`` and returns ``log(p / (1 - p))``
        (the paper's logit-space variant, ``code/eval_logit.py``).

    Returns
    -------
    ndarray
        Transformed scores.
    """
    values = np.asarray(values, dtype=np.float64)
    if transform == "none":
        return values
    if transform != "logit":
        raise ValidationError(f"transform must be 'none' or 'logit', got {transform!r}")
    observed = values[~np.isnan(values)]
    if observed.size and (observed.min() < 0.0 or observed.max() > 1.0):
        raise ValidationError(
            f"logit transform needs scores in [0, 1]; got range "
            f"[{observed.min():.4g}, {observed.max():.4g}]"
        )
    p = np.clip(values, LOGIT_CLIP, 1.0 - LOGIT_CLIP)
    return np.log(p) - np.log1p(-p)


def invert_transform(values: np.ndarray, transform: str = "none") -> np.ndarray:
    """Inverse of :func:`apply_transform` (``expit`` for ``"logit"``)."""
    if transform == "logit":
        from scipy.special import expit

        return expit(values)
    return np.asarray(values, dtype=np.float64)


def fit_standardization(values: np.ndarray, *, floor: float = STD_FLOOR,
                        transform: str = "none") -> Standardization:
    """Observed-entry mean and standard deviation of each column (protocol section 3).

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
        Scores, NaN for missing.
    floor : float
        The standard deviation is floored at ``floor * (|mean| + 1)`` (reference:
        ``col_std_floor = 0.01 * (|mean| + 1)``), so a constant column does not explode.
    transform : {"none", "logit"}
        Transform applied before standardising.

    Returns
    -------
    Standardization
        ``mean`` = observed mean (0 for an unobserved column), ``std`` from the ddof-1
        variance over observed entries (0 for fewer than two entries) with the floor.
    """
    x = apply_transform(values, transform)
    obs = ~np.isnan(x)
    cnt = obs.sum(axis=0)
    x0 = np.where(obs, x, 0.0)
    mean = x0.sum(axis=0) / np.maximum(cnt, 1)
    resid = np.where(obs, x - mean, 0.0)
    var = (resid**2).sum(axis=0) / np.maximum(cnt - 1, 1)
    std = np.sqrt(np.maximum(var, (floor * (np.abs(mean) + 1.0)) ** 2))
    return Standardization(mean=mean, std=std, transform=transform)


# --------------------------------------------------------------------- simple estimates
def pairwise_covariance(z: np.ndarray, observed: np.ndarray) -> np.ndarray:
    """Pairwise-complete covariance of centred data (reference init, ``Eq. pairwise-cov``).

    ``S_jk = sum_i O_ij O_ik zc_ij zc_ik / max(n_jk - 1, 1)`` with ``zc = O (z - mu)``,
    ``mu`` the observed-entry mean and ``n_jk`` the number of rows observing both columns.

    Parameters
    ----------
    z : ndarray of shape (n_models, n_columns)
        Data; entries where ``observed`` is false are ignored.
    observed : ndarray of bool, same shape
        Observation mask.

    Returns
    -------
    ndarray of shape (n_columns, n_columns)
        Symmetric, not necessarily PSD.
    """
    obs = observed.astype(np.float64)
    mu = (np.where(observed, z, 0.0)).sum(axis=0) / np.maximum(obs.sum(axis=0), 1.0)
    zc = np.where(observed, z - mu, 0.0)
    return (zc.T @ zc) / np.maximum(obs.T @ obs - 1.0, 1.0)


def project_psd(s: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Nearest symmetric matrix with eigenvalues ``>= eps`` (eigenvalue clamp, Frobenius norm).

    Parameters
    ----------
    s : ndarray of shape (n, n)
        Symmetric matrix.
    eps : float
        Eigenvalue floor.

    Returns
    -------
    ndarray of shape (n, n)
        ``V max(Lambda, eps) V^T`` from ``scipy.linalg.eigh``.
    """
    w, v = eigh(s, check_finite=False)
    return (v * np.maximum(w, eps)) @ v.T


def _project_psd_if_needed(s: np.ndarray, eps: float,
                           try_cholesky: bool) -> tuple[np.ndarray, bool]:
    """:func:`project_psd`, skipping the eigendecomposition when the floor is inactive.

    If ``S - eps I`` has a Cholesky factor, every eigenvalue of ``S`` exceeds ``eps`` and the
    projection ``V max(Lambda, eps) V^T`` is ``S`` itself (up to rounding), so ``S`` is
    returned (symmetrised) after one ``dpotrf`` instead of an ``eigh``. Hand-written because
    no library offers "project only if needed"; the test is exact, not a heuristic.

    Parameters
    ----------
    s : ndarray of shape (n, n)
        Symmetric matrix.
    eps : float
        Eigenvalue floor.
    try_cholesky : bool
        Try the Cholesky test first (the caller passes False while the floor was active in
        the previous iteration, where the test would almost surely fail and only cost time).

    Returns
    -------
    projected : ndarray of shape (n, n)
        ``project_psd(s, eps)``.
    clamped : bool
        Whether some eigenvalue was below ``eps`` (the floor was active).
    """
    if try_cholesky:
        _, info = lapack.dpotrf(s - eps * np.eye(len(s)), lower=1, clean=0, overwrite_a=1)
        if info == 0:
            return 0.5 * (s + s.T), False
    # LAPACK dsyevd through NumPy: less wrapper overhead per call than scipy's eigh
    w, v = _eigh_evr(s)
    return (v * np.maximum(w, eps)) @ v.T, bool(w.min() < eps)


@lru_cache(maxsize=32)
def _syevr_lwork(n: int) -> tuple[int, int]:
    """Optimal workspace of ``dsyevr`` for order ``n`` (the query ``scipy.linalg.eigh`` makes)."""
    from scipy.linalg.lapack import _compute_lwork

    lw = _compute_lwork(lapack.dsyevr_lwork, n=n, lower=1)
    return int(lw[0]), int(lw[1])


def _eigh_evr(s: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``scipy.linalg.eigh(s)`` (driver ``evr``), bit for bit, without its per-call overhead.

    The same LAPACK routine (``dsyevr``) with the same workspace query (cached per order)
    as scipy's default, so results are identical; only scipy's argument validation and
    workspace query on every call are skipped (they cost ~10 % of an EM iteration).
    """
    lwork, liwork = _syevr_lwork(len(s))
    w, v, _, _, info = lapack.dsyevr(s, compute_v=1, lower=1, lwork=lwork, liwork=liwork)
    if info != 0:  # pragma: no cover - LAPACK failure; scipy raises the same way
        return eigh(s, check_finite=False)
    return w, v


def auto_shrinkage(n_rows: int, n_cols: int) -> float:
    """The reference "auto" shrinkage ``alpha = (N - M) / N`` when ``M < N``, else 0."""
    return max(0.0, (n_cols - n_rows) / n_cols) if n_rows < n_cols else 0.0


def shrink(s: np.ndarray, alpha: float) -> np.ndarray:
    """Linear shrinkage to the scaled identity: ``(1 - alpha) S + alpha tr(S)/N I``.

    The Ledoit & Wolf (2004) target ``tr(S)/N I``; the intensity is fixed (no Ledoit-Wolf
    estimate of the optimal intensity), as in the reference code.
    """
    if alpha <= 0:
        return s
    n = s.shape[0]
    return (1.0 - alpha) * s + alpha * (np.trace(s) / n) * np.eye(n)


# ----------------------------------------------------------------------------- EM
@dataclass(frozen=True)
class EMResult:
    """Result of :func:`em_covariance`.

    Attributes
    ----------
    mean : ndarray of shape (n_columns,)
        EM mean (the protocol discards it and predicts with zero mean in z-space).
    covariance : ndarray of shape (n_columns, n_columns)
        Final covariance (after the post-loop shrinkage).
    n_iter : int
        EM iterations run.
    converged : bool
        Whether the relative Frobenius change fell below ``tol``.
    last_change : float
        The last relative Frobenius change ``||S_new - S||_F / ||S||_F``.
    loglik : ndarray
        Observed-data log-likelihood at the parameters entering each iteration
        (``loglik[0]`` at the initial estimate), for monitoring.
    shrinkage : float
        The shrinkage intensity used.
    """

    mean: np.ndarray
    covariance: np.ndarray
    n_iter: int
    converged: bool
    last_change: float
    loglik: np.ndarray = field(repr=False)
    shrinkage: float = 0.0


@dataclass(frozen=True)
class _Pattern:
    rows: np.ndarray
    obs: np.ndarray
    flat: np.ndarray  # flat positions of the (obs, obs) block in an N x N matrix
    flat_u: np.ndarray  # (|o|, n_g) flat positions of the rows' observed cells in (M, N)
    partial: bool  # some entries missing
    mis: np.ndarray  # missing columns
    flat_mm: np.ndarray  # flat positions of the (mis, mis) block in an N x N matrix
    flat_mis: np.ndarray  # (|m|, n_g) flat positions of the rows' missing cells in (M, N)
    complement: bool  # |m| < |o|: work with the precision block K_mm instead of Sigma_oo
    rhs: np.ndarray  # (k, k + n_g) work buffer [I | rows] of the pattern's dposv (k = block)
    sl_oo: slice  # the block within ``_Plan.flat_oo`` (Sigma_oo) or ``_Plan.flat_c`` (K_mm)
    sl_u: slice  # the cells within ``_Plan.flat_u`` (Sigma_oo) or ``_Plan.flat_t`` (K_mm)


@dataclass(frozen=True)
class _Plan:
    """Missingness patterns of the rows and the scatter indices used by every E-step."""

    patterns: list[_Pattern]
    flat_w: np.ndarray  # concatenated ``flat`` of the partial patterns using Sigma_oo
    weight_w: np.ndarray  # n_g repeated over each of those blocks
    flat_c: np.ndarray  # concatenated ``flat_mm`` of the complement patterns
    weight_c: np.ndarray  # n_g repeated over each of those blocks
    n_sigma: int  # rows whose conditional covariance is Sigma - Sigma_.o P_o Sigma_o. or Sigma
    rows_c: np.ndarray  # rows of the complement patterns
    weight_diag: np.ndarray  # n_g repeated over the observed columns of Sigma_oo patterns
    weight_cdiag: np.ndarray  # n_g repeated over the missing columns of complement patterns
    flat_oo: np.ndarray  # concatenated ``flat`` of all Sigma_oo patterns (one ``take``)
    flat_u: np.ndarray  # concatenated ``flat_u`` of all Sigma_oo patterns (one take / put)
    flat_t: np.ndarray  # (missing column, row within rows_c) cells of ``r_c K`` (complement)
    n_obs_entries: int


def _plan(z: np.ndarray, observed: np.ndarray) -> _Plan:
    """Group rows by missingness pattern and precompute index arrays (done once per fit)."""
    n = observed.shape[1]
    uniq, inverse = np.unique(observed, axis=0, return_inverse=True)
    inverse = inverse.ravel()
    patterns = []
    fw, ww, fc, wc, wdiag, wcdiag, rows_c = [], [], [], [], [], [], []
    foo, fu, ft = [], [], []
    off_oo = off_u = off_c = off_t = off_rc = 0
    n_sigma = 0
    for g in range(len(uniq)):
        rows = np.flatnonzero(inverse == g)
        obs, mis = np.flatnonzero(uniq[g]), np.flatnonzero(~uniq[g])
        n_g = float(len(rows))
        if len(obs) == 0:
            n_sigma += len(rows)
            continue
        flat = (obs[:, None] * n + obs[None, :]).ravel()
        flat_mm = (mis[:, None] * n + mis[None, :]).ravel()
        partial = bool(len(mis))
        complement = partial and len(mis) < len(obs)
        k = len(mis) if complement else len(obs)
        rhs = np.zeros((k, k + len(rows)), order="F")
        rhs[:, :k] = np.eye(k)
        flat_u = obs[:, None] + n * rows[None, :]
        sl_oo, sl_u = slice(0), slice(0)
        if not complement:
            sl_oo, sl_u = slice(off_oo, off_oo + flat.size), slice(off_u, off_u + flat_u.size)
            off_oo, off_u = sl_oo.stop, sl_u.stop
            foo.append(flat)
            fu.append(flat_u.ravel())
        else:
            local = np.arange(off_rc, off_rc + len(rows))
            flat_t = (mis[:, None] + n * local[None, :]).ravel()
            sl_oo, sl_u = slice(off_c, off_c + flat_mm.size), slice(off_t, off_t + flat_t.size)
            off_c, off_t, off_rc = sl_oo.stop, sl_u.stop, off_rc + len(rows)
            ft.append(flat_t)
        patterns.append(_Pattern(rows, obs, flat, flat_u, partial,
                                 mis, flat_mm, mis[:, None] + n * rows[None, :], complement,
                                 rhs, sl_oo, sl_u))
        if complement:
            fc.append(flat_mm)
            wc.append(np.full(len(flat_mm), n_g))
            wcdiag.append(np.full(len(mis), n_g))
            rows_c.append(rows)
            continue
        wdiag.append(np.full(len(obs), n_g))
        if partial:
            fw.append(flat)
            ww.append(np.full(len(flat), n_g))
            n_sigma += len(rows)

    def cat(xs: list, dt: type) -> np.ndarray:
        return np.concatenate(xs) if xs else np.zeros(0, dtype=dt)

    return _Plan(patterns, cat(fw, np.intp), cat(ww, float), cat(fc, np.intp), cat(wc, float),
                 n_sigma, cat(rows_c, np.intp), cat(wdiag, float), cat(wcdiag, float),
                 cat(foo, np.intp), cat(fu, np.intp), cat(ft, np.intp), int(observed.sum()))


def _cholesky(a: np.ndarray) -> np.ndarray | None:
    """Lower Cholesky factor via LAPACK ``dpotrf`` (None if not PD).

    The raw LAPACK call avoids scipy's per-call validation overhead, which dominates for the
    many small blocks of the E-step (batched NumPy ``cholesky``/``inv`` of padded blocks, and
    of blocks bucketed by exact size, were both tried and were slower: NumPy's per-call
    overhead and the LU cost more than the saved calls when most patterns are unique).
    """
    c, info = lapack.dpotrf(a, lower=1, clean=1, overwrite_a=0)
    return c if info == 0 else None


def _e_step(z: np.ndarray, observed: np.ndarray, plan: _Plan, mu: np.ndarray,
            sigma: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
    """Grouped E-step: completed data, summed conditional covariances, observed log-lik.

    For a pattern with observed set o, ``P_o = Sigma_oo^{-1}`` (Cholesky) and
    ``u_i = P_o (z_io - mu_o)``. The conditional mean of all coordinates is
    ``mu + Sigma_.o u_i`` (``Eq. em-emean``; equal to the data on o) and the conditional
    covariance ``Sigma - Sigma_.o P_o Sigma_o.`` (``Eq. em-ecov``; zero on o). Summing over
    rows, with ``U`` holding ``u_i`` in the observed columns of row i and
    ``W = sum_g n_g P_o`` scattered into an N x N matrix,

        completed = where(observed, z, mu + U Sigma),   sum_i C_i = n Sigma - Sigma W Sigma,

    so each pattern costs one ``dposv`` (Cholesky, inverse and solve), and all N-dimensional
    products are three matrix products per iteration (instead of one factorisation, two
    solves and an N x N scatter per row); the scatter-add of the blocks ``P_o`` is one
    ``np.bincount``.

    Patterns with fewer missing than observed entries use the precision ``K = Sigma^{-1}``
    instead (one factorisation of Sigma per iteration): the conditional covariance of the
    missing block is ``K_mm^{-1}`` and its mean ``mu_m - K_mm^{-1} K_m. r_i`` (``r_i`` = the
    centred row, 0 on m), so only ``|m| x |m|`` blocks are factorised;
    ``log det Sigma_oo = log det Sigma + log det K_mm`` and
    ``r_i^T P_o r_i = r_i^T K r_i - (K_m. r_i)^T K_mm^{-1} (K_m. r_i)``.

    Observed-data log-likelihood per row: ``-(|o| log 2 pi + log det Sigma_oo + r_i^T P_o r_i)/2``.
    """
    m_rows, n = z.shape
    resid_all = np.where(observed, z - mu, 0.0)
    u_all = np.zeros((m_rows, n))
    blocks, diags, cblocks, cfill, cdiags = [], [], [], [], []
    quad = logdet = 0.0
    if len(plan.rows_c):
        chol_s = _cholesky(sigma)
        if chol_s is None:
            raise ValidationError("EM covariance lost positive definiteness; raise eps")
        inv, _ = lapack.dpotri(chol_s, lower=1)
        prec = np.tril(inv) + np.tril(inv, -1).T
        logdet += len(plan.rows_c) * 2.0 * float(np.log(chol_s.diagonal()).sum())
        r_c = resid_all[plan.rows_c]
        rk_c = r_c @ prec  # row i: (K r_i)^T, so K_m. r_i = rk_c[i, m] (K symmetric)
        quad += float(np.vdot(rk_c, r_c))
        k_all = prec.take(plan.flat_c)
        t_all = rk_c.take(plan.flat_t)
    # gather all Sigma_oo blocks and observed residuals with one ``take`` each (per-pattern
    # slices are views)
    s_all = sigma.take(plan.flat_oo)
    r_all = resid_all.take(plan.flat_u)
    us = []
    dposv = lapack.dposv
    # One LAPACK ``dposv`` per pattern factorises the block and solves for the rows and the
    # identity at once ([u | P] = block^{-1} [r | I]): one call instead of three
    # (potrf + potrs + potri), since the per-call overhead dominates for these small blocks.
    for p in plan.patterns:
        if p.complement:
            k = len(p.mis)
            rhs = p.rhs
            rhs[:, k:] = t_all[p.sl_u].reshape(k, -1)  # K_m. r_i, (|m|, n_g)
            chol, sol, info = dposv(k_all[p.sl_oo].reshape(k, k).T, rhs, lower=1, overwrite_a=1)
            if info != 0:
                raise ValidationError("EM covariance lost positive definiteness; raise eps")
            t, x = rhs[:, k:], sol[:, k:]
            quad -= float(np.vdot(t, x))
            cdiags.append(chol.diagonal())
            cfill.append((p.flat_mis, mu[p.mis, None] - x))
            cblocks.append(sol[:, :k].ravel())  # K_mm^{-1}
            continue
        k = len(p.obs)
        s_oo = s_all[p.sl_oo].reshape(k, k).T  # symmetric; the transpose is Fortran-ordered
        rhs = p.rhs
        rhs[:, k:] = r_all[p.sl_u].reshape(k, -1)
        chol, sol, info = dposv(s_oo, rhs, lower=1, overwrite_a=1)
        if info != 0:  # the reference retries once with a 1e-6 ridge
            s_oo = sigma.take(p.flat).reshape(k, k) + 1e-6 * np.eye(k)  # s_all was overwritten
            chol, sol, info = dposv(s_oo, rhs, lower=1)
        if info != 0:
            raise ValidationError("EM covariance lost positive definiteness; raise eps")
        us.append(sol[:, k:].ravel())
        diags.append(chol.diagonal())
        if p.partial:
            blocks.append(sol[:, :k].ravel())  # Sigma_oo^{-1}
    if us:
        u_all.put(plan.flat_u, np.concatenate(us))
    quad += float(np.vdot(resid_all, u_all))
    filled = np.where(observed, z, mu + u_all @ sigma)
    for flat_mis, vals in cfill:
        filled.put(flat_mis, vals)
    c_sum = plan.n_sigma * sigma
    if blocks:
        w = np.bincount(plan.flat_w, weights=np.concatenate(blocks) * plan.weight_w,
                        minlength=n * n).reshape(n, n)
        w = 0.5 * (w + w.T)
        c_sum -= sigma @ w @ sigma
    if cblocks:
        c = np.bincount(plan.flat_c, weights=np.concatenate(cblocks) * plan.weight_c,
                        minlength=n * n).reshape(n, n)
        c_sum += 0.5 * (c + c.T)
    if diags:
        logdet += 2.0 * float(plan.weight_diag @ np.log(np.concatenate(diags)))
    if cdiags:  # log det K_mm of the complement patterns, collected to one log
        logdet += 2.0 * float(plan.weight_cdiag @ np.log(np.concatenate(cdiags)))
    loglik = -0.5 * (plan.n_obs_entries * _LOG_2PI + logdet + quad)
    return filled, c_sum, loglik


def em_covariance(z: np.ndarray, observed: np.ndarray | None = None, *, max_iter: int = 500,
                  tol: float = PROTOCOL_TOL, eps: float = 1e-6,
                  shrinkage: float | Literal["auto"] = 0.0, n_threads: int | None = 1,
                  warn: bool = True, progress: bool | None = False) -> EMResult:
    """EM estimate of the mean and covariance of Gaussian rows with missing entries.

    Smola (2026), Section 4.3 (``Eq. em-emean``, ``em-ecov``, ``em-mstep-mu``,
    ``em-mstep-sigma``); Dempster, Laird & Rubin (1977). One iteration:

    * E-step (grouped by missingness pattern, one Cholesky per pattern): missing entries
      := conditional means, ``C_i`` := conditional covariance of the missing block;
    * M-step: ``mu = mean(Z~)``, ``Sigma = (Z~ - mu)^T (Z~ - mu) / M + sum_i C_i / M``;
    * PSD projection with eigenvalue floor ``eps``;
    * stop when ``||Sigma_new - Sigma||_F / ||Sigma||_F < tol`` (from the second iteration).

    Initialisation: observed means, pairwise-complete covariance, PSD projection, shrinkage.
    Shrinkage ``(1 - alpha) S + alpha tr(S)/N I`` is applied at initialisation and once after
    the loop (as in the reference code).

    Parameters
    ----------
    z : ndarray of shape (n_models, n_columns)
        Data (standardised scores); missing entries are NaN or flagged by ``observed``.
    observed : ndarray of bool, optional
        Observation mask; default ``~isnan(z)``.
    max_iter : int
        Maximum number of EM iterations.
    tol : float
        Tolerance of the relative Frobenius change of ``Sigma``.
    eps : float
        Eigenvalue floor of the PSD projection.
    shrinkage : float or "auto"
        Shrinkage intensity; "auto" = ``(N - M)/N`` if ``M < N`` else 0.
    n_threads : int or None
        BLAS threads (``threadpoolctl``); None leaves the library default.
    warn : bool
        Emit a ``ConvergenceWarning`` (with the last relative change) if not converged.
    progress : bool or None
        Progress bar over iterations (None: the ``COREVAL_PROGRESS`` default; off by default
        because EM usually runs inside a selector or a grid that shows its own progress).

    Returns
    -------
    EMResult

    References
    ----------
    Smola, A. (2026). Submodular Benchmark Selection, Section 4.3 and code ``em_cov.py``.
    Little, R. J. A. & Rubin, D. B. (2019). Statistical Analysis with Missing Data, ch. 11.
    """
    z = np.asarray(z, dtype=np.float64)
    if z.ndim != 2:
        raise ValidationError(f"EM needs a 2-D matrix, got shape {z.shape}")
    observed = ~np.isnan(z) if observed is None else np.asarray(observed, dtype=bool)
    if observed.shape != z.shape:
        raise ValidationError(f"mask shape {observed.shape} differs from data shape {z.shape}")
    if np.isnan(z[observed]).any():
        raise ValidationError("observed entries contain NaN")
    if max_iter < 0 or tol <= 0 or eps <= 0:
        raise ValidationError(f"need max_iter >= 0, tol > 0, eps > 0; got {max_iter}, {tol}, {eps}")
    m_rows, n = z.shape
    z0 = np.where(observed, z, 0.0)
    alpha = auto_shrinkage(m_rows, n) if shrinkage == "auto" else float(shrinkage)
    if not 0.0 <= alpha <= 1.0:
        raise ValidationError(f"shrinkage must be in [0, 1] or 'auto', got {shrinkage!r}")
    ctx = threadpool_limits(limits=n_threads) if n_threads else nullcontext()
    bar = progress_bar(total=max_iter, desc="EM covariance", show=progress)
    with ctx:
        mu = z0.sum(axis=0) / np.maximum(observed.sum(axis=0), 1)
        sigma = shrink(project_psd(pairwise_covariance(z0, observed), eps), alpha)
        plan = _plan(z0, observed)
        logliks: list[float] = []
        converged, change, it, clamped = False, np.inf, 0, False
        for it in range(1, max_iter + 1):
            filled, c_sum, ll = _e_step(z0, observed, plan, mu, sigma)
            logliks.append(ll)
            mu_new = filled.mean(axis=0)
            centred = filled - mu_new
            sigma_new, clamped = _project_psd_if_needed(
                (centred.T @ centred + c_sum) / m_rows, eps, try_cholesky=not clamped)
            change = float(np.linalg.norm(sigma_new - sigma)
                           / max(np.linalg.norm(sigma), 1e-10))
            mu, sigma = mu_new, sigma_new
            bar.update(1)
            if change < tol and it > 1:
                converged = True
                break
        sigma = shrink(sigma, alpha)
    bar.close()
    if warn and not converged and max_iter > 0:
        warnings.warn(f"EM did not converge in {max_iter} iterations (last relative change "
                      f"{change:.3g} >= tol {tol:g})", ConvergenceWarning, stacklevel=2)
    return EMResult(mean=mu, covariance=sigma, n_iter=it, converged=converged,
                    last_change=change, loglik=np.asarray(logliks), shrinkage=alpha)


def em_covariance_per_row(z: np.ndarray, observed: np.ndarray | None = None, *,
                          max_iter: int = 500, tol: float = PROTOCOL_TOL, eps: float = 1e-6,
                          shrinkage: float | Literal["auto"] = 0.0) -> EMResult:
    """Direct per-row EM (same algorithm as :func:`em_covariance`), the speed reference.

    Written the straightforward way of the reference code: a Cholesky of ``Sigma_oo`` for every
    row, a dense ``N x N`` conditional covariance per row, and a second per-row pass for the
    observed-data log-likelihood at the new parameters. Used by ``benchmarks/em_speed.py`` and
    the tests to check that the grouped E-step converges to the same covariance. BLAS threads
    are left as the caller set them.

    Parameters
    ----------
    z, observed, max_iter, tol, eps, shrinkage
        As in :func:`em_covariance`.

    Returns
    -------
    EMResult
    """
    z = np.asarray(z, dtype=np.float64)
    observed = ~np.isnan(z) if observed is None else np.asarray(observed, dtype=bool)
    m_rows, n = z.shape
    z0 = np.where(observed, z, 0.0)
    alpha = auto_shrinkage(m_rows, n) if shrinkage == "auto" else float(shrinkage)
    mu = z0.sum(axis=0) / np.maximum(observed.sum(axis=0), 1)
    sigma = shrink(project_psd(pairwise_covariance(z0, observed), eps), alpha)

    def factor(s: np.ndarray) -> tuple:
        try:
            return cho_factor(s)
        except np.linalg.LinAlgError:
            return cho_factor(s + 1e-6 * np.eye(len(s)))

    def loglik(mu_: np.ndarray, sigma_: np.ndarray) -> float:
        total = 0.0
        for i in range(m_rows):
            o = np.flatnonzero(observed[i])
            if len(o) == 0:
                continue
            cf = factor(sigma_[np.ix_(o, o)])
            r = z0[i, o] - mu_[o]
            total -= 0.5 * (len(o) * _LOG_2PI + 2 * np.log(np.diag(cf[0])).sum()
                            + r @ cho_solve(cf, r))
        return total

    logliks = [loglik(mu, sigma)]
    converged, change, it = False, np.inf, 0
    for it in range(1, max_iter + 1):
        filled = z0.copy()
        cond = []
        for i in range(m_rows):
            o, mis = np.flatnonzero(observed[i]), np.flatnonzero(~observed[i])
            c_i = np.zeros((n, n))
            if len(mis) and not len(o):
                filled[i] = mu
                c_i[:] = sigma
            elif len(mis):
                cf = factor(sigma[np.ix_(o, o)])
                s_mo = sigma[np.ix_(mis, o)]
                filled[i, mis] = mu[mis] + s_mo @ cho_solve(cf, z0[i, o] - mu[o])
                c_i[np.ix_(mis, mis)] = sigma[np.ix_(mis, mis)] - s_mo @ cho_solve(cf, s_mo.T)
            cond.append(c_i)
        mu_new = filled.mean(axis=0)
        centred = filled - mu_new
        sigma_new = project_psd(centred.T @ centred / m_rows + sum(cond) / m_rows, eps)
        change = float(np.linalg.norm(sigma_new - sigma) / max(np.linalg.norm(sigma), 1e-10))
        mu, sigma = mu_new, sigma_new
        logliks.append(loglik(mu, sigma))
        if change < tol and it > 1:
            converged = True
            break
    sigma = shrink(sigma, alpha)
    return EMResult(mean=mu, covariance=sigma, n_iter=it, converged=converged,
                    last_change=change, loglik=np.asarray(logliks), shrinkage=alpha)


# ------------------------------------------------------------------- full estimate
@dataclass(frozen=True)
class CorrelationEstimate:
    """Correlation of the kept columns of a score matrix, with its standardisation.

    Attributes
    ----------
    correlation : ndarray of shape (n_kept, n_kept)
        ``R`` used for selection and imputation (standardised space).
    covariance : ndarray of shape (n_kept, n_kept)
        The estimated covariance of the standardised scores.
    columns : ndarray of int
        Positions (in the source matrix) of the kept columns; ``correlation`` is indexed
        in this order.
    standardization : Standardization
        Observed mean/std of the kept columns (to undo the standardisation).
    estimator : str
        ``"em"`` or ``"pairwise"``.
    em : EMResult or None
        EM diagnostics (iterations, convergence, log-likelihood trace).
    dropped : ndarray of int
        Positions of columns dropped for having fewer than ``min_observed`` entries.
    """

    correlation: np.ndarray
    covariance: np.ndarray
    columns: np.ndarray
    standardization: Standardization
    estimator: str
    em: EMResult | None = None
    dropped: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.intp))


def protocol_em_options(n_rows: int, n_cols: int, observed_fraction: float,
                        release: Release = "head") -> dict:
    """EM settings of the reference ``estimate_corr_em`` (protocol section 4 and 8).

    Parameters
    ----------
    n_rows, n_cols : int
        Training rows M and columns N.
    observed_fraction : float
        Fraction of observed training entries.
    release : {"head", "prev"}
        ``"head"`` (f339e73): "regularized" = ``M < N or observed < 0.5`` -> eps 1e-3 and
        1000 iterations, else eps 1e-6 and 500. ``"prev"`` (319b4e7, used for the paper's
        BenchPress row): eps 1e-3 if ``M < N`` else 1e-6, always 500 iterations.

    Returns
    -------
    dict
        ``max_iter``, ``eps`` and ``shrinkage`` ("auto" if ``M < N`` else 0.0).
    """
    shrink_opt: float | str = "auto" if n_rows < n_cols else 0.0
    if release == "head":
        regularized = n_rows < n_cols or observed_fraction < 0.5
        return {"max_iter": 1000 if regularized else 500,
                "eps": 1e-3 if regularized else 1e-6, "shrinkage": shrink_opt}
    if release == "prev":
        return {"max_iter": 500, "eps": 1e-3 if n_rows < n_cols else 1e-6,
                "shrinkage": shrink_opt}
    raise ValidationError(f"release must be 'head' or 'prev', got {release!r}")


def correlation_from_covariance(sigma: np.ndarray) -> np.ndarray:
    """``R = Sigma / sqrt(d d^T)`` with the diagonal floored at 1e-12 (protocol section 4.4)."""
    d_inv = 1.0 / np.sqrt(np.maximum(np.diag(sigma), 1e-12))
    return sigma * np.outer(d_inv, d_inv)


def estimate_correlation(values: np.ndarray, *, estimator: Estimator = "auto",
                         release: Release = "head", max_iter: int | None = None,
                         eps: float | None = None,
                         shrinkage: float | Literal["auto"] | None = None,
                         tol: float = PROTOCOL_TOL, min_observed: int = 2,
                         transform: Transform = "none", unit_diagonal: bool = False,
                         n_threads: int | None = 1, names: np.ndarray | None = None,
                         warn: bool = True) -> CorrelationEstimate:
    """Correlation matrix of benchmark scores as in the reference ``estimate_corr``.

    Parameters
    ----------
    values : ndarray of shape (n_models, n_columns)
        Raw scores, NaN = missing.
    estimator : {"auto", "em", "pairwise"}
        "auto" follows the reference: EM if the observed fraction is < 0.9 or ``M < N``,
        else the pairwise-complete correlation (eigenvalue floor 1e-6, rescaled to unit
        diagonal, std floor 1e-6 instead of the relative floor).
    release : {"head", "prev"}
        Which reference release's EM settings to use when ``max_iter``/``eps``/``shrinkage``
        are not given (see :func:`protocol_em_options`).
    max_iter, eps, shrinkage : optional
        Override the protocol EM settings.
    tol : float
        EM tolerance (relative Frobenius change).
    min_observed : int
        Columns observed for fewer models are dropped with a warning naming them (they
        cannot be selected, and are predicted as NaN). Default 2: a single entry gives no
        variance. The reference code keeps them (``min_observed=1`` reproduces it).
    transform : {"none", "logit"}
        Score transform before standardising.
    unit_diagonal : bool
        Set ``diag(R)`` to exactly 1 (removes the rounding noise that decides the first greedy
        entropy pick of the reference, protocol section 5).
    n_threads : int or None
        BLAS threads during EM.
    names : ndarray of str, optional
        Column ids for the warning about dropped columns.
    warn : bool
        Warn when EM does not converge.

    Returns
    -------
    CorrelationEstimate
    """
    values = np.asarray(values, dtype=np.float64)
    if values.ndim != 2:
        raise ValidationError(f"scores must be a 2-D matrix, got shape {values.shape}")
    if np.isinf(values).any():
        raise ValidationError("scores contain ±inf; use NaN for missing entries")
    if min_observed < 1:
        raise ValidationError(f"min_observed must be >= 1, got {min_observed}")
    counts = (~np.isnan(values)).sum(axis=0)
    keep = np.flatnonzero(counts >= min_observed)
    dropped = np.flatnonzero(counts < min_observed)
    if len(dropped):
        labels = dropped if names is None else np.asarray(names)[dropped]
        warnings.warn(f"dropping {len(dropped)} column(s) observed for fewer than "
                      f"{min_observed} models: {preview(labels)}", UserWarning, stacklevel=2)
    if len(keep) == 0:
        raise ValidationError(f"no column is observed for at least {min_observed} models")
    x = values[:, keep]
    m_rows, n = x.shape
    if m_rows < 2:
        raise ValidationError(f"need at least 2 models to estimate a covariance, got {m_rows}")
    observed = ~np.isnan(x)
    obs_frac = float(observed.mean())
    if estimator == "auto":
        estimator = "em" if (obs_frac < 0.9 or m_rows < n) else "pairwise"
    em_result = None
    if estimator == "pairwise":
        std = fit_standardization(x, floor=0.0, transform=transform)
        std = Standardization(std.mean, np.sqrt(np.maximum(std.std**2, 1e-12)), transform)
        z = np.where(observed, std.forward(x), 0.0)
        obs = observed.astype(np.float64)
        gram = (z.T @ z) / np.maximum(obs.T @ obs - 1.0, 1.0)
        sigma = project_psd(gram, 1e-6)
    elif estimator == "em":
        std = fit_standardization(x, transform=transform)
        z = np.where(observed, std.forward(x), 0.0)
        opts = protocol_em_options(m_rows, n, obs_frac, release)
        for key, val in (("max_iter", max_iter), ("eps", eps), ("shrinkage", shrinkage)):
            if val is not None:
                opts[key] = val
        em_result = em_covariance(z, observed, tol=tol, n_threads=n_threads, warn=warn, **opts)
        sigma = em_result.covariance
    else:
        raise ValidationError(f"estimator must be 'auto', 'em' or 'pairwise', got {estimator!r}")
    corr = correlation_from_covariance(sigma)
    if unit_diagonal:
        np.fill_diagonal(corr, 1.0)
    return CorrelationEstimate(correlation=corr, covariance=sigma, columns=keep,
                               standardization=std, estimator=estimator, em=em_result,
                               dropped=dropped)
