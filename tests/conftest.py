"""The test session's compile cache, and a report of what the run compiled.

The whole run (every xdist worker and every subprocess a test starts, which
inherit the environment) uses one logdens cache directory, so that tests
that build the same model reuse its compiled kernels: ``$LOGDENS_CACHE_DIR``
when it is set, else ``logdens`` in pytest's cache (``.pytest_cache``; a
fresh clone starts cold, ``pytest --cache-clear`` empties it). It is pinned
in ``pytest_configure``, not in a fixture: xdist starts its workers, and
collection builds models, before the first fixture runs. A test that passes
``cache_dir=`` or sets ``LOGDENS_CACHE_DIR`` itself (``monkeypatch``) keeps
its own.

At the end the terminal summary says how many kernel functions were compiled
cold and how many came from numba's disk cache (``logdens.cache.COUNTS``,
summed over the xdist workers), the test files that compiled the most
(a cold compile costs 1-5 s of CPU time: they are where the suite's time
goes), and how many numba cache files the run
wrote, subprocesses included: in the pinned directory (kernels) and beside
the package's own modules (the samplers' and distributions' functions).
"""

import collections
import glob
import os
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIRS = ("logdens", "samplers", "distributions")
_BEFORE = pytest.StashKey()  # the numba cache files there before the run
_COUNTS = pytest.StashKey()  # logdens.cache.COUNTS of every pytest process
_BY_FILE = pytest.StashKey()  # cold compiles by test file, of every pytest process
#: This process's cold compiles by test file (setup, call and teardown of its tests).
COMPILED_BY_FILE = collections.Counter()


def _numba_files(directory):
    """The numba cache data files (``*.nbc``) under ``directory``."""
    return set(glob.glob(os.path.join(directory, "**", "*.nbc"), recursive=True))


def _package_files():
    """numba's cache files of the package's own functions: beside its modules,
    or all in ``$NUMBA_CACHE_DIR`` when that is set (kernels' included)."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return _numba_files(os.environ["NUMBA_CACHE_DIR"])
    return set().union(*(_numba_files(os.path.join(ROOT, d)) for d in PACKAGE_DIRS))


def _session_dir(config):
    """The pinned directory: pytest's cache, or (with the cache provider off)
    a temporary directory removed at the end of the run."""
    if getattr(config, "cache", None) is not None:
        return str(config.cache.mkdir("logdens"))
    path = tempfile.mkdtemp(prefix="logdens-tests-")
    config.add_cleanup(lambda: shutil.rmtree(path, ignore_errors=True))
    return path


def pytest_configure(config):
    if "workerinput" in config.__dict__:  # an xdist worker: the controller pinned it
        return
    os.environ.setdefault("LOGDENS_CACHE_DIR", _session_dir(config))
    config.stash[_BEFORE] = (_numba_files(os.environ["LOGDENS_CACHE_DIR"]), _package_files())
    config.stash[_COUNTS] = collections.Counter()
    config.stash[_BY_FILE] = collections.Counter()


def pytest_collection_modifyitems(items):
    """Files that hold ``slow`` tests first, each file's tests in their order:
    xdist hands out whole files in this order (``--no-loadscope-reorder``;
    its default puts files with few tests, such as the CUDA simulator's, last),
    so the long files start early and short ones fill in beside them."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    from logdens import cache
    before = cache.COUNTS["compiled"]
    yield
    COMPILED_BY_FILE[item.path.name] += cache.COUNTS["compiled"] - before


def pytest_sessionfinish(session):
    from logdens import cache
    config = session.config
    if "workerinput" in config.__dict__:
        config.workeroutput["logdens_counts"] = dict(cache.COUNTS)
        config.workeroutput["logdens_by_file"] = dict(COMPILED_BY_FILE)
    elif _COUNTS in config.stash:
        config.stash[_COUNTS].update(cache.COUNTS)
        config.stash[_BY_FILE].update(COMPILED_BY_FILE)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """An xdist worker's counts, added to the run's."""
    output = getattr(node, "workeroutput", {})
    node.config.stash[_COUNTS].update(output.get("logdens_counts", {}))
    node.config.stash[_BY_FILE].update(output.get("logdens_by_file", {}))


def pytest_terminal_summary(terminalreporter, config):
    if _BEFORE not in config.stash:
        return
    directory = os.environ["LOGDENS_CACHE_DIR"]
    kernels, package = config.stash[_BEFORE]
    counts = config.stash[_COUNTS]
    terminalreporter.write_sep("-", f"logdens compile cache: {directory}")
    terminalreporter.write_line(
        f"kernel functions in the pytest processes: {counts['compiled']} compiled cold, {counts['loaded']} "
        f"loaded from a disk cache; {counts['reused']} models reused in memory")
    most = [f"{name} {n}" for name, n in config.stash[_BY_FILE].most_common(10) if n]
    if most:
        terminalreporter.write_line("most cold compiles (subprocesses not counted): " + ", ".join(most))
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    terminalreporter.write_line(
        f"numba cache files written by the run (subprocesses included): {len(_numba_files(directory) - kernels)} "
        f"kernels in the pinned directory, {len(_package_files() - package)} "
        + (f"in NUMBA_CACHE_DIR={numba_dir}" if numba_dir else "package functions (samplers, distributions)"))
