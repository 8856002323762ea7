"""``python -m logdens warmup`` and the message of a run that compiles the samplers (samplers.warmup)."""

import io
import os
import subprocess
import sys
import textwrap

import numba
import pytest

from logdens.__main__ import main
from logdens.samplers.compile_notice import MESSAGE, announcing_compile, watching_compiles
from logdens.samplers.warmup import Entry, WarmupError, _compile, _unsaved

# A model warmup never saw (it compiles no model), run with the progress bar
# on; then static HMC, whose transition warmup did not compile.
NEW_MODEL_RUN = textwrap.dedent("""
    import sys
    import numpy as np
    import logdens as ld
    from logdens.samplers.compile_notice import watching_compiles

    x = np.linspace(-1.0, 1.0, 12)
    m = ld.Model()
    a = m.param("a", ld.Normal(0, 1))
    b = m.param("b", ld.Normal(0, 1))
    m.observe("y", ld.Normal(a + b * x, 0.5), 0.3 + 1.2 * x)
    with watching_compiles() as model:
        density = m.compile()
    with watching_compiles() as seen:
        ld.nuts(density, draws=20, tune=20, chains=1, progress=True)
    print(sorted({d.py_func.__module__ for d in model.dispatchers
                  if d.py_func.__module__.startswith("logdens.distributions")}))
    print(sorted({d.py_func.__module__ for d in seen.dispatchers
                  if d.py_func.__module__.startswith("logdens.samplers")}))
    print("--- hmc", file=sys.stderr, flush=True)
    ld.hmc(density, num_steps=4, draws=20, tune=20, chains=1, progress=True)
""")


def _run(args, env):
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=600,
                          env=env, cwd=os.path.dirname(__file__))


@pytest.mark.slow
def test_warmup_makes_the_next_process_first_nuts_compile_no_sampler_code(tmp_path):
    """After ``warmup`` in an empty cache, a second warmup only loads, and in a
    fresh process a new model's ``compile()`` compiles no distribution kernel
    and its first ``ld.nuts`` nothing of the samplers, with no message; its
    first ``ld.hmc`` compiles the HMC transition and says so before its
    progress bar."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               LOGDENS_CACHE_DIR=str(tmp_path / "logdens"), PYTHONWARNINGS="ignore")
    first = _run(["-m", "logdens", "warmup"], env)
    assert first.returncode == 0, first.stderr
    assert "nutpie's warmup (ld.nuts's default): compiled in" in first.stdout
    assert "common distributions (a small model): compiled in" in first.stdout
    again = _run(["-m", "logdens", "warmup"], env)
    assert again.returncode == 0, again.stderr
    assert again.stdout.count("loaded from cache") == 2 and "compiled in" not in again.stdout

    run = _run(["-c", NEW_MODEL_RUN], env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-2:] == ["[]", "[]"]  # no kernel, no sampler function compiled
    nuts_err, hmc_err = run.stderr.split("--- hmc\n")
    assert "logdens: compiling" not in nuts_err
    assert hmc_err.startswith(MESSAGE.format(what="static HMC (diag metric, nutpie's warmup)"))


def test_the_message_comes_once_before_compiling_and_never_for_compiled_code(capsys):
    add_one = numba.njit(lambda v: v + 1)
    add_two = numba.njit(lambda v: v + 2)
    with announcing_compile("the test's functions"):
        assert add_one(1) + add_two(1) == 5
    err = capsys.readouterr().err
    assert err == MESSAGE.format(what="the test's functions") + "\n"
    with announcing_compile("the test's functions"):
        add_one(2)  # compiled already: silent
    with announcing_compile("the test's functions", enabled=False):
        add_one(2.5)  # compiles a new signature, but progress is off
    assert capsys.readouterr().err == ""


def test_watching_compiles_records_what_numba_compiles():
    fresh = numba.njit(lambda v: v * 3)
    with watching_compiles() as seen:
        fresh(2)
    assert [d.py_func for d in seen.dispatchers] == [fresh.py_func]
    with watching_compiles() as seen:
        fresh(3)
    assert seen.dispatchers == []


def test_an_unwritable_numba_cache_dir_fails_with_the_variable_named(tmp_path, monkeypatch, capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(blocker / "numba"))
    assert main(["warmup"]) == 1
    err = capsys.readouterr().err
    assert f"NUMBA_CACHE_DIR {blocker / 'numba'} is not writable" in err
    assert "Set NUMBA_CACHE_DIR to a directory you can write" in err


def test_an_unwritable_logdens_cache_dir_fails_with_the_variable_named(tmp_path, monkeypatch,
                                                                        capsys):
    blocker = tmp_path / "a_file"
    blocker.write_text("")
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("LOGDENS_CACHE_DIR", str(blocker / "logdens"))
    assert main(["warmup"]) == 1
    err = capsys.readouterr().err
    assert f"logdens' cache directory {blocker / 'logdens'} is not writable" in err
    assert "Set LOGDENS_CACHE_DIR" in err


def test_numba_without_a_cache_location_is_a_warmup_error():
    def refuse():
        raise RuntimeError("cannot cache function 'run_chunk': no locator available for file 'x'")

    with pytest.raises(WarmupError, match="no locator available.*Set NUMBA_CACHE_DIR"):
        _compile(Entry("NUTS", refuse))
    with pytest.raises(RuntimeError, match="unrelated"):
        _compile(Entry("NUTS", lambda: (_ for _ in ()).throw(RuntimeError("unrelated"))))


def test_warmup_prints_each_entry_compiled_then_loaded(monkeypatch, tmp_path):
    from logdens.samplers import warmup as module
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "numba"))
    monkeypatch.setenv("LOGDENS_CACHE_DIR", str(tmp_path / "logdens"))
    fresh = numba.njit(lambda v: v - 1)
    monkeypatch.setattr(module, "entries", lambda everything: [Entry("a fresh function",
                                                                    lambda: fresh(1))])
    out = io.StringIO()
    module.warmup(stream=out)
    module.warmup(stream=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == (f"numba cache: {tmp_path / 'numba'}; "
                        f"logdens model cache: {tmp_path / 'logdens'}")
    assert lines[1].startswith("  a fresh function: compiled in ")
    assert lines[4].startswith("  a fresh function: loaded from cache in ")


def test_a_cached_function_whose_index_numba_did_not_write_is_reported(monkeypatch, tmp_path):
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path))
    cached = numba.njit(cache=True)(_cached_function)
    with watching_compiles() as seen:
        cached(1.0)
    assert _unsaved(seen.dispatchers) == []
    os.remove(cached._cache._cache_file._index_path)
    assert _unsaved(seen.dispatchers) == [cached]


def _cached_function(v):
    return v * 0.5
