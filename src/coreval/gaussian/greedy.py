"""Greedy entropy, mutual-information and variance-reduction selection of benchmarks from a
covariance matrix.

Smola, "Submodular Benchmark Selection" (2026): Algorithm 1 (greedy entropy = pivoted
Cholesky) and Algorithm 2 (greedy mutual information, Krause, Singh & Guestrin 2008), with
the reference code's conventions (``smolix/benchmark-selection``, ``code/greedy_select.py``;
protocol section 5).

* Entropy: the gain of ``v`` given the selected set ``S`` is ``1/2 log(2 pi e d_v)`` with
  ``d_v = Var(v | S)``, the residual diagonal of a pivoted Cholesky factorisation
  (``O(k^2 N)`` for k picks).
* Mutual information ``I(X_S; X_{V \\ S})``: the gain of ``v`` is
  ``1/2 [log d_v + log P_vv]``, ``P = (Sigma_CC)^{-1}`` the precision of the complement
  ``C = V \\ S`` (which contains ``v``). The reference refactorises ``Sigma_CC`` at every step
  (``O(k N^3)``, kept here as :func:`greedy_mi_direct`). We use the identity for the inverse
  of a principal block, ``(Sigma_CC)^{-1} = K_CC - K_CS K_SS^{-1} K_SC`` with
  ``K = Sigma^{-1}``: ``P_vv`` is the residual diagonal of a pivoted Cholesky of ``K`` with the
  *same* pivots ``S``. So one factorisation of ``Sigma`` (``O(N^3)``) plus two pivoted
  Cholesky updates (``O(k^2 N)``) give the same scores; no inverse is ever downdated (the
  unstable rank-one update the reference avoids), each update is a forward Cholesky step on
  a positive definite matrix.
* Variance reduction (A-optimal design): the gain of ``v`` is
  ``sum_u Cov(u, v | S)^2 / Var(v | S)``, how much the total conditional variance
  ``tr Sigma_{V|S}`` drops when ``v`` is added; the set function is the explained variance
  ``tr Sigma - tr Sigma_{V|S}``, ``N R^2`` on a correlation matrix (Das & Kempe 2008, "Algorithms for
  subset selection in linear regression"; Krause, Singh & Guestrin 2008, section 2). It is the
  criterion the imputation R^2 of the protocol measures. The residual covariance
  ``Sigma - L L^T`` comes from the same pivoted Cholesky (``O(k N^2)`` for k picks).
* Budgeted selection with per-benchmark costs: the cost-effective greedy rule
  (gain / cost) and the best single benchmark, keeping the better of the two (Krause &
  Guestrin 2005, "A note on the budgeted maximization of submodular functions"). Their
  guarantee needs a monotone objective; differential entropy and MI are not (gains can be
  negative), so here it is a heuristic, and where no affordable gain is positive the
  largest gain is taken, so that uniform costs with budget k give plain greedy's picks.
* Mandatory benchmarks are selected first, in the given order.
* Lazy greedy (Minoux 1978) is offered for entropy, whose gains can only shrink (conditioning
  reduces variance); it is not valid for MI, whose gains can grow.

Tie-break (entropy and MI): the candidate with the largest gain; gains within
``tie_tol`` (relative) of the maximum are ties, resolved to the lowest column index. This
makes the first entropy pick deterministic (every ``diag(R)`` entry of a correlation matrix
is ``1 +- 4e-16``; the reference takes whichever rounding made largest). ``tie_tol=0``
reproduces plain ``argmax`` (exact ties -> lowest index, as the reference).
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.linalg import eigh, lapack, solve_triangular

from coreval.base.checks import check_k
from coreval.errors import ValidationError, preview

_TINY = 1e-300
_LOG_2PI_E = float(np.log(2.0 * np.pi * np.e))


@dataclass(frozen=True)
class GreedyResult:
    """Selection made by a greedy rule.

    Attributes
    ----------
    selected : ndarray of int
        Column positions of the covariance matrix, in selection order (mandatory first).
    gains : ndarray of float
        The gain of each pick when it was made (``log d_v`` for entropy, the reference's
        ``log d_v + log P_vv`` for MI; ``nan`` for mandatory picks).
    residual_variance : ndarray of float
        ``sum_{j not in S} Var(j | S) / tr(Sigma)`` after each pick.
    objective : str
        ``"entropy"``, ``"mi"``, ``"variance"`` or ``"random"``.
    rule : str
        ``"greedy"``, ``"lazy"`` (lazy entropy), ``"cost-effective"`` or ``"best-singleton"``
        (budgeted selection).
    """

    selected: np.ndarray
    gains: np.ndarray
    residual_variance: np.ndarray
    objective: str
    rule: str = "greedy"


# -------------------------------------------------------------------- validation
def _check_cov(cov: np.ndarray) -> np.ndarray:
    cov = np.asarray(cov, dtype=np.float64)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise ValidationError(f"covariance must be a square matrix, got shape {cov.shape}")
    if not np.isfinite(cov).all():
        raise ValidationError("covariance contains NaN or inf")
    if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12):
        raise ValidationError("covariance is not symmetric")
    return cov


def _check_mandatory(mandatory: Sequence[int], n: int) -> list[int]:
    out = [int(j) for j in mandatory]
    bad = [j for j in out if j < 0 or j >= n]
    if bad:
        raise ValidationError(f"mandatory positions out of range 0..{n - 1}: {preview(bad)}")
    if len(set(out)) != len(out):
        raise ValidationError("mandatory benchmarks contain duplicates")
    return out


def check_costs(costs: Sequence[float] | np.ndarray | None, budget: float | None, n: int,
                mandatory: Sequence[int] = ()) -> np.ndarray | None:
    """Validate per-benchmark costs and the budget (one-line errors).

    Parameters
    ----------
    costs : array-like of shape (n,) or None
        Positive finite cost of each benchmark.
    budget : float or None
        Total budget; required with costs. It must cover the mandatory benchmarks and at
        least one more (or the cheapest benchmark when none is mandatory).
    n : int
        Number of benchmarks.
    mandatory : sequence of int
        Positions that must be selected.

    Returns
    -------
    ndarray or None
        The costs as floats.
    """
    if costs is None:
        if budget is not None:
            raise ValidationError("a budget needs per-benchmark costs")
        return None
    c = np.asarray(costs, dtype=np.float64).ravel()
    if c.shape != (n,):
        raise ValidationError(f"got {c.size} costs for {n} benchmarks")
    if not np.isfinite(c).all() or (c <= 0).any():
        raise ValidationError("costs must be positive and finite")
    if budget is None or not np.isfinite(budget) or budget <= 0:
        raise ValidationError(f"costs need a positive finite budget, got {budget!r}")
    fixed = float(c[list(mandatory)].sum()) if len(mandatory) else 0.0
    if fixed > budget:
        raise ValidationError(f"mandatory benchmarks cost {fixed:g} > budget {budget:g}")
    rest = np.delete(c, list(mandatory))
    if not len(mandatory) and rest.min() > budget:
        raise ValidationError(f"budget {budget:g} is below the cheapest benchmark "
                              f"({rest.min():g})")
    return c


def _pick(gains: np.ndarray, tie_tol: float, free: np.ndarray) -> int:
    """Index of the largest gain among the ``free`` columns; gains within ``tie_tol``
    relative -> lowest index; NaN counts as no gain. With no finite gain (a singular
    covariance: every free column is determined by the chosen ones), the first free column,
    as :func:`greedy_mi_direct`; an infinite gain wins (the first one).
    """
    # NaN gains (log of a round-off negative variance of an exactly singular matrix) count
    # as no gain; they must not turn the maximum into NaN.
    gains = np.where(free & ~np.isnan(gains), gains, -np.inf)
    best = np.max(gains)
    if not np.isfinite(best):
        top = np.flatnonzero(gains == best) if best > 0 else np.zeros(0, dtype=np.intp)
        return int(top[0]) if len(top) else int(np.flatnonzero(free)[0])
    if tie_tol <= 0:
        return int(np.argmax(gains))
    return int(np.flatnonzero(gains >= best - tie_tol * max(abs(best), 1.0))[0])


# ------------------------------------------------------------- pivoted Cholesky
class _PivotedCholesky:
    """Incremental pivoted Cholesky of a PSD matrix: residual diagonal ``d`` after pivots.

    ``L[:, t] = (A[:, j] - L[:, :t] L[j, :t]) / sqrt(d_j)``, ``d -= L[:, t]^2`` (Algorithm 1).
    Rows of already selected pivots are not updated (their residual is 0).
    """

    def __init__(self, a: np.ndarray, k_max: int) -> None:
        self.a = a
        self.d = np.diag(a).astype(np.float64).copy()
        self.lmat = np.zeros((a.shape[0], max(k_max, 1)))
        self.free = np.ones(a.shape[0], dtype=bool)
        self.t = 0

    def add(self, j: int) -> None:
        t = self.t
        if t == self.lmat.shape[1]:
            self.lmat = np.concatenate([self.lmat, np.zeros_like(self.lmat)], axis=1)
        col = (self.a[:, j] - self.lmat[:, :t] @ self.lmat[j, :t]) / np.sqrt(
            max(self.d[j], _TINY))
        col[~self.free] = 0.0
        self.lmat[:, t] = col
        self.d -= col**2
        self.free[j] = False
        self.d[j] = 0.0
        self.t += 1


class _Objective:
    """Gains of the unselected columns under entropy, MI or variance reduction, updated
    pick by pick."""

    def __init__(self, cov: np.ndarray, objective: str, k_max: int) -> None:
        self.cov = cov
        self.objective = objective
        self.chol = _PivotedCholesky(cov, k_max)
        self.total = float(np.trace(cov))
        if objective == "mi":
            self.prec = _PivotedCholesky(_inverse(cov), k_max)
        elif objective not in ("entropy", "variance"):
            raise ValidationError(f"objective must be 'entropy', 'mi' or 'variance', got "
                                  f"{objective!r}")

    @property
    def free(self) -> np.ndarray:
        return self.chol.free

    def gains(self) -> np.ndarray:
        """Reference scores: ``log d_v`` (entropy), ``log d_v + log P_vv`` (MI), or the drop
        of ``tr Sigma_{V|S}`` (variance); -inf for used columns."""
        d = self.chol.d
        if self.objective == "variance":
            return np.where(self.free, self._variance_drop(), -np.inf)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.objective == "entropy":
                g = np.log(np.maximum(d, _TINY))
            else:
                p = self.prec.d
                ok = (d > _TINY) & (p > _TINY)
                g = np.where(ok, np.log(np.where(ok, d, 1.0)) + np.log(np.where(ok, p, 1.0)),
                             -np.inf)
        return np.where(self.free, g, -np.inf)

    def _variance_drop(self) -> np.ndarray:
        """``sum_u C_uv^2 / C_vv`` with ``C = Sigma - L L^T`` restricted to the free columns."""
        t, free = self.chol.t, self.free
        lmat = self.chol.lmat[:, :t]
        resid = self.cov - lmat @ lmat.T
        resid[~free] = 0.0
        resid[:, ~free] = 0.0
        diag = np.diag(resid)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(diag > _TINY, (resid**2).sum(axis=0) / np.where(
                diag > _TINY, diag, 1.0), 0.0)

    def objective_gain(self, gains: np.ndarray) -> np.ndarray:
        """Gain in the set function: entropy ``(log 2 pi e + log d)/2``, MI ``score/2``,
        variance the drop itself."""
        if self.objective == "entropy":
            return 0.5 * (_LOG_2PI_E + gains)
        if self.objective == "variance":
            return gains
        return 0.5 * gains

    def add(self, j: int) -> None:
        self.chol.add(j)
        if self.objective == "mi":
            self.prec.add(j)

    def residual_variance(self) -> float:
        return float(self.chol.d[self.free].sum() / self.total) if self.total > 0 else 0.0


def _inverse(cov: np.ndarray) -> np.ndarray:
    """``cov^{-1}`` by Cholesky (LAPACK ``potrf`` + ``potri``); eigenvalues clamped at 1e-10
    when not positive definite (the reference's fallback for a singular complement block)."""
    chol, info = lapack.dpotrf(cov, lower=1, clean=1)
    if info == 0:
        inv, info = lapack.dpotri(chol, lower=1)
    if info != 0:
        w, v = eigh(cov)
        return (v / np.maximum(w, 1e-10)) @ v.T
    return np.tril(inv) + np.tril(inv, -1).T


# ---------------------------------------------------------------------- drivers
def _check_k(k: int, n: int, mandatory: list[int]) -> int:
    """``k`` as an int in ``[max(1, len(mandatory)), n]``."""
    k = check_k(k, n)
    if len(mandatory) > k:
        raise ValidationError(f"{len(mandatory)} mandatory benchmarks exceed k={k}")
    return k


def _greedy(cov: np.ndarray, k: int, objective: str, mandatory: Sequence[int],
            costs: np.ndarray | None, budget: float | None, tie_tol: float) -> GreedyResult:
    cov = _check_cov(cov)
    n = cov.shape[0]
    mandatory = _check_mandatory(mandatory, n)
    k = _check_k(k, n, mandatory)
    costs = check_costs(costs, budget, n, mandatory)
    if costs is None:
        return _run(cov, k, objective, mandatory, None, None, tie_tol, "greedy")
    ratio = _run(cov, k, objective, mandatory, costs, budget, tie_tol, "cost-effective")
    if len(mandatory) >= k:  # nothing left to choose: no singleton to add
        return ratio
    single = _best_singleton(cov, objective, mandatory, costs, budget, tie_tol)
    # Krause & Guestrin keep the singleton when it is worth more than the greedy set. The
    # objectives here are not monotone (the filled set can be worth less than its own
    # first picks), so the singleton is set against the best prefix of the greedy set.
    best_prefix = max((set_value(cov, ratio.selected[:t], objective)
                       for t in range(len(mandatory) + 1, len(ratio.selected) + 1)),
                      default=-np.inf)
    if single is not None and set_value(cov, single.selected, objective) > best_prefix:
        return single
    return ratio


def _run(cov: np.ndarray, k: int, objective: str, mandatory: list[int],
         costs: np.ndarray | None, budget: float | None, tie_tol: float,
         rule: str) -> GreedyResult:
    state = _Objective(cov, objective, k)
    selected, gains, resid = [], [], []
    spent = 0.0
    for j in mandatory:
        state.add(j)
        selected.append(j)
        gains.append(np.nan)
        resid.append(state.residual_variance())
        spent += 0.0 if costs is None else costs[j]
    while len(selected) < k:
        g = state.gains()
        if costs is not None:
            value = state.objective_gain(g)
            affordable = state.free & (costs <= budget - spent + 1e-12)
            if not affordable.any():
                break
            # Gain per cost while some affordable benchmark gains; differential entropy and
            # MI gains can be negative (a benchmark nearly determined by the chosen ones,
            # or MI past its peak), where a ratio would favour the costliest. Then the
            # largest gain among the affordable ones, as plain greedy would pick.
            positive = affordable & (value > 0)
            if positive.any():
                j = _pick(np.where(positive, value / costs, -np.inf), tie_tol, state.free)
            else:
                j = _pick(np.where(affordable, g, -np.inf), tie_tol, state.free)
        else:
            j = _pick(g, tie_tol, state.free)
        selected.append(j)
        gains.append(float(g[j]))
        state.add(j)
        resid.append(state.residual_variance())
        spent += 0.0 if costs is None else costs[j]
    return GreedyResult(np.asarray(selected, dtype=np.intp), np.asarray(gains),
                        np.asarray(resid), objective, rule)


def _best_singleton(cov: np.ndarray, objective: str, mandatory: list[int], costs: np.ndarray,
                    budget: float, tie_tol: float) -> GreedyResult | None:
    """The best affordable single benchmark added to the mandatory ones."""
    state = _Objective(cov, objective, len(mandatory) + 1)
    for j in mandatory:
        state.add(j)
    left = budget - float(costs[mandatory].sum() if mandatory else 0.0)
    g = state.gains()
    g = np.where(state.free & (costs <= left + 1e-12), g, -np.inf)
    if not np.isfinite(g).any():
        return None
    res = _run(cov, len(mandatory), objective, mandatory, None, None, tie_tol, "best-singleton")
    j = _pick(g, tie_tol, state.free)
    state.add(j)
    return GreedyResult(np.append(res.selected, j).astype(np.intp), np.append(res.gains, g[j]),
                        np.append(res.residual_variance, state.residual_variance()),
                        objective, "best-singleton")


def greedy_entropy(cov: np.ndarray, k: int, *, mandatory: Sequence[int] = (),
                   costs: Sequence[float] | np.ndarray | None = None,
                   budget: float | None = None, tie_tol: float = 1e-12,
                   lazy: bool = False) -> GreedyResult:
    """Greedy entropy selection, Algorithm 1 of Smola (2026) (pivoted Cholesky).

    Picks ``argmax_v Var(v | S)`` (maximises ``log det Sigma_SS``, the Gaussian entropy).

    Parameters
    ----------
    cov : ndarray of shape (n, n)
        Covariance or correlation matrix (PSD).
    k : int
        Number of benchmarks (an upper bound when costs are given).
    mandatory : sequence of int
        Positions selected first, in this order.
    costs, budget : optional
        Per-benchmark costs and total budget: cost-effective greedy plus best singleton
        (Krause & Guestrin 2005). Benchmarks are added while one is affordable, up to k:
        by gain per cost while some gain ``(log 2 pi e + log d_v)/2`` is positive, then by
        the largest gain. Entropy is not monotone, so the rule's approximation guarantee
        (for monotone submodular functions) does not carry over.
    tie_tol : float
        Relative tolerance under which gains are tied (lowest index wins).
    lazy : bool
        Lazy evaluation with a priority queue of stale upper bounds (valid: ``Var(v | S)``
        never increases as S grows). Same picks up to ties; exact ties only (``tie_tol`` is
        not used). Not combinable with costs.

    Returns
    -------
    GreedyResult

    References
    ----------
    Smola, A. (2026). Submodular Benchmark Selection, Algorithm 1.
    Krause, A. & Guestrin, C. (2005). A note on the budgeted maximization of submodular
    functions. CMU-CALD-05-103.
    """
    if lazy:
        if costs is not None:
            raise ValidationError("lazy greedy does not support costs")
        cov = _check_cov(cov)
        mandatory = _check_mandatory(mandatory, len(cov))
        return _lazy_entropy(cov, _check_k(k, len(cov), mandatory), mandatory)
    return _greedy(cov, k, "entropy", mandatory, None if costs is None else np.asarray(costs),
                   budget, tie_tol)


def greedy_mi(cov: np.ndarray, k: int, *, mandatory: Sequence[int] = (),
              costs: Sequence[float] | np.ndarray | None = None,
              budget: float | None = None, tie_tol: float = 0.0) -> GreedyResult:
    """Greedy mutual-information selection, Algorithm 2 of Smola (2026), ``O(N^3 + k^2 N)``.

    Picks ``argmax_v log Var(v | S) + log [(Sigma_CC)^{-1}]_vv`` with ``C = V \\ S``
    (``2 x`` the MI gain ``H(v | S) - H(v | V \\ S \\ {v})``, Krause et al. 2008, Eq. 6). The
    complement precision diagonal is the residual diagonal of a pivoted Cholesky of
    ``K = Sigma^{-1}`` with the same pivots (module docstring); the selections equal those
    of :func:`greedy_mi_direct` (tested on random and real matrices).

    Parameters
    ----------
    cov : ndarray of shape (n, n)
        Covariance or correlation matrix (positive definite; a singular one is inverted with
        eigenvalues clamped at 1e-10).
    k, mandatory, costs, budget
        As in :func:`greedy_entropy`.
    tie_tol : float
        Relative tie tolerance; default 0 = the reference's "first strictly largest".

    Returns
    -------
    GreedyResult

    References
    ----------
    Krause, A., Singh, A. & Guestrin, C. (2008). Near-optimal sensor placements in Gaussian
    processes. JMLR 9, Algorithm 1.
    """
    return _greedy(cov, k, "mi", mandatory, None if costs is None else np.asarray(costs),
                   budget, tie_tol)


def _pattern_variance(cov: np.ndarray, probes: np.ndarray, patterns: np.ndarray,
                      counts: np.ndarray) -> float:
    """``sum_i Var(z_{T_i} | z_{R_i})`` summed over rows, ``R_i = A ∩ O_i``, ``T_i = O_i \\ A``."""
    total = 0.0
    for row, count in zip(patterns, counts, strict=True):
        revealed = probes[row[probes]]
        targets = np.flatnonzero(row)
        targets = targets[~np.isin(targets, probes)]
        d = np.diag(cov)[targets]
        if revealed.size:
            s_rt = cov[np.ix_(revealed, targets)]
            w = np.linalg.solve(cov[np.ix_(revealed, revealed)], s_rt)
            d = d - (s_rt * w).sum(axis=0)
        total += count * float(d.sum())
    return total


def _greedy_pattern_variance(cov: np.ndarray, observed: np.ndarray, k: int,
                             mandatory: list[int], candidates: list[int]) -> GreedyResult:
    """Greedy expected posterior variance over the rows' observation patterns."""
    patterns, counts = np.unique(observed, axis=0, return_counts=True)
    base = _pattern_variance(cov, np.array([], dtype=np.intp), patterns, counts)
    chosen, gains, resid = list(mandatory), [np.nan] * len(mandatory), []
    for i in range(1, len(mandatory) + 1):  # the residual after each mandatory prefix
        prefix = _pattern_variance(cov, np.asarray(mandatory[:i], dtype=np.intp), patterns,
                                   counts)
        resid.append(prefix / base if base > 0 else 0.0)
    current = _pattern_variance(cov, np.asarray(chosen, dtype=np.intp), patterns, counts)
    while len(chosen) < k:
        best, best_value = None, np.inf
        for cand in candidates:
            if cand in chosen:
                continue
            value = _pattern_variance(cov, np.asarray([*chosen, cand], dtype=np.intp),
                                      patterns, counts)
            if value < best_value:
                best, best_value = cand, value
        gains.append(current - best_value)
        current = best_value
        chosen.append(int(best))
        resid.append(current / base if base > 0 else 0.0)
    return GreedyResult(np.asarray(chosen, dtype=np.intp), np.asarray(gains),
                        np.asarray(resid), "variance", "greedy")


def greedy_variance(cov: np.ndarray, k: int, *, mandatory: Sequence[int] = (),
                    costs: Sequence[float] | np.ndarray | None = None,
                    budget: float | None = None, tie_tol: float = 0.0,
                    observed: np.ndarray | None = None,
                    candidates: Sequence[int] | None = None) -> GreedyResult:
    """Greedy variance reduction: the benchmarks that best predict all the others, linearly.

    Picks ``argmax_v sum_u Cov(u, v | S)^2 / Var(v | S)``, the drop of the total conditional
    variance ``tr Sigma_{V|S}`` (selected columns count with variance 0). On a correlation
    matrix ``1 - tr Sigma_{V|S} / N`` is the expected imputation R^2 of the unselected
    benchmarks under the Gaussian model, the quantity the protocol measures, where MI and
    entropy are proxies for it. The function is not submodular in general; greedy is within
    a factor set by the submodularity ratio (Das & Kempe 2008, 2011).

    With ``observed`` (which benchmarks each known model reports), the objective is the
    expected version over those models: a model reveals only the selected benchmarks it has
    and its targets are the others it has, so a benchmark few models report explains little.
    With every cell observed it is ``n_rows tr Sigma_{V|S}`` again. Rows sharing a pattern
    are evaluated once (``O(k N P a^3)`` for ``P`` distinct patterns).

    Parameters
    ----------
    cov, k, mandatory, costs, budget
        As in :func:`greedy_entropy` (costs only without ``observed``).
    tie_tol : float
        Relative tie tolerance (default 0: plain ``argmax``).
    observed : ndarray of bool, shape (n_rows, n), optional
        Observation mask of the known models.
    candidates : sequence of int, optional
        Allowed picks (default every column; only with ``observed``).

    Returns
    -------
    GreedyResult
        ``gains`` are the variance drops (summed over rows with ``observed``).

    References
    ----------
    Das, A. & Kempe, D. (2008). Algorithms for subset selection in linear regression. STOC.
    Das, A. & Kempe, D. (2011). Submodular meets spectral. ICML.
    Krause, A., Singh, A. & Guestrin, C. (2008). Near-optimal sensor placements in Gaussian
    processes. JMLR 9 (the variance-reduction criterion, section 2).
    """
    if observed is None:
        if candidates is not None:
            raise ValidationError("candidates need an observed mask")
        return _greedy(cov, k, "variance", mandatory,
                       None if costs is None else np.asarray(costs), budget, tie_tol)
    cov = _check_cov(cov)
    n = cov.shape[0]
    observed = np.asarray(observed, dtype=bool)
    if observed.ndim != 2 or observed.shape[1] != n:
        raise ValidationError(f"observed must have {n} columns, got shape {observed.shape}")
    if costs is not None:
        raise ValidationError("costs are not supported with an observed mask")
    mandatory = _check_mandatory(mandatory, n)
    pool = list(range(n)) if candidates is None else [int(c) for c in candidates]
    if any(not 0 <= c < n for c in pool):
        raise ValidationError(f"candidates must be column positions in [0, {n})")
    low, high = max(1, len(mandatory)), len(mandatory) + len(set(pool) - set(mandatory))
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or not low <= k <= high:
        raise ValidationError(f"k must be an integer in [{low}, {high}], got {k!r}")
    return _greedy_pattern_variance(cov, observed, int(k), mandatory, pool)


def exchange_variance(cov: np.ndarray, selected: Sequence[int], *,
                      mandatory: Sequence[int] = (), observed: np.ndarray | None = None,
                      candidates: Sequence[int] | None = None,
                      costs: Sequence[float] | np.ndarray | None = None,
                      budget: float | None = None, max_swaps: int = 100) -> GreedyResult:
    """Improve a set of benchmarks by single swaps on the variance objective (Fedorov exchange).

    Greedy variance reduction is not submodular, so its set can often be improved: each
    step takes the swap of one selected benchmark (not a mandatory one) for one unselected
    candidate that lowers the total conditional variance the most, ``tr Sigma_{V|S}`` or,
    with ``observed``, its expectation over the rows' observation patterns (the objective of
    :func:`greedy_variance`), and stops when no swap lowers it by more than a relative
    ``1e-10`` or after ``max_swaps`` swaps. The result is a local optimum at least as good
    as the start (Fedorov 1972; Miller & Nguyen 1994 for the exchange algorithm). With
    ``costs``, a swap must keep the set within ``budget``.

    Parameters
    ----------
    cov : ndarray of shape (n, n)
    selected : sequence of int
        The starting set (e.g. :func:`greedy_variance`'s ``selected``), mandatory first.
    mandatory, observed, candidates
        As in :func:`greedy_variance`; mandatory positions are never swapped out.
    costs, budget : optional
        Per-benchmark costs and the total budget every swapped set must respect.
    max_swaps : int
        Most swaps made.

    Returns
    -------
    GreedyResult
        ``selected`` in the start's order with swapped-in benchmarks in the places of the
        ones they replaced; ``gains`` and ``residual_variance`` are those of the prefixes of
        that order (``nan`` gains for mandatory picks); ``rule="exchange"``.

    References
    ----------
    Fedorov, V. V. (1972). Theory of Optimal Experiments. Academic Press.
    Miller, A. J. & Nguyen, N.-K. (1994). A Fedorov exchange algorithm for D-optimal design.
    Applied Statistics 43(4), 669-677.
    """
    cov = _check_cov(cov)
    n = cov.shape[0]
    mandatory = _check_mandatory(mandatory, n)
    chosen = [int(j) for j in selected]
    if len(set(chosen)) != len(chosen) or any(not 0 <= j < n for j in chosen):
        raise ValidationError(f"selected must be distinct positions in [0, {n})")
    if chosen[:len(mandatory)] != mandatory:
        raise ValidationError("selected must start with the mandatory positions")
    pool = list(range(n)) if candidates is None else sorted({int(c) for c in candidates})
    if any(not 0 <= c < n for c in pool):
        raise ValidationError(f"candidates must be column positions in [0, {n})")
    cost = check_costs(costs, budget, n, mandatory)
    if observed is not None:
        observed = np.asarray(observed, dtype=bool)
        if observed.ndim != 2 or observed.shape[1] != n:
            raise ValidationError(f"observed must have {n} columns, got shape "
                                  f"{observed.shape}")
        patterns, counts = np.unique(observed, axis=0, return_counts=True)

    def value(subset: Sequence[int]) -> float:  # total conditional variance (lower = better)
        idx = np.asarray(subset, dtype=np.intp)
        if observed is None:
            if idx.size == 0:
                return float(np.trace(cov))
            return residual_variance(cov, idx, ridge=0.0) * float(np.trace(cov))
        return _pattern_variance(cov, idx, patterns, counts)

    current = value(chosen)
    for _ in range(int(max_swaps)):
        best, best_value = None, current
        for i in range(len(mandatory), len(chosen)):
            for c in pool:
                if c in chosen:
                    continue
                trial = [*chosen[:i], c, *chosen[i + 1:]]
                if cost is not None and cost[trial].sum() > budget + 1e-12:
                    continue
                v = value(trial)
                if v < best_value:
                    best, best_value = trial, v
        if best is None or current - best_value <= 1e-10 * max(abs(current), _TINY):
            break
        chosen, current = best, best_value
    base = value([])
    prefix = [value(chosen[:t]) for t in range(len(chosen) + 1)]
    gains = [np.nan if t < len(mandatory) else prefix[t] - prefix[t + 1]
             for t in range(len(chosen))]
    resid = [prefix[t] / base if base > 0 else 0.0 for t in range(1, len(chosen) + 1)]
    return GreedyResult(np.asarray(chosen, dtype=np.intp), np.asarray(gains),
                        np.asarray(resid), "variance", "exchange")


def greedy_mi_direct(cov: np.ndarray, k: int, *, mandatory: Sequence[int] = ()) -> GreedyResult:
    """Greedy MI with the complement precision refactorised at every step, ``O(k N^3)``.

    The straightforward procedure of the reference code, kept to check :func:`greedy_mi`:
    at each step ``diag((Sigma_CC)^{-1})`` from a Cholesky factor of ``Sigma_CC``
    (``L^{-1}`` column norms; eigenvalue clamp 1e-10 if not PD), score
    ``log d_v + log P_vv`` (``-inf`` if either is ``<= 1e-300``), first strictly largest.

    Parameters
    ----------
    cov : ndarray of shape (n, n)
    k : int
    mandatory : sequence of int

    Returns
    -------
    GreedyResult
    """
    cov = _check_cov(cov)
    n = cov.shape[0]
    mandatory = _check_mandatory(mandatory, n)
    k = _check_k(k, n, mandatory)
    chol = _PivotedCholesky(cov, k)
    total = float(np.trace(cov))
    selected, gains, resid = [], [], []
    for step in range(k):
        comp = np.flatnonzero(chol.free)
        block = cov[np.ix_(comp, comp)]
        try:
            linv = solve_triangular(np.linalg.cholesky(block), np.eye(len(comp)), lower=True)
            p = (linv**2).sum(axis=0)
        except np.linalg.LinAlgError:
            w, v = np.linalg.eigh(block)
            p = (v**2 / np.maximum(w, 1e-10)).sum(axis=1)
        if step < len(mandatory):
            j, gain = mandatory[step], np.nan
        else:
            d = chol.d[comp]
            ok = (d > _TINY) & (p > _TINY)
            score = np.full(len(comp), -np.inf)
            score[ok] = np.log(d[ok]) + np.log(p[ok])
            i = int(np.argmax(score)) if np.isfinite(score).any() else 0
            j, gain = int(comp[i]), float(score[i])
        selected.append(j)
        gains.append(gain)
        chol.add(j)
        resid.append(float(chol.d[chol.free].sum() / total))
    return GreedyResult(np.asarray(selected, dtype=np.intp), np.asarray(gains),
                        np.asarray(resid), "mi", "greedy")


def _lazy_entropy(cov: np.ndarray, k: int, mandatory: list[int]) -> GreedyResult:
    """Lazy greedy entropy: pivoted Cholesky rows are completed only for popped candidates."""
    n = cov.shape[0]
    if not 1 <= k <= n:
        raise ValidationError(f"k={k} must be between 1 and the {n} benchmarks")
    if len(mandatory) > k:
        raise ValidationError(f"{len(mandatory)} mandatory benchmarks exceed k={k}")
    lmat = np.zeros((n, k))
    d = np.diag(cov).astype(np.float64).copy()
    done = np.zeros(n, dtype=np.intp)  # number of Cholesky columns computed for each row
    pivots: list[int] = []
    piv_sqrt: list[float] = []

    def refresh(j: int) -> None:
        for s in range(done[j], len(pivots)):
            p = pivots[s]
            lmat[j, s] = (cov[j, p] - lmat[j, :s] @ lmat[p, :s]) / piv_sqrt[s]
            d[j] -= lmat[j, s] ** 2
        done[j] = len(pivots)

    def take(j: int) -> None:
        refresh(j)
        s = len(pivots)
        pivots.append(j)
        piv_sqrt.append(float(np.sqrt(max(d[j], _TINY))))
        lmat[j, s] = piv_sqrt[-1]
        done[j] = s + 1

    gains: list[float] = []
    for j in mandatory:
        take(j)
        gains.append(np.nan)
    heap = [(-d[j], j) for j in range(n) if j not in set(mandatory)]
    heapq.heapify(heap)
    while len(pivots) < k:
        _, j = heapq.heappop(heap)
        if done[j] == len(pivots):  # bound is fresh: it is the exact maximum
            gains.append(float(np.log(max(d[j], _TINY))))
            take(j)
            continue
        refresh(j)
        heapq.heappush(heap, (-d[j], j))
    resid = [residual_variance(cov, pivots[:t], ridge=1e-12) for t in range(1, k + 1)]
    return GreedyResult(np.asarray(pivots, dtype=np.intp), np.asarray(gains), np.asarray(resid),
                        "entropy", "lazy")


# ------------------------------------------------------------------ set values
def set_value(cov: np.ndarray, subset: Sequence[int] | np.ndarray, objective: str) -> float:
    """Value of a set: entropy ``1/2 log det(2 pi e Sigma_SS)``, MI ``I(X_S; X_{V\\S})`` or
    variance ``tr Sigma - tr Sigma_{V|S}``.

    Parameters
    ----------
    cov : ndarray of shape (n, n)
    subset : sequence of int
    objective : {"entropy", "mi", "variance"}

    Returns
    -------
    float
        ``-inf`` when a block is singular.
    """
    cov = np.asarray(cov, dtype=np.float64)
    idx = np.asarray(subset, dtype=np.intp)
    if len(idx) == 0:
        return 0.0

    def logdet(ix: np.ndarray) -> float:
        if len(ix) == 0:
            return 0.0
        sign, val = np.linalg.slogdet(cov[np.ix_(ix, ix)])
        return float(val) if sign > 0 else -np.inf

    if objective == "entropy":
        return 0.5 * (len(idx) * _LOG_2PI_E + logdet(idx))
    if objective == "variance":
        return float(np.trace(cov) * (1.0 - residual_variance(cov, idx, ridge=0.0)))
    comp = np.setdiff1d(np.arange(cov.shape[0]), idx)
    return 0.5 * (logdet(idx) + logdet(comp) - logdet(np.arange(cov.shape[0])))


def residual_variance(cov: np.ndarray, subset: Sequence[int] | np.ndarray,
                      ridge: float = 1e-8) -> float:
    """``sum_{j not in S} Var(j | S) / tr(Sigma)`` (the reference's ``random_select`` metric,
    with a ``ridge`` on ``Sigma_SS``)."""
    cov = np.asarray(cov, dtype=np.float64)
    idx = np.asarray(subset, dtype=np.intp)
    rest = np.setdiff1d(np.arange(cov.shape[0]), idx)
    if len(rest) == 0:
        return 0.0
    c_ra = cov[np.ix_(rest, idx)]
    w = np.linalg.solve(cov[np.ix_(idx, idx)] + ridge * np.eye(len(idx)), c_ra.T).T
    cond = np.diag(cov)[rest] - (w * c_ra).sum(axis=1)
    return float(np.maximum(cond, 0.0).sum() / np.trace(cov))
