"""Eigendecomposition of a symmetric matrix in numba, without LAPACK.

Householder reduction to tridiagonal form, then the implicit QL algorithm
with shifts (EISPACK's ``tred2`` and ``tql2``, as in JAMA), written anew.
Why not ``np.linalg.eigh``: the low-rank metric (:mod:`samplers.low_rank`)
decomposes matrices of up to a few hundred rows while chains run on
threads, and a multi-threaded BLAS called from every chain's thread
oversubscribes the cores (on a loaded two-core machine a 100 x 100 ``eigh``
took 0.6 s instead of 6 ms).  This runs on the calling thread only, with
no GIL, and gives the same result whatever the machine's BLAS.
"""

import math

from numba import njit

#: Options: cached, no GIL (chains run on threads), numpy's error model.
OPTIONS = dict(cache=True, nogil=True, error_model="numpy")


@njit(**OPTIONS)
def _tridiagonalize(v, d, e):
    """Householder reduction of the symmetric ``v`` (overwritten by the
    orthogonal transform) to the tridiagonal matrix with diagonal ``d`` and
    subdiagonal ``e[1:]`` (EISPACK ``tred2``)."""
    n = v.shape[0]
    for j in range(n):
        d[j] = v[n - 1, j]
    for i in range(n - 1, 0, -1):
        scale, h = 0.0, 0.0
        for k in range(i):
            scale += abs(d[k])
        if scale == 0.0:
            e[i] = d[i - 1]
            for j in range(i):
                d[j] = v[i - 1, j]
                v[i, j] = 0.0
                v[j, i] = 0.0
        else:
            for k in range(i):
                d[k] /= scale
                h += d[k] * d[k]
            f = d[i - 1]
            g = math.sqrt(h)
            if f > 0:
                g = -g
            e[i] = scale * g
            h -= f * g
            d[i - 1] = f - g
            for j in range(i):
                e[j] = 0.0
            for j in range(i):
                f = d[j]
                v[j, i] = f
                g = e[j] + v[j, j] * f
                for k in range(j + 1, i):
                    g += v[k, j] * d[k]
                    e[k] += v[k, j] * f
                e[j] = g
            f = 0.0
            for j in range(i):
                e[j] /= h
                f += e[j] * d[j]
            hh = f / (h + h)
            for j in range(i):
                e[j] -= hh * d[j]
            for j in range(i):
                f, g = d[j], e[j]
                for k in range(j, i):
                    v[k, j] -= f * e[k] + g * d[k]
                d[j] = v[i - 1, j]
                v[i, j] = 0.0
        d[i] = h
    _accumulate(v, d)
    e[0] = 0.0


@njit(**OPTIONS)
def _accumulate(v, d):
    """The Householder transformations of :func:`_tridiagonalize`, accumulated in ``v``."""
    n = v.shape[0]
    for i in range(n - 1):
        v[n - 1, i] = v[i, i]
        v[i, i] = 1.0
        h = d[i + 1]
        if h != 0.0:
            for k in range(i + 1):
                d[k] = v[k, i + 1] / h
            for j in range(i + 1):
                g = 0.0
                for k in range(i + 1):
                    g += v[k, i + 1] * v[k, j]
                for k in range(i + 1):
                    v[k, j] -= g * d[k]
        for k in range(i + 1):
            v[k, i + 1] = 0.0
    for j in range(n):
        d[j] = v[n - 1, j]
        v[n - 1, j] = 0.0
    v[n - 1, n - 1] = 1.0


@njit(**OPTIONS)
def _ql(v, d, e):
    """Diagonalize the tridiagonal ``(d, e)`` by implicit QL with shifts,
    rotating the rows of ``v`` (the transposed transform: rows are
    contiguous; EISPACK ``tql2``)."""
    n = v.shape[0]
    for i in range(1, n):
        e[i - 1] = e[i]
    e[n - 1] = 0.0
    f, tst1, eps = 0.0, 0.0, 2.0 ** -52
    for l in range(n):
        tst1 = max(tst1, abs(d[l]) + abs(e[l]))
        m = l
        while m < n - 1 and abs(e[m]) > eps * tst1:
            m += 1
        if m > l:
            for _ in range(100):  # converges in a few; the cap guards against NaN
                g = d[l]
                p = (d[l + 1] - g) / (2.0 * e[l])
                r = math.hypot(p, 1.0)
                if p < 0:
                    r = -r
                d[l] = e[l] / (p + r)
                d[l + 1] = e[l] * (p + r)
                dl1 = d[l + 1]
                h = g - d[l]
                for i in range(l + 2, n):
                    d[i] -= h
                f += h
                p = d[m]
                c = c2 = c3 = 1.0
                el1 = e[l + 1]
                s = s2 = 0.0
                for i in range(m - 1, l - 1, -1):
                    c3, c2, s2 = c2, c, s
                    g, h = c * e[i], c * p
                    r = math.hypot(p, e[i])
                    e[i + 1] = s * r
                    s, c = e[i] / r, p / r
                    p = c * d[i] - s * g
                    d[i + 1] = h + s * (c * g + s * d[i])
                    for k in range(n):
                        h = v[i + 1, k]
                        v[i + 1, k] = s * v[i, k] + c * h
                        v[i, k] = c * v[i, k] - s * h
                p = -s * s2 * c3 * el1 * e[l] / dl1
                e[l], d[l] = s * p, c * p
                if not abs(e[l]) > eps * tst1:
                    break
        d[l] += f
        e[l] = 0.0


@njit(**OPTIONS)
def _sort(v, d):
    """Eigenvalues ascending, their vectors (rows of ``v``) with them."""
    n = d.shape[0]
    for i in range(n - 1):
        k, p = i, d[i]
        for j in range(i + 1, n):
            if d[j] < p:
                k, p = j, d[j]
        if k != i:
            d[k], d[i] = d[i], p
            for j in range(n):
                v[i, j], v[k, j] = v[k, j], v[i, j]


@njit(**OPTIONS)
def eigh(a, vals, vecs):
    """Eigenvalues (ascending) of the symmetric ``a`` into ``vals`` and
    orthonormal eigenvectors into the columns of ``vecs`` (``a`` is read only;
    its lower triangle is used).  Returns False, with the outputs unspecified,
    when ``a`` is not finite.

    Parameters
    ----------
    a, vecs : ndarray, shape (n, n)
    vals : ndarray, shape (n,)
    """
    n = a.shape[0]
    for i in range(n):
        for j in range(i + 1):
            if not math.isfinite(a[i, j]):
                return False
            vecs[i, j] = vecs[j, i] = a[i, j]
    if n == 0:
        return True
    e = vals.copy()
    _tridiagonalize(vecs, vals, e)
    rows = vecs.T.copy()  # eigenvectors as rows while QL rotates them
    _ql(rows, vals, e)
    _sort(rows, vals)
    vecs[:, :] = rows.T
    return True
