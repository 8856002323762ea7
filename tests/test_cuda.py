"""The CUDA backend against the CPU backend: every case of ``cuda_checks`` in
numba's CUDA simulator against the Python twin (a process per group of
cases, ``cuda_checks.GROUPS``: the simulator is chosen when numba is
imported), and against the CPU on a real device when one is present (marker
``gpu``, skipped without one).

Tolerance: 1e-10 relative to the largest entry. The device sums rows in
another order (per thread, then per block, then atomically), so results
differ from the CPU's in the last bits; 1e-10 leaves room for the
cancellation in these models' sums and still catches any wrong term.
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import logdens as ld
from logdens.cuda_source import CudaUnsupported

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
import cuda_checks  # noqa: E402
from simulator import LIMIT, run_simulated  # noqa: E402

TOLERANCE = 1e-10
SCRIPT = os.path.join(HERE, "cuda_checks.py")


def test_every_check_is_in_one_simulated_group():
    assert sorted(check for group in cuda_checks.GROUPS.values() for check in group) == sorted(cuda_checks.CHECKS)


def test_a_case_is_the_same_model_whichever_cases_were_built_before():
    """And so the same generated source, a disk-cache hit in the next run: the
    scan's initial variance, drawn from a generator all cases shared, made
    ``scans`` a new model in every process (40 s of compiling each run)."""
    first = {name: str(build()[0]) for name, build in cuda_checks.CASES.items()}
    assert {name: str(build()[0]) for name, build in reversed(cuda_checks.CASES.items())} == first


@pytest.mark.parametrize("group", [pytest.param(g, marks=pytest.mark.slow) if g in cuda_checks.SLOW else g
                                   for g in cuda_checks.GROUPS])
def test_simulated_kernels_agree_with_the_python_twin(group):
    compared = run_simulated(SCRIPT, group)["compare"]
    failed = {check: d for check, d in compared.items() if not d or any(v > TOLERANCE for v in d.values())}
    assert sorted(compared) == sorted(cuda_checks.GROUPS[group]) and not failed, failed


@pytest.mark.parametrize("script, limit, message", [
    ("import time; time.sleep(60)", 1, r"simulator subprocess timed out after \d+ s \(limit 1 s\): -c import time"),
    ("import sys; sys.exit('broken')", LIMIT, r"simulator subprocess -c import sys.* exited with status 1:\nbroken"),
])
def test_a_simulator_process_that_runs_too_long_or_fails_fails_its_test(script, limit, message):
    """A timeout is reported as one, not as an assertion or an error of every
    test of a module fixture (a loaded machine passed the old fixture's 600 s)."""
    with pytest.raises(pytest.fail.Exception, match=message):
        run_simulated("-c", script, limit=limit)


def _check_float32_facts(facts):
    """``cuda_checks.float32_storage``'s facts are what ``dtype=np.float32`` promises."""
    assert facts["dtypes"] == facts["dtypes after set_data"] == ["float32", "int32"]
    assert facts["float64 dtypes"] == ["float64", "int64"]
    assert facts["differs from float64"] > 1e-12  # x is not float32 numbers: the storage really is float32
    assert facts["host data rounded"] and facts["unchanged after the error"] == 0.0
    assert re.fullmatch(r"data 'x': x\[3\]=1e\+39 overflows float32 .*", facts["set_data error"])
    assert re.fullmatch(r"data 'y': y\[2\]=5e\+38 overflows float32 .*", facts["compile error"])


def test_simulated_float32_storage():
    _check_float32_facts(run_simulated(SCRIPT, "float32_storage")["float32"])


def _real_device():
    from numba import config, cuda
    return not config.ENABLE_CUDASIM and cuda.is_available()


@pytest.mark.gpu
@pytest.mark.skipif(not _real_device(), reason="no CUDA device")
@pytest.mark.parametrize("case", sorted(cuda_checks.CHECKS))
def test_device_kernels_agree_with_the_cpu(case):
    differences = cuda_checks.compare(case)
    assert all(v <= TOLERANCE for v in differences.values()), differences


@pytest.mark.gpu
@pytest.mark.skipif(not _real_device(), reason="no CUDA device")
def test_device_float32_storage():
    _check_float32_facts(cuda_checks.float32_storage())


@pytest.mark.parametrize("backend, dtype, message", [
    ("cpu", np.float32, r"dtype=<class 'numpy.float32'>: only backend='cuda' takes a dtype \(float64 or float32\)"),
    ("python", "float64", r"dtype='float64': only backend='cuda' takes a dtype"),
    ("cuda", np.float16, r"dtype=<class 'numpy.float16'>: the data's dtype on the device must be float64 .* or float32"),
    ("cuda", int, r"dtype=<class 'int'>: the data's dtype on the device must be float64 .* or float32"),
    ("cuda", "double precision", r"dtype='double precision': the data's dtype .* must be float64 .* or float32"),
])
def test_dtype_is_float64_or_float32_on_the_cuda_backend_only(backend, dtype, message):
    m = ld.Model()
    m.observe("y", ld.Normal(m.param("mu"), 1.0), np.zeros(3))
    with pytest.raises(ValueError, match=message):  # before compiling, with or without a device
        m.compile(backend=backend, dtype=dtype)


def test_index_data_are_int32_where_every_value_fits():
    from logdens.cuda_density import _narrow
    assert _narrow(np.array([0, 5, 2**31 - 1])).dtype == np.int32
    wide = np.array([0, 2**31])  # an offset past 2**31 floats: kept as int64
    assert _narrow(wide) is wide


def test_every_multivariate_density_runs_on_a_thread():
    """Their kernels are loops over one event (``shaped.THREAD_EVENT_KERNELS``, the
    cases ``mv_normal`` and ``mv_kernels``); a new one must be added there
    once its kernel compiles for a GPU thread (``cuda_checks.py --ptx``)."""
    from logdens.shaped import THREAD_EVENT_KERNELS
    assert THREAD_EVENT_KERNELS == {dist.spec.name for dist in ld.MULTIVARIATE}


def test_buffers_beyond_a_threads_local_memory_are_refused_by_name():
    """A Gaussian process of 300 inputs: its covariance alone is 300 x 300 floats
    (703 KiB) on each thread; 100 inputs fit (``linalg`` runs 6 and 14)."""
    from logdens import engine
    from logdens.cuda_source import generate_cuda_source

    def gp(n):
        m = ld.Model()
        alpha, rho = m.param("alpha", ld.HalfNormal(1)), m.param("rho", ld.HalfNormal(1))
        K = ld.add_diag(ld.gp.exp_quad(m.data("x", np.linspace(0, 1, n)), alpha, rho), 0.1)
        m.observe("y", ld.MvNormal(0.0, scale_tril=ld.cholesky(K)), np.zeros(n))
        return generate_cuda_source(*engine.lower(m.snapshot()))
    assert "cuda.local.array(10000, numba.float64)" in gp(100)
    with pytest.raises(CudaUnsupported, match=r"terms 'y': their buffers on a GPU thread take \d+ KiB \(the "
                                              r"largest 90000 floats\), beyond the 512 KiB"):
        gp(300)


def test_priors_over_matrices_are_vector_terms_on_the_gpu():
    """A term elementwise over one matrix (a weight prior) is lowered flattened,
    its elements spread over the point's threads; the network's likelihood
    keeps the lowering of values with shape, a row per thread."""
    from logdens import engine
    from logdens.cuda_source import generate_cuda_source
    m, _ = cuda_checks.CASES["mlp"]()
    source = generate_cuda_source(*engine.lower(m.snapshot()))
    assert "# term 'W1': W1 ~ Normal(0.0, 1.0)" in source
    assert re.search(r"for i\d+ in range\(row0, 12, rows_step\)", source)
    assert "# term 'Y' (values with shape)" in source


def test_running_sums_over_rows_of_data_are_refused():
    """Their workspace would have the data's run-time length; a parameter's
    running sums are on the device (the ``running_sums`` case)."""
    m = ld.Model()
    x = m.data("x", np.ones(4))
    m.observe("y", ld.Normal(ld.cumsum(m.param("a") * x), 1.0), np.zeros(4))
    with pytest.raises(CudaUnsupported, match=r"term 'y': running sums \(ld.cumsum\) over rows of data"):
        m.compile(backend="cuda")


@pytest.mark.skipif(_real_device(), reason="a CUDA device is present")
def test_no_device_is_a_clear_error():
    m = ld.Model()
    m.observe("y", ld.Normal(m.param("mu"), 1.0), np.zeros(3))
    with pytest.raises(RuntimeError, match="no CUDA device found.*cuda12"):
        m.compile(backend="cuda")


def test_kernels_sum_shared_adjoints_per_block():
    """The hierarchical Poisson model's kernels: the row loop grid-strided,
    scalar parameters' adjoints in thread-local sums and the group effects'
    scattered adjoints in the block's shared copy, each added to the
    gradient once per block."""
    from logdens.cuda_source import generate_cuda_source
    from logdens.layout import Layout
    m, _ = cuda_checks.CASES["hierarchical"]()
    model = m.snapshot()
    source = generate_cuda_source(model, Layout(model))
    terms = source[source.index("def terms("):source.index("def finish(")]
    assert "in range(row0, n_c_" in terms and "rows_step)" in terms
    assert "cuda.atomic.add(sh_z_2, k" in terms  # z[group]: into shared memory, row by row
    assert "cuda.atomic.add(grad, 2 + k, sh_z_2[k])" in terms  # then once per block
    assert "block_add(buffer, acc0, grad, 0)" in terms and "acc0 += " in terms  # mu: one add per block
    assert terms.count("cuda.atomic.add") == 2


SIMULATED_BUFFERS = """
import json
import numpy as np
import logdens as ld
m = ld.Model()
m.observe("y", ld.Normal(m.param("mu"), 1.0), np.zeros(3))
d = m.compile(backend="cuda")
for k in range(1, 9):
    d.log_density_gradient_batch(np.zeros((k, 1)))
print(json.dumps(sorted(d._buffers)))
"""


def test_a_sweep_over_batch_sizes_keeps_the_last_buffers_only():
    assert run_simulated("-c", SIMULATED_BUFFERS) == [[5, True], [6, True], [7, True], [8, True]]


def test_simulated_batch_beyond_one_launch():
    """More points than a grid holds go in several launches (``MAX_POINTS``)."""
    chunked = run_simulated(SCRIPT, "chunked_batch")["chunked"]
    assert chunked.pop("points per launch") == [2, 2, 1, 2, 2, 1]  # gradient, then value
    assert all(v <= TOLERANCE for v in chunked.values()), chunked


def test_launch_shapes():
    """Few points: blocks of 256 threads along the rows, enough to fill the
    device four times over; many points (where two blocks each would pass
    that): one block each, of the threads one wave holds (a power of two,
    at least a warp). Read on a device, not in the simulator (which runs
    up to 32 threads a block)."""
    from numba import config
    from logdens import cuda_density
    if config.ENABLE_CUDASIM:
        pytest.skip("the simulator's blocks are of 1 to 32 threads")
    density = cuda_density.CudaLogDensity.__new__(cuda_density.CudaLogDensity)
    sms = 132
    density._threads_wanted, density._resident = cuda_density.THREADS_PER_SM * sms, cuda_density.RESIDENT_PER_SM * sms
    shapes = {k: density._grid(k, 1000) for k in (1, 256, 2048, 2112, 4096, 10**4)}
    assert shapes == {1: ((4, 1), 256), 256: ((4, 256), 256), 2048: ((3, 2048), 256),
                      2112: ((1, 2112), 128), 4096: ((1, 4096), 64), 10**4: ((1, 10**4), 32)}
    assert density._grid(2112, 40) == ((1, 2112), 64)  # no more threads than rows want


def test_float32_data_that_would_become_zero_or_infinite_are_refused():
    """``dtype=np.float32`` clips nothing: a nonzero value below float32's
    smallest subnormal (1.4e-45) would be 0 on the device, one above 3.4e38 inf."""
    from logdens.cuda_density import _check_float32_range
    m = ld.Model()
    m.observe("y", ld.Gamma(2.0, m.param("rate", ld.HalfNormal(1))), np.ones(3))
    layout = m.compile().layout
    _check_float32_range(layout, {"y": np.array([1e-44, 1.0, 3e38])})  # both ends still held
    with pytest.raises(ValueError, match=r"data 'y': y\[1\]=1e-50 underflows float32 \(its range 1.4e-45 to"):
        _check_float32_range(layout, {"y": np.array([1.0, 1e-50, 0.0])})
    with pytest.raises(ValueError, match=r"data 'y': y\[2\]=-1e\+39 overflows float32"):
        _check_float32_range(layout, {"y": np.array([1.0, 0.0, -1e39])})


SIMULATED_SHARED_OUT = """
import numpy as np
from numba import cuda
import logdens as ld
m = ld.Model()
mu = m.param("mu")
m.observe("y", ld.Normal(mu + 0.1 * m.data("x", np.arange(4.0)), 1.0), np.zeros(4))
d = m.compile(backend="cuda")
said = []
theta = np.array([0.3])
rows = cuda.to_device(np.array([[0.3], [0.0], [0.0], [0.0]]))
for call in (lambda: d.log_density_gradient(theta, out=theta),
             lambda: d.per_sample_gradient(rows[0], "y", out=rows)):  # theta: a row of out, on the device
    try:
        call()
    except ValueError as error:
        said.append(str(error).split(",")[0])
d.set_data(x=np.arange(6.0), y=np.zeros(6))
print(said, d.per_sample_gradient(cuda.to_device(theta), "y", out=cuda.device_array((6, 1))).shape, rows[0, 0])
"""


def test_an_out_that_holds_theta_is_refused_on_the_device_too():
    """The CPU's rule (``density._checked_out``) for host arrays, a bounds test
    for device arrays: ``per_sample_gradient`` zeroed ``out``, theta's row
    with it, before its kernel read theta."""
    env = {**os.environ, "NUMBA_ENABLE_CUDASIM": "1"}
    result = subprocess.run([sys.executable, "-c", SIMULATED_SHARED_OUT], env=env, capture_output=True, text=True,
                            timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().splitlines()[-1] == ("['log_density_gradient: out shares memory with theta', "
                                                      "'per_sample_gradient: out shares memory with theta'] (6, 1) 0.3")
