"""The compiler's CUDA kernels (``logdens.compiler.emit_cuda``) against the CPU
engine, run in numba's CUDA simulator by ``tests/test_compiler_cuda.py``.

``python tests/compiler_cuda_checks.py GROUP`` prints one JSON object: under
``"compare"``, for each case of the group, the largest difference relative
to ``max(1, |reference|)`` of the new kernels' value and gradient of K = 3
points (with and without the Jacobian), their value alone, the pointwise
log-likelihood and the per-sample gradient rows (on the device where the
module has their kernel, else on the CPU), against the CPU engine's compiled module, and of their
value and gradient against the engine's own CUDA kernels; under
``"not_lowered"``, the cases the compiler does not lower yet, with the
reason. ``--ptx CASE ...`` (no simulator): each case's new kernels compiled
to PTX (``cuda_checks.compile_ptx``'s signatures).
"""

import json
import os
import sys

import numpy as np

import logdens as ld

sys.path.insert(0, os.path.dirname(__file__))
import cuda_checks  # noqa: E402
import test_compiler  # noqa: E402

from logdens.compiler import NotLowered  # noqa: E402

POINTS = 3


def linear_sums():
    """Sums used linearly (each thread adds its rows' part of them), a scalar inside one."""
    m = ld.Model()
    x, s = m.param("x", ld.Normal(0, 1), shape=6), m.param("s", ld.HalfNormal(1))
    m.potential("p", 0.5 * ld.sum(ld.exp(-x)) - 0.1 * ld.sum(x * s))
    return m, None


def mixed_sums():
    """One scalar's adjoint added to by the threads' parts of a spread sum and by
    the first thread's sweep of a sum read non-linearly (on that thread)."""
    m = ld.Model()
    x, s = m.param("x", ld.Normal(0, 1), shape=6), m.param("s", ld.HalfNormal(1))
    m.potential("p", ld.sum(x * s) - ld.square(ld.sum(ld.exp(-s * x))))
    return m, None


_ENGINE = ("poisson", "normal", "potential", "logistic", "hierarchical")
CASES = {**{name: cuda_checks.CASES[name] for name in _ENGINE},
         **{name: (lambda build=test_compiler.MODELS[name]: (build(), None))
            for name in ("eight_schools", "positions", "sums", "bounded")},
         **{name: cuda_checks.CASES[name] for name in ("transforms", "repeated_indices", "reductions", "running_sums",
                                                       "scalars", "expression_bounds", "outside_support")},
         **{f"random_{k}": cuda_checks.CASES[f"random_{k}"] for k in range(4)},
         "linear_sums": linear_sums, "mixed_sums": mixed_sums}
#: Cases compared with their data stored as float32 on the device too, against the engine's kernels.
FLOAT32 = ("hierarchical", "transforms")
#: The cases by simulator process, each at most about 45 s of CPU time with empty caches
#: (numba compiling each case's CPU module is most of it; 29 s for ``regressions``).
GROUPS = {"regressions": list(_ENGINE) + ["eight_schools", "bounded"],
          "random_expressions": [f"random_{k}" for k in range(4)],
          "positions": ["positions", "transforms", "repeated_indices", "sums", "linear_sums", "mixed_sums"],
          "reductions": ["reductions", "running_sums", "scalars", "expression_bounds", "outside_support"]}


def _rel(got, want):
    """Largest ``|got - want| / max(1, |want|)`` (0 where both are the same infinity)."""
    got, want = np.atleast_1d(np.asarray(got, float)), np.atleast_1d(np.asarray(want, float))
    same = got == want
    if np.all(same):
        return 0.0
    if not (np.all(np.isfinite(got[~same])) and np.all(np.isfinite(want[~same]))):
        return float("inf")
    return float(np.max(np.abs(got - want) / np.maximum(1.0, np.abs(want))))


def compare(name):
    """The largest relative differences of case ``name`` (see the module docstring)."""
    from logdens.compiler.emit_cuda import cuda_density
    m, _ = CASES[name]()
    cpu = m.compile()
    new = cuda_density(m)
    thetas = np.random.default_rng(0).normal(0.0, 0.5, (POINTS, cpu.dim))
    out = {}
    for jacobian in (True, False):
        (lp_n, g_n), (lp_c, g_c) = (d.log_density_gradient_batch(thetas, jacobian=jacobian) for d in (new, cpu))
        finite = np.isfinite(lp_c)
        out[f"lp jacobian={jacobian}"] = _rel(lp_n, lp_c)
        out[f"grad jacobian={jacobian}"] = _rel(g_n[finite], g_c[finite])
        out[f"value jacobian={jacobian}"] = _rel(new.log_density_batch(thetas, jacobian=jacobian), lp_c)
    pointwise = new.pointwise_log_likelihood(thetas[0])
    for term, values in cpu.pointwise_log_likelihood(thetas[0]).items():
        out[f"pointwise {term}"] = _rel(pointwise[term], values)
        out[f"per-sample {term}"] = _rel(new.per_sample_gradient(thetas[0], term),
                                         cpu.per_sample_gradient(thetas[0], term))
    lp_e, g_e = m.compile(backend="cuda").log_density_gradient_batch(thetas)
    lp_n, g_n = new.log_density_gradient_batch(thetas)
    finite = np.isfinite(lp_e)
    out["engine cuda lp"], out["engine cuda grad"] = _rel(lp_n, lp_e), _rel(g_n[finite], g_e[finite])
    new._grid = lambda k, rows: ((3, k), 4)  # rows over three blocks of four threads: block sums and atomics meet
    lp_b, g_b = new.log_density_gradient_batch(thetas)
    out["3 blocks lp"], out["3 blocks grad"] = _rel(lp_b, lp_e), _rel(g_b[finite], g_e[finite])
    if name in FLOAT32:  # the data stored as float32 on the device, read as float64
        (lp_n, g_n), (lp_e, g_e) = (d.log_density_gradient_batch(thetas) for d in (
            cuda_density(m, dtype=np.float32), m.compile(backend="cuda", dtype=np.float32)))
        out["float32 lp"], out["float32 grad"] = _rel(lp_n, lp_e), _rel(g_n[finite], g_e[finite])
    return out


def compile_ptx(name):
    """Case ``name``'s new kernels compiled to PTX for sm_90 (no device): their names."""
    import inspect

    from numba import cuda, types
    from numba.cuda import dispatcher

    from logdens import cache, engine
    from logdens.compiler.emit_cuda import source

    class Device:  # the compute capability numba-cuda asks the current device for
        compute_capability = (9, 0)
    dispatcher.get_current_device = Device
    arguments = {"sums": types.float64[::1], "lps": types.float64[::1], "jacobian": types.boolean,
                 "dropped": types.boolean, "fdata": types.float64[::1], "idata": types.int64[::1]}
    module = cache.load(source(*engine.lower(CASES[name]()[0])))
    names = [k for k, v in vars(module).items() if type(v).__name__ == "CUDADispatcher" and k != "block_add"]
    for kernel in names:
        fn = getattr(module, kernel).py_func
        out = types.float64[:, ::1] if kernel.startswith("per_sample") else types.float64[::1]  # rows, or values
        signature = tuple(arguments.get(a, out if a == "out" else types.float64[:, ::1])
                          for a in inspect.signature(fn).parameters)
        cuda.compile_ptx(fn, signature, cc=(9, 0))
    return names


def main(args):
    if args[:1] == ["--ptx"]:
        print(json.dumps({name: compile_ptx(name) for name in args[1:] or CASES}))
        return
    result = {"compare": {}, "not_lowered": {}}
    for name in (n for group in args for n in GROUPS.get(group, [group])):
        try:
            result["compare"][name] = compare(name)
        except NotLowered as e:
            result["not_lowered"][name] = str(e)
    print(json.dumps(result))


if __name__ == "__main__":
    main(sys.argv[1:])
