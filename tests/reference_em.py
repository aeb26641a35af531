"""The reference per-row EM: the straightforward implementation the library's EM is checked against.

:func:`em_covariance_per_row` runs the same algorithm as
:func:`coreval.gaussian.em.em_covariance` the way the reference code
(``smolix/benchmark-selection``, ``code/em_cov.py``) writes it: one Cholesky per row, a dense
``N x N`` conditional covariance per row and a per-row log-likelihood pass. It is not part of
the package; ``tests/test_gaussian_covariance.py`` checks that the grouped E-step converges to
the same covariance, and ``benchmarks/em_speed.py`` imports it from here to time it.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
from scipy.linalg import cho_factor, cho_solve

from coreval.gaussian.covariance import auto_shrinkage, pairwise_covariance, project_psd, shrink
from coreval.gaussian.em import PROTOCOL_TOL, EMResult

_LOG_2PI = float(np.log(2.0 * np.pi))


def em_covariance_per_row(z: np.ndarray, observed: np.ndarray | None = None, *,
                          max_iter: int = 500, tol: float = PROTOCOL_TOL, eps: float = 1e-6,
                          shrinkage: float | Literal["auto"] = 0.0) -> EMResult:
    """Direct per-row EM (same algorithm as :func:`~coreval.gaussian.em.em_covariance`).

    Written the straightforward way of the reference code: a Cholesky of ``Sigma_oo`` for every
    row, a dense ``N x N`` conditional covariance per row, and a second per-row pass for the
    observed-data log-likelihood at the new parameters. Used by ``benchmarks/em_speed.py`` and
    the tests to check that the grouped E-step converges to the same covariance. BLAS threads
    are left as the caller set them.

    Parameters
    ----------
    z, observed, max_iter, tol, eps, shrinkage
        As in :func:`~coreval.gaussian.em.em_covariance`.

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
