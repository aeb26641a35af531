"""Mutual-information estimators for feature selection, vectorised over candidate columns.

Every estimator takes a matrix of candidate columns ``X`` (n_samples × n_columns)
and ONE vector ``y`` and returns the mutual information (nats) between each
column and ``y``. The estimator is chosen by data type (:func:`mutual_info`):

=====================  ======================  ======================================
columns                ``y``                   estimator
=====================  ======================  ======================================
binary                 binary                  plug-in, contingency table (exact)
binary                 continuous              Ross (2014) k-NN
continuous             continuous              KSG estimator 1 (Kraskov et al. 2004)
                                               or its PCA local non-uniformity
                                               correction LNC (Gao et al. 2015)
=====================  ======================  ======================================

scikit-learn implements Ross and KSG (``mutual_info_classif``/``_regression``)
but one column pair at a time through KD-trees, and its public functions add
random noise. mRMR needs thousands of columns against one vector at every greedy
step, so the k-NN counts are computed here from the sorted pairwise-distance
matrix of the (few) samples, for many columns at once. The results equal
scikit-learn's private ``_compute_mi_cd``/``_compute_mi_cc`` (see the tests) up to the
radius rounding: with continuous, untied y a few per cent of columns differ (up to
0.03 nats), where scikit-learn's KD-tree rounds a distance at the ball's boundary the
other way; a brute-force Ross estimate agrees with the one here.

References
----------
B. C. Ross, "Mutual information between discrete and continuous data sets",
PLoS ONE 9(2), 2014.
A. Kraskov, H. Stögbauer, P. Grassberger, "Estimating mutual information",
Phys. Rev. E 69, 066138, 2004 (estimator 1, eq. 8).
S. Gao, G. Ver Steeg, A. Galstyan, "Efficient estimation of mutual information
for strongly dependent variables", AISTATS 2015 (LNC, Algorithm 1).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

import numpy as np
from scipy.special import digamma

from coreval.errors import ValidationError

#: Default number of nearest neighbours for a binary column against a continuous target.
BINARY_NEIGHBORS = 5
#: Default number of nearest neighbours for continuous-continuous estimators.
CONTINUOUS_NEIGHBORS = 8
#: Elements per block of the (columns × samples × samples) work arrays.
_BLOCK_ELEMENTS = 2_000_000

ContinuousEstimator = Literal["ksg", "lnc"]


# --------------------------------------------------------------------------- helpers
def _as_columns(X, n: int | None = None, what: str = "X") -> np.ndarray:
    x = np.asarray(X, dtype=np.float64)
    if x.ndim == 1:
        x = x[:, None]
    if x.ndim != 2:
        raise ValidationError(
            f"{what} must be 1-D or 2-D (samples × columns), got shape {x.shape}"
        )
    if n is not None and x.shape[0] != n:
        raise ValidationError(f"{what} has {x.shape[0]} samples but y has {n}")
    if np.isnan(x).any():
        raise ValidationError(f"{what} contains {int(np.isnan(x).sum())} NaN values")
    return x


def _as_vector(y, what: str = "y") -> np.ndarray:
    v = np.asarray(y, dtype=np.float64)
    if v.ndim != 1:
        raise ValidationError(f"{what} must be a 1-D vector, got shape {v.shape}")
    if np.isnan(v).any():
        raise ValidationError(f"{what} contains {int(np.isnan(v).sum())} NaN values")
    return v


def _is_binary(a: np.ndarray) -> bool:
    return bool(np.isin(a, (0.0, 1.0)).all())


def _check_binary(a: np.ndarray, what: str) -> None:
    if not _is_binary(a):
        bad = np.unique(a[~np.isin(a, (0.0, 1.0))])[:5]
        raise ValidationError(f"{what} must be binary 0/1, got values such as {list(bad)}")


def _check_neighbors(k: int, n: int) -> int:
    if not isinstance(k, int | np.integer) or k < 1:
        raise ValidationError(f"n_neighbors must be a positive integer, got {k!r}")
    if k >= n:
        raise ValidationError(f"n_neighbors={k} needs more than {k} samples, got {n}")
    return int(k)


def _blocks(n_columns: int, n_samples: int) -> Iterator[slice]:
    step = max(1, _BLOCK_ELEMENTS // max(1, n_samples * n_samples))
    for start in range(0, n_columns, step):
        yield slice(start, min(n_columns, start + step))


# --------------------------------------------------------------- binary × binary
class PluginMI:
    """Plug-in MI of fixed binary columns ``X`` against any binary vector, marginals cached.

    The 2×2 contingency table of column ``j`` with a vector ``x`` follows from three
    counts: ones in ``X[:, j]`` (cached), ones in ``x``, and co-occurrences
    ``X[:, j] @ x`` — one matrix-vector product for all columns. Then

    ``I = Σ_ab p_ab log(p_ab / (p_a p_b + 1e-15))`` over the cells with ``p_ab > 0``
    (nats), clipped at 0; the ``1e-15`` guard follows the mRMR reference code.

    When there are more columns than possible count pairs ``(n + 1)²``, the MI is
    evaluated once per pair and looked up (same element-wise operations, so the
    same values): a greedy step then costs one product plus ``O(n²)``.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns)
        Binary 0/1 columns.
    reference_rounding : bool
        Round as the mRMR reference code does: its score matrices are float32 and,
        under NumPy 1 casting rules, the columns' marginal frequencies and the
        products ``p_a p_b`` are float32. Values change by < 1e-6 (absolute), but
        near-exact ties of the greedy criterion are then decided as there.
    check : bool
        Validate shape and binarity.
    """

    def __init__(self, X, *, reference_rounding: bool = False, check: bool = True) -> None:
        if check:
            X = _as_columns(X)
            _check_binary(X, "X")
        n, p = np.shape(X)
        self.n = n
        self.reference_rounding = reference_rounding
        # 0/1 products are exact in float32 and twice as fast as in float64
        self._xt = np.ascontiguousarray(np.asarray(X, dtype=np.float32).T)
        self._s1 = self._xt.sum(axis=1, dtype=np.float64)
        self._lookup = p > (n + 1) ** 2
        if self._lookup:
            grid_s1, self._grid_s11 = np.divmod(np.arange((n + 1) ** 2, dtype=np.float64), n + 1)
            self._marg = self._marginals(grid_s1)
            self._base = self._s1.astype(np.intp) * (n + 1)
        else:
            self._marg = self._marginals(self._s1)

    def _marginals(self, s1: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if self.reference_rounding:
            p1_1 = s1.astype(np.float32) / np.float32(self.n)
            return p1_1, np.float32(1.0) - p1_1, p1_1.astype(np.float64)
        p1_1 = s1 / self.n
        return p1_1, 1.0 - p1_1, p1_1

    def column(self, j: int) -> np.ndarray:
        """MI of every column with column ``j``."""
        return self(self._xt[j])

    def __call__(self, x) -> np.ndarray:
        """MI of every column with the binary vector ``x`` (length n_samples)."""
        x = np.asarray(x, dtype=np.float32)
        # einsum, not BLAS: a threaded gemv this small is up to 20x slower on a busy machine
        s11 = np.einsum("ij,j->i", self._xt, x).astype(np.float64)
        s2 = float(x.sum(dtype=np.float64))
        if self._lookup:
            table = self._from_counts(self._grid_s11, s2)
            return table[self._base + s11.astype(np.intp)]
        return self._from_counts(s11, s2)

    def _from_counts(self, s11: np.ndarray, s2: float) -> np.ndarray:
        n = self.n
        p1_1, p1_0, p1_1_64 = self._marg
        p2_1 = s2 / n
        p2_0 = 1.0 - p2_1
        p_11 = s11 / n
        p_01 = p2_1 - p_11
        p_10 = p1_1_64 - p_11
        guard = 1e-15
        if self.reference_rounding:
            # NumPy 1 float32-array ⊗ float64-scalar arithmetic (the scalar is cast to
            # float32); array ⊗ array operations promote to float64 as usual.
            f32 = np.float32
            p_00 = (p1_0 - f32(p2_1)).astype(np.float64) + p_11
            q = (p1_0 * f32(p2_0), p1_0 * f32(p2_1), p1_1 * f32(p2_0), p1_1 * f32(p2_1))
            q = tuple((v + f32(guard)).astype(np.float64) for v in q)
        else:
            p_00 = 1.0 - p1_1 - p2_1 + p_11
            q = (p1_0 * p2_0 + guard, p1_0 * p2_1 + guard, p1_1 * p2_0 + guard,
                 p1_1 * p2_1 + guard)
        mi = np.zeros(s11.shape[0])
        with np.errstate(divide="ignore", invalid="ignore"):
            for p_ab, q_ab in zip((p_00, p_01, p_10, p_11), q, strict=True):
                mi += np.where(p_ab > 0, p_ab * np.log(p_ab / q_ab), 0.0)
        return np.maximum(mi, 0.0)


def binary_mi(X, x, *, reference_rounding: bool = False) -> np.ndarray:
    """Plug-in MI between every binary column of ``X`` and one binary vector ``x``.

    See :class:`PluginMI` (which caches the columns' marginals for repeated calls).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns) or (n_samples,)
        Binary 0/1 columns.
    x : array-like of shape (n_samples,)
        Binary 0/1 vector.
    reference_rounding : bool
        Reproduce the float32 rounding of the mRMR reference code (:class:`PluginMI`).

    Returns
    -------
    ndarray of shape (n_columns,)
    """
    x = _as_vector(x, "x")
    X = _as_columns(X, len(x))
    _check_binary(X, "X")
    _check_binary(x, "x")
    return PluginMI(X, reference_rounding=reference_rounding, check=False)(x)


# ------------------------------------------------------------ binary × continuous
def ross_mi(X, y, *, n_neighbors: int = BINARY_NEIGHBORS) -> np.ndarray:
    """Ross (2014) k-NN MI between every binary column of ``X`` and a continuous ``y``.

    For sample ``i`` of class ``c = X[i, j]``: ``d_i`` is the distance from ``y_i``
    to its k-th nearest neighbour among the other samples of class ``c`` and
    ``m_i`` the number of samples of either class strictly closer than ``d_i``
    (``i`` included). Then (Ross 2014, eq. 2)

    ``I = ψ(n) − ⟨ψ(n_c)⟩ + ψ(k) − ⟨ψ(m)⟩``, clipped at 0,

    with ``⟨ψ(n_c)⟩ = (n_0 ψ(n_0) + n_1 ψ(n_1)) / n``. A column with fewer than
    ``k + 1`` samples in one class gets 0 (as in the mRMR reference code; scikit-learn
    would lower ``k`` for that class instead).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns) or (n_samples,)
        Binary 0/1 columns.
    y : array-like of shape (n_samples,)
        Continuous vector.
    n_neighbors : int
        ``k``.

    Returns
    -------
    ndarray of shape (n_columns,)

    Notes
    -----
    "Strictly closer" is the reference code's ball of radius ``d_i − 1e-15``
    (distances compared squared, as SciPy's KD-tree does), which also treats
    distances within 1e-15 of ``d_i`` (float64 rounding of equal score gaps) as ties;
    where ``|y|`` is so large that ``d_i − 1e-15 == d_i``, a strict ``< d_i`` is used,
    which is scikit-learn's ``nextafter(d_i, 0)``. Cost ``O(n² · n_columns)`` time,
    computed in blocks of columns.
    """
    y = _as_vector(y)
    X = _as_columns(X, len(y))
    _check_binary(X, "X")
    n = len(y)
    k = _check_neighbors(n_neighbors, n)
    labels = X.T.astype(bool)  # (p, n)
    n1 = labels.sum(axis=1)
    n0 = n - n1
    out = np.zeros(labels.shape[0])
    ok = (n0 >= k + 1) & (n1 >= k + 1)
    if not ok.any():
        return out
    dist = np.abs(y[:, None] - y[None, :])
    order = np.argsort(dist, axis=1, kind="stable")
    sorted_dist = np.take_along_axis(dist, order, axis=1)  # row i: distances from y_i, ascending
    sorted_sq = sorted_dist**2
    rows = np.arange(n)
    const_n = digamma(n)
    const_k = digamma(k)
    cols = np.flatnonzero(ok)
    for block in _blocks(len(cols), n):
        c = cols[block]
        lab = labels[c]  # (b, n)
        # same[b, i, r]: is the r-th nearest sample to i in i's class (i itself is r = 0)?
        same = lab[:, order] == lab[:, :, None]
        # the (k+1)-th same-class sample in distance order (i itself counts once) is at
        # distance d_i = k-th nearest other same-class sample.
        reach = np.cumsum(same, axis=2, dtype=np.int32) >= k + 1
        pos = np.argmax(reach, axis=2)
        d = sorted_dist[rows[None, :], pos]
        radius = d - 1e-15
        m = (sorted_sq[None, :, :] <= (radius**2)[:, :, None]).sum(axis=2)
        coarse = radius == d  # |y| so large that the 1e-15 margin is lost in rounding
        if coarse.any():
            strict = (sorted_dist[None, :, :] < d[:, :, None]).sum(axis=2)
            m = np.where(coarse, strict, m)
        c0, c1 = n0[c], n1[c]
        avg_psi_nc = (c0 * digamma(c0) + c1 * digamma(c1)) / n
        mi = const_n - avg_psi_nc + const_k - digamma(m).mean(axis=1)
        out[c] = np.maximum(mi, 0.0)
    return out


# -------------------------------------------------------- continuous × continuous
def ksg_mi(X, y, *, n_neighbors: int = CONTINUOUS_NEIGHBORS) -> np.ndarray:
    """KSG estimator 1 (Kraskov et al. 2004, eq. 8) between every column of ``X`` and ``y``.

    With ``ε_i`` the max-norm distance from ``(x_i, y_i)`` to its k-th nearest
    neighbour and ``n_x,i``/``n_y,i`` the numbers of other samples strictly within
    ``ε_i`` in each marginal,

    ``I = ψ(k) + ψ(n) − ⟨ψ(n_x + 1) + ψ(n_y + 1)⟩``, clipped at 0.

    Equals scikit-learn's ``_compute_mi_cc`` (the noise-free core of
    ``mutual_info_regression``).

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns) or (n_samples,)
    y : array-like of shape (n_samples,)
    n_neighbors : int
        ``k``.

    Returns
    -------
    ndarray of shape (n_columns,)

    Notes
    -----
    ``O(n² · n_columns)`` time and ``O(n²)`` memory per column (blocks of columns).
    """
    y = _as_vector(y)
    X = _as_columns(X, len(y))
    n = len(y)
    k = _check_neighbors(n_neighbors, n)
    dy = np.abs(y[:, None] - y[None, :])
    out = np.empty(X.shape[1])
    for block in _blocks(X.shape[1], n):
        xb = X[:, block].T  # (b, n)
        dx = np.abs(xb[:, :, None] - xb[:, None, :])
        joint = np.maximum(dx, dy[None])
        idx = np.arange(n)
        joint[:, idx, idx] = np.inf  # a sample is not its own neighbour
        eps = np.partition(joint, k - 1, axis=2)[:, :, k - 1]
        radius = np.nextafter(eps, 0.0)[:, :, None]
        nx = (dx <= radius).sum(axis=2) - 1
        ny = (dy[None] <= radius).sum(axis=2) - 1
        mi = digamma(n) + digamma(k) - digamma(nx + 1).mean(axis=1) - digamma(ny + 1).mean(axis=1)
        out[block] = np.maximum(mi, 0.0)
    return out


def _jitter(n: int, stream: int, scale: float) -> np.ndarray:
    # Fixed streams (0 for the columns, 1 for y) as in the mRMR reference code, so the
    # estimate is deterministic and identical columns get identical values.
    return scale * np.random.default_rng(stream).standard_normal(n)


def lnc_mi(X, y, *, n_neighbors: int = CONTINUOUS_NEIGHBORS, alpha: float = 0.25,
           jitter: float = 1e-10) -> np.ndarray:
    """KSG with the PCA local non-uniformity correction (LNC) of Gao et al. (2015).

    KSG assumes the joint density is uniform in each max-norm k-NN box, which
    underestimates the MI of strongly dependent variables. LNC compares, at each
    sample, the volume of the k-NN box with the volume of the box aligned with the
    principal axes of its k neighbours (``V̄``); where ``V̄ / V < α`` the local term
    ``log(V / V̄)`` is added (Gao et al. 2015, Algorithm 1):

    ``I_LNC = I_KSG + (1/n) Σ_i 1[V̄_i / V_i < α] · log(V_i / V̄_i)``, clipped at 0.

    The KSG part uses radius ``ε_i − 1e-15`` and ``n_x, n_y ≥ 1`` as the mRMR
    reference code does, after adding ``jitter``-scaled Gaussian noise from fixed
    streams to break ties.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns) or (n_samples,)
    y : array-like of shape (n_samples,)
    n_neighbors : int
        ``k``.
    alpha : float
        Non-uniformity threshold ``α`` in (0, 1).
    jitter : float
        Scale of the tie-breaking noise (0 disables it).

    Returns
    -------
    ndarray of shape (n_columns,)

    Notes
    -----
    ``O(n² · n_columns)`` time plus one 2×2 eigen-decomposition per sample and column.
    """
    y = _as_vector(y)
    X = _as_columns(X, len(y))
    n = len(y)
    k = _check_neighbors(n_neighbors, n)
    if not 0 < alpha < 1:
        raise ValidationError(f"alpha must be in (0, 1), got {alpha}")
    yj = y + _jitter(n, 1, jitter)
    xj_noise = _jitter(n, 0, jitter)
    dy = np.abs(yj[:, None] - yj[None, :])
    log_alpha = np.log(alpha)
    out = np.empty(X.shape[1])
    for block in _blocks(X.shape[1], n):
        xb = X[:, block].T + xj_noise[None, :]  # (b, n)
        b = xb.shape[0]
        dx = np.abs(xb[:, :, None] - xb[:, None, :])
        joint = np.maximum(dx, dy[None])
        # k+1 nearest in max norm, the sample itself first (distance 0)
        nbr = np.argsort(joint, axis=2, kind="stable")[:, :, : k + 1]
        eps = np.take_along_axis(joint, nbr[:, :, -1:], axis=2)
        r = np.maximum(eps - 1e-15, 0.0)
        nx = np.maximum((dx <= r).sum(axis=2) - 1, 1)
        ny = np.maximum((dy[None] <= r).sum(axis=2) - 1, 1)
        mi_ksg = digamma(k) + digamma(n) - (digamma(nx + 1) + digamma(ny + 1)).mean(axis=1)
        # neighbourhoods centred on each sample: (b, n, k+1, 2)
        px = np.take_along_axis(xb[:, None, :].repeat(n, axis=1), nbr, axis=2)
        py = yj[nbr]
        cen = np.stack([px - xb[:, :, None], py - yj[None, :, None]], axis=3)
        log_rect = np.log(np.maximum(np.abs(cen).max(axis=2), 1e-15)).sum(axis=2)
        nb = cen[:, :, 1:, :]
        cov = np.einsum("bnki,bnkj->bnij", nb, nb) / k
        _, vecs = np.linalg.eigh(cov.reshape(b * n, 2, 2))
        proj = np.einsum("bnki,bnij->bnkj", cen, vecs.reshape(b, n, 2, 2))
        log_pca = np.log(np.maximum(np.abs(proj).max(axis=2), 1e-30)).sum(axis=2)
        corr = np.where(log_pca < log_rect + log_alpha, log_rect - log_pca, 0.0)
        out[block] = np.maximum(mi_ksg + corr.sum(axis=1) / n, 0.0)
    return out


# ------------------------------------------------------------------ dispatcher
def mutual_info(X, y, *, n_neighbors: int | None = None,
                continuous: ContinuousEstimator = "lnc") -> np.ndarray:
    """MI between every column of ``X`` and ``y``, with the estimator chosen by data type.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_columns) or (n_samples,)
    y : array-like of shape (n_samples,)
    n_neighbors : int, optional
        k of the k-NN estimators; default 5 for binary columns (Ross), 8 for
        continuous ones (KSG/LNC). Unused by the plug-in estimator.
    continuous : {"lnc", "ksg"}
        Estimator for continuous columns.

    Returns
    -------
    ndarray of shape (n_columns,)
        MI in nats: plug-in (both binary), :func:`ross_mi` (binary columns,
        continuous ``y``), :func:`ksg_mi`/:func:`lnc_mi` otherwise. A binary ``y``
        with continuous columns uses Ross with the roles swapped.
    """
    y = _as_vector(y)
    X = _as_columns(X, len(y))
    x_bin, y_bin = _is_binary(X), _is_binary(y)
    if x_bin and y_bin:
        return binary_mi(X, y)
    if x_bin or (y_bin and X.shape[1] == 1):
        if x_bin:
            return ross_mi(X, y, n_neighbors=n_neighbors or BINARY_NEIGHBORS)
        return ross_mi(y, X[:, 0], n_neighbors=n_neighbors or BINARY_NEIGHBORS)
    if y_bin:
        k = n_neighbors or BINARY_NEIGHBORS
        return np.array([ross_mi(y, X[:, j], n_neighbors=k)[0] for j in range(X.shape[1])])
    if continuous == "ksg":
        return ksg_mi(X, y, n_neighbors=n_neighbors or CONTINUOUS_NEIGHBORS)
    if continuous == "lnc":
        return lnc_mi(X, y, n_neighbors=n_neighbors or CONTINUOUS_NEIGHBORS)
    raise ValidationError(f"continuous must be 'lnc' or 'ksg', got {continuous!r}")
