"""EM estimate of the mean and covariance of Gaussian rows with missing entries.

Smola, "Submodular Benchmark Selection" (2026), Section 4.3 as run by the reference code
(``smolix/benchmark-selection``, ``code/em_cov.py``; protocol section 4); Dempster, Laird &
Rubin (1977); Little & Rubin (2019), ch. 11. The E-step fills missing entries with their
conditional means and adds the conditional covariances in the M-step (divisor M), followed
by a PSD projection. Shrinkage is applied at initialisation and once after the loop (exactly
as the reference code does, not inside the loop).

Speed: the E-step groups rows with the same missingness pattern and factorises one block
per pattern (``Sigma_oo``, or the precision block ``K_mm`` when fewer entries are missing
than observed) with one LAPACK ``dposv`` that also returns the block's inverse and the rows'
solves; blocks and residuals of all patterns are gathered with one ``take`` per iteration.
The conditional covariances of all rows are summed with two matrix products and one
``bincount`` instead of one N x N matrix per row, and the observed-data log-likelihood
(monitoring) comes from the same factors, so no second pass is needed. The PSD projection
skips its eigendecomposition when ``Sigma - eps I`` has a Cholesky factor (floor inactive).
BLAS threads are limited with ``threadpoolctl`` (default one thread: the matrices are small,
and more threads only add synchronisation overhead). See ``benchmarks/results/em_speed.md``;
the straightforward per-row EM that it is checked and timed against lives in
``tests/reference_em.py``.
"""

from __future__ import annotations

import warnings
from contextlib import nullcontext
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

import numpy as np
from scipy.linalg import eigh, lapack
from sklearn.exceptions import ConvergenceWarning
from threadpoolctl import threadpool_limits

from coreval._progress import progress_bar
from coreval.base.checks import check_positive_int
from coreval.errors import ValidationError
from coreval.gaussian.covariance import auto_shrinkage, pairwise_covariance, project_psd, shrink

#: Convergence tolerance of the relative Frobenius change used by the protocol.
PROTOCOL_TOL = 5e-4
_LOG_2PI = float(np.log(2.0 * np.pi))


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
    max_iter = check_positive_int("max_iter", max_iter, minimum=0)
    if not (tol > 0 and eps > 0):  # also refuses NaN
        raise ValidationError(f"need tol > 0 and eps > 0; got {tol}, {eps}")
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
