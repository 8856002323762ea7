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
summed over the xdist workers), the 20 test files that took the most CPU
time with their cold compiles (a compile of a model's kernel takes 0.3-5 s:
most of the suite's time), and how many numba cache files the run wrote,
subprocesses included: in the pinned directory (kernels) and beside
the package's own modules (the samplers' and distributions' functions).
"""

import collections
import glob
import os
import resource
import shutil
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.dirname(__file__))

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE_DIRS = ("logdens", "samplers", "distributions")
_BEFORE = pytest.StashKey()  # the numba cache files there before the run
_COUNTS = pytest.StashKey()  # logdens.cache.COUNTS of every pytest process
_BY_FILE = pytest.StashKey()  # BY_FILE of every pytest process
#: This process's cost by test file (setup, call and teardown of its tests):
#: "cpu" seconds (the process's and the subprocesses it waited for) and
#: "compiled" kernel functions (cold compiles in the process).
BY_FILE = {"cpu": collections.Counter(), "compiled": collections.Counter()}


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
    config.stash[_BY_FILE] = {kind: collections.Counter() for kind in BY_FILE}


def pytest_collection_modifyitems(items):
    """Files that hold ``slow`` tests first, each file's tests in their order:
    xdist hands out whole files in this order (``--no-loadscope-reorder``;
    its default puts files with few tests, such as the CUDA simulator's, last),
    so the long files start early and short ones fill in beside them."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


def _cpu_seconds():
    """CPU time of this process and of the subprocesses it has waited for."""
    own, waited = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + waited.ru_utime + waited.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    from logdens import cache
    compiled, cpu = cache.COUNTS["compiled"], _cpu_seconds()
    yield
    BY_FILE["compiled"][item.path.name] += cache.COUNTS["compiled"] - compiled
    BY_FILE["cpu"][item.path.name] += _cpu_seconds() - cpu


def _add(total, by_file):
    for kind, counts in by_file.items():
        total[kind].update(counts)


def pytest_sessionfinish(session):
    from logdens import cache
    config = session.config
    if "workerinput" in config.__dict__:
        config.workeroutput["logdens_counts"] = dict(cache.COUNTS)
        config.workeroutput["logdens_by_file"] = {kind: dict(counts) for kind, counts in BY_FILE.items()}
    elif _COUNTS in config.stash:
        config.stash[_COUNTS].update(cache.COUNTS)
        _add(config.stash[_BY_FILE], BY_FILE)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """An xdist worker's counts, added to the run's."""
    output = getattr(node, "workeroutput", {})
    node.config.stash[_COUNTS].update(output.get("logdens_counts", {}))
    _add(node.config.stash[_BY_FILE], output.get("logdens_by_file", {}))


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
    by_file = config.stash[_BY_FILE]
    costly = [f"{name[:-3]} {cpu:.0f} s ({by_file['compiled'][name]})" for name, cpu in by_file["cpu"].most_common(20)]
    terminalreporter.write_line("test files by CPU time, subprocesses waited for included (cold compiles in "
                                "the pytest process): " + ", ".join(costly))
    numba_dir = os.environ.get("NUMBA_CACHE_DIR")
    terminalreporter.write_line(
        f"numba cache files written by the run (subprocesses included): {len(_numba_files(directory) - kernels)} "
        f"kernels in the pinned directory, {len(_package_files() - package)} "
        + (f"in NUMBA_CACHE_DIR={numba_dir}" if numba_dir else "package functions (samplers, distributions)"))
