"""The compiler's GPU schedule (``logdens.compiler.gpu_schedule``) and CUDA
emitter (``emit_cuda``): how each program is placed on the threads, and the
kernels' value, gradient and pointwise rows against the CPU engine and the
engine's own CUDA kernels in numba's CUDA simulator
(``compiler_cuda_checks.py``, a process per group).

Tolerance 1e-12 relative to ``max(1, |reference|)``: the same arithmetic,
the rows summed in another order (per thread, per block, atomically), so
rounding only (measured: below 1e-15).
"""

import os
import re
import subprocess
import sys

import numpy as np
import pytest

import logdens as ld
from logdens import engine
from logdens.compiler import gradient_program, ir
from logdens.compiler.emit_cuda import NotOnDevice, source
from logdens.compiler.gpu_schedule import First, GridAdd, Spread, stages, unwrapped
from logdens.cuda_source import generate_cuda_source

HERE = os.path.dirname(__file__)
sys.path.insert(0, HERE)
import compiler_cuda_checks as checks  # noqa: E402
from simulator import run_simulated  # noqa: E402

SCRIPT = os.path.join(HERE, "compiler_cuda_checks.py")
TOLERANCE = 1e-12


def scheduled(name, program="core"):
    lowered, layout = engine.lower(checks.CASES[name]()[0])
    layout = layout.compiled_in()
    return stages(gradient_program(lowered, layout, program), {name: p.size for name, p in layout.params.items()})


def adds(body, buffer_name):
    """``{how}`` of the ``GridAdd``s into gradient entries of parameter ``buffer_name``."""
    return {s.how for s in unwrapped(body) if isinstance(s, GridAdd) and s.statement.dest.kind == "grad"
            and s.statement.dest.name == buffer_name}


def test_a_regressions_rows_are_spread_over_the_threads():
    """The hierarchical Poisson model: its rows over the threads, each thread's
    part of the scalars' adjoints and of lp summed per block, the gathered
    entries added to the block's copy of z's adjoints; nothing waits for the first thread."""
    terms = scheduled("hierarchical").terms
    assert [type(s) for s in terms if isinstance(s, (Spread, First, ir.Map))] == [Spread]
    assert adds(terms, "z") == {"shared"} and adds(terms, "mu") == adds(terms, "b") == {"block"}
    lp = [s for s in unwrapped(terms) if isinstance(s, GridAdd) and s.statement.dest.kind == "lp"]
    assert [s.how for s in lp] == ["block"]


def test_a_parameter_whose_adjoints_do_not_fit_in_shared_memory_is_added_atomically(monkeypatch):
    from logdens.compiler import gpu_schedule
    monkeypatch.setattr(gpu_schedule, "SHARED_ENTRIES", 4)  # z has 5 entries (groups)
    assert adds(scheduled("hierarchical").terms, "z") == {"atomic"}


def test_own_row_adds_are_plain_only_where_one_thread_owns_each_entry():
    """Eight schools' z is added to at its own rows by its prior and the
    likelihood (the same thread owns row i in both); ``v[1:] - v[:-1]`` adds to
    entries of the neighbouring rows, which other threads own: atomic."""
    assert adds(scheduled("eight_schools").terms, "z") == {"plain"}
    assert adds(scheduled("positions").terms, "v") == {"atomic", "shared"}  # slices; the gather v[group]


def test_a_reduction_read_again_runs_on_the_first_thread():
    """A log-sum-exp's largest element (a max, not a sum) and running sums (a
    thread's workspace) run on the point's first thread, with whatever reads
    them; a sum read only linearly is spread, each thread adding its part."""
    terms = scheduled("reductions").terms
    on_first = [s for f in terms if isinstance(f, First) for s in unwrapped(f.body)]
    assert any(isinstance(s, ir.Accumulate) and s.op == "max" for s in on_first)
    assert all(isinstance(s.map, ir.Map) and not any(b.kind == "workspace" for s2 in s.map.body
                                                     for b in s2 if isinstance(b, ir.Buffer))
               for s in terms if isinstance(s, Spread))
    linear = scheduled("linear_sums").terms
    assert not any(isinstance(x, ir.Map) for s in linear if isinstance(s, First) for x in s.body)
    assert sum(isinstance(s, Spread) for s in linear) == 5  # the prior, two sums and their reverse sweeps
    assert adds(linear, "x") == {"plain"}
    mixed = scheduled("mixed_sums").terms  # s's adjoint: threads' parts and the first thread's sweep
    # spread: the prior and the linear sum's sweep back (its forward sum meets the first thread's square)
    assert [type(s) for s in mixed if isinstance(s, (Spread, First))].count(Spread) == 2
    assert any(isinstance(x, ir.Map) for s in mixed if isinstance(s, First) for x in s.body)


def test_stages_constrain_first_and_sweep_transforms_back_last():
    s = scheduled("positions")
    assert {type(x) for x in s.prepare} == {ir.Zero, ir.Constrain}  # grad zeroed, the simplex constrained
    assert any(isinstance(x, ir.ConstrainAdjoint) for x in s.finish)
    assert any(isinstance(x, ir.When) and x.flag == "jacobian" for x in s.finish)
    assert not any(isinstance(x, ir.Zero) for x in scheduled("positions", "value").prepare)


@pytest.mark.parametrize("name", ["hierarchical", "transforms", "positions", "reductions"])
def test_the_kernels_have_the_engines_names_and_arguments(name):
    """So ``CudaLogDensity`` launches either module; per-sample rows where the
    engine has them on the device too (not with a simplex or a sum inside)."""
    lowered, layout = engine.lower(checks.CASES[name]()[0])

    def headers(text):
        return sorted(re.findall(r"^def (\w+\(.*\)):", text, re.M))
    assert headers(source(lowered, layout)) == headers(generate_cuda_source(lowered, layout))


def test_running_sums_over_rows_of_data_are_refused_by_name():
    m = ld.Model()
    a = m.param("a")
    m.observe("y", ld.Normal(ld.cumsum(a * m.data("x", np.ones(5))), 1.0), np.zeros(5))
    with pytest.raises(NotOnDevice, match=r"workspace:h\d+: a workspace of run-time length n_x"):
        source(*engine.lower(m))


def test_workspaces_beyond_a_threads_local_memory_are_refused():
    """Running sums of 70,000 entries: 546 KiB on each thread (refused before their adjoints)."""
    m = ld.Model()
    z = m.param("z", ld.Normal(0, 1), shape=70_000)
    m.potential("walk", -ld.sum(ld.square(ld.cumsum(z))))
    with pytest.raises(NotOnDevice, match=r"take 546 KiB, beyond the 512 KiB of local memory"):
        source(*engine.lower(m))


@pytest.mark.parametrize("group", checks.GROUPS)
def test_simulated_kernels_equal_the_engine(group):
    result = run_simulated(SCRIPT, group)
    compared = result["compare"]
    failed = {case: {k: v for k, v in d.items() if not v <= TOLERANCE} for case, d in compared.items()}
    assert result["not_lowered"] == {} and sorted(compared) == sorted(checks.GROUPS[group])
    assert not any(failed.values()), failed


@pytest.mark.slow
def test_the_kernels_compile_to_ptx():
    """numba-cuda's NVVM compiles the kernels for sm_90 with no device: their
    typing and lowering on the real target, which the simulator skips."""
    from numba.cuda.cudadrv import nvvm
    if not nvvm.is_available():
        pytest.skip("numba-cuda finds no NVVM (libnvvm) here")
    cases = ["hierarchical", "transforms", "positions", "linear_sums", "running_sums"]  # running sums: local arrays
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    done = subprocess.run([sys.executable, SCRIPT, "--ptx", *cases], env=env, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    compiled = __import__("json").loads(done.stdout.strip().splitlines()[-1])
    assert sorted(compiled) == sorted(cases) and all("terms" in names and "finish" in names
                                                    for names in compiled.values())
