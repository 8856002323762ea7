"""Cholesky kernels of ``logdens.linalg_kernels`` against LAPACK and JAX: the
forward, the reverse, and forward + reverse (what a gradient pays), at
n = 100 to 2000 on one core, in one run, as microseconds and ratios.

Run: python benchmarks/bench_cholesky.py [--quick] [--sizes 100,200,...]

Columns: ``fwd`` = ``cholesky_forward`` (into a caller's buffer), ``dpotrf``
= scipy's ``lapack.dpotrf`` on the same matrix (the LAPACK call the kernel
makes, plus scipy's copy), ``numpy`` = ``np.linalg.cholesky``, ``rev`` =
``cholesky_reverse``, ``both`` = the two in a row; JAX = ``jit(cholesky)``
and ``jit(grad(S -> sum(W * cholesky(S))))``, the latter against ``both``.
JAX is from the optional ``bench`` extra, skipped without it. Its factor and
gradient are checked against ours before they are timed (its gradient is of
the symmetrized input: ours, reading the lower triangle, is
tril(J + J^T) with J's diagonal, J being JAX's).
"""

import os

for _var in ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault("XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1")

import argparse  # noqa: E402

import numpy as np  # noqa: E402
from scipy.linalg import lapack  # noqa: E402

from bench_engine import median_time  # noqa: E402  (pins the process to one core)
from logdens import linalg_kernels as lk  # noqa: E402
from machine import describe  # noqa: E402


def problem(n, rng):
    """A covariance with eigenvalues in [0.01, 1] (a GP's kernel matrix plus
    jitter is of this kind) and weights W for f(S) = sum(W * L)."""
    q, _ = np.linalg.qr(rng.normal(size=(n, n)))
    S = (q * np.logspace(0, -2, n)) @ q.T
    return (S + S.T) / 2, np.tril(rng.normal(size=(n, n)))


def ours(S, W, budget):
    """Times of our kernels and LAPACK's, and our L and aS for the checks."""
    n = S.shape[0]
    flat, L, aS = S.ravel().copy(), np.empty(n * n), np.zeros(n * n)
    work, aL = np.empty(lk.cholesky_reverse_work(n)), W.ravel().copy()
    assert lk.cholesky_forward(flat, L, n)
    lk.cholesky_reverse(L, aL, aS, n, work)
    gradient = aS.reshape(n, n).copy()

    def both():
        lk.cholesky_forward(flat, L, n)
        lk.cholesky_reverse(L, aL, aS, n, work)

    fortran = np.asfortranarray(S)
    times = {"fwd": median_time(lambda: lk.cholesky_forward(flat, L, n), budget),
             "dpotrf": median_time(lambda: lapack.dpotrf(fortran, lower=1, clean=1), budget),
             "numpy": median_time(lambda: np.linalg.cholesky(S), budget),
             "rev": median_time(lambda: lk.cholesky_reverse(L, aL, aS, n, work), budget),
             "both": median_time(both, budget)}
    return times, L.reshape(n, n), gradient


def jax_times(S, W, L, gradient, budget):
    """JAX's jit(cholesky) and jit(grad) after checking both against ours;
    an empty dict without JAX."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:
        return {}
    jax.config.update("jax_enable_x64", True)
    chol = jax.jit(jnp.linalg.cholesky)
    Wj, Sj = jnp.asarray(W), jnp.asarray(S)
    grad = jax.jit(jax.grad(lambda s: jnp.sum(Wj * jnp.linalg.cholesky(s))))
    np.testing.assert_allclose(np.asarray(chol(Sj)), L, rtol=0, atol=1e-10 * np.abs(L).max())
    J = np.asarray(grad(Sj))
    theirs = np.tril(J + J.T) - np.diag(np.diag(J))
    np.testing.assert_allclose(theirs, gradient, rtol=0, atol=1e-8 * np.abs(gradient).max())
    return {"jax_chol": median_time(lambda: chol(Sj).block_until_ready(), budget),
            "jax_grad": median_time(lambda: grad(Sj).block_until_ready(), budget)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing budget")
    parser.add_argument("--sizes", default="100,200,500,1000,2000")
    args = parser.parse_args()
    budget = 0.3 if args.quick else 1.5
    rng = np.random.default_rng(20260601)
    print(describe("pinned to one core, BLAS single-threaded"))
    print("| n | fwd (us) | dpotrf | numpy | fwd / dpotrf | rev (us) | rev / dpotrf | both (us) "
          "| JAX chol | JAX chol / fwd | JAX grad | JAX grad / both |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in (int(size) for size in args.sizes.split(",")):
        S, W = problem(n, rng)
        t, L, gradient = ours(S, W, budget)
        t.update(jax_times(S, W, L, gradient, budget))
        t = {k: v * 1e6 for k, v in t.items()}
        jax = (f"{t['jax_chol']:.0f} | {t['jax_chol'] / t['fwd']:.2f} | {t['jax_grad']:.0f} | "
               f"{t['jax_grad'] / t['both']:.2f}") if "jax_chol" in t else "- | - | - | -"
        print(f"| {n} | {t['fwd']:.0f} | {t['dpotrf']:.0f} | {t['numpy']:.0f} | {t['fwd'] / t['dpotrf']:.2f} "
              f"| {t['rev']:.0f} | {t['rev'] / t['dpotrf']:.2f} | {t['both']:.0f} | {jax} |", flush=True)


if __name__ == "__main__":
    main()
