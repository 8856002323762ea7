"""numba's disk cache made safe for processes that save into it at once.

numba keeps the compiled versions of one function in one index file (key ->
data file name) beside numbered data files. ``IndexDataCacheFile.save``
reads the index, takes the first free number, writes the index, then the
data, with no lock. Two processes that save two versions of one function at
once (the NUTS runner's diagonal and dense variants, a kernel's float64 and
float32 versions; two test workers, or Dask workers sharing a machine) can
both take number 1, and the index can end up naming one version while the
data file holds the other: the next process would load and run the wrong
code, unverified. Here each save holds an exclusive advisory lock
(``fcntl.flock``) on a file beside the index from reading the index to
writing the data, and each load a shared one: a save sees every earlier
save's entries, and a load never reads an index and a data file of two
different saves.

Installed once, when ``logdens.distributions.jit`` is imported (everything
that compiles imports it), for every numba cache of the process. Where a
lock file cannot be made (a read-only cache directory: no process saves
there) or ``fcntl`` is missing (Windows), numba's own behaviour is kept.
"""

import contextlib
import os

from numba.core import caching

try:
    import fcntl
except ImportError:  # Windows: numba's unlocked cache
    fcntl = None


@contextlib.contextmanager
def _locked(index_path, exclusive):
    """Hold a lock on ``<index>.lock`` (exclusive for a save, shared for a load)."""
    try:
        handle = open(index_path + ".lock", "a")
    except OSError:  # a directory this process cannot write: no one saves there
        yield
        return
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


#: numba's own methods (kept when this module is imported again).
_NUMBA = getattr(caching.IndexDataCacheFile.save, "numba", None) or (
    caching.IndexDataCacheFile.save, caching.IndexDataCacheFile.load)


def _save(self, key, data):
    with _locked(self._index_path, exclusive=True):
        _NUMBA[0](self, key, data)


def _load(self, key):
    with _locked(self._index_path, exclusive=False):
        return _NUMBA[1](self, key)


def install():
    """Lock numba's index-and-data saves and loads (see the module docstring)."""
    if fcntl is None:
        return
    _save.numba = _NUMBA
    caching.IndexDataCacheFile.save = _save
    caching.IndexDataCacheFile.load = _load
