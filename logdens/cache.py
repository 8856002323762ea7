"""The on-disk cache of generated modules.

numba cannot cache functions created with ``exec`` from a string, but it
caches functions whose code names a file (``cache=True``). So every generated
module is written to ``<cache dir>/logdens_<key>.py``; a second process finds
the file, and numba finds its compiled functions beside it, in
``<cache dir>/__pycache__``. numba keys its cache on that file alone, so the
file name carries a hash of everything the generated code depends on: its
source, every source of the ``distributions`` package (kernels inline helpers
of other modules, and ``distributions.jit`` sets their flags),
the kernel modules of ``logdens`` that generated code calls
(``KERNEL_MODULES``), and the logdens, numba and Python versions.

What runs is code, so the cache is guarded:

- The cache directory is private: created with mode 700, and refused
  (``CacheDirectoryError``) when another user owns it or could write to it,
  or when it is a symbolic link that another user owns (they could point it
  at any directory of yours, which logdens would fill and make private).
  numba's pickled functions in ``__pycache__`` are loaded unverified, and a
  pickle runs code when it is loaded; only a directory that no one else can
  write keeps planted pickles out. ``__pycache__`` gets the same check.
- An entry is never imported from disk. Its bytes are compared with the
  source the engine just generated (the key is a hash of that source); on a
  mismatch (truncated, edited or planted) the entry is replaced. Then the
  generated source itself, not the file, is compiled, with the file's path
  as its name for numba's cache and for tracebacks: a file swapped after the
  check is never run, and no CPython bytecode file is read either.
- numba's pickles of an entry's functions are part of the entry: numba
  loads them before compiling a function (those in the module's
  ``SIGNATURES`` at load, the others at first call) and saves them after.
  Pickles that fail to load (truncated, overwritten) are removed and the
  function compiled again; pickles that cannot be saved (a full disk) are
  removed and the compiled function runs from memory. Both with a warning
  (``_GuardedCache``).
- Writes go to a temporary file in the same directory, renamed over the
  entry: a reader never sees half a file, and a failed write leaves nothing.
- A directory where an entry cannot be written (read-only, full) does not
  stop compilation: the process falls back, with a warning, to one private
  temporary directory, removed when it exits. (Valid entries in a read-only
  directory load from it; numba then keeps its pickles in its own user-wide
  cache.)

With ``NUMBA_CACHE_DIR`` set, numba keeps its pickles there instead; that
directory is then numba's and the user's to protect.
"""

import atexit
import collections
import contextlib
import functools
import glob
import hashlib
import os
import shutil
import stat
import sys
import tempfile
import types
import warnings

import numba
from numba.core.caching import Cache
from numba.core.dispatcher import Dispatcher

import logdens
from logdens.distributions import jit
from logdens import event_transforms, gp, linalg_kernels

#: The modules of numba kernels that generated code imports besides ``distributions``.
KERNEL_MODULES = (event_transforms, gp, linalg_kernels)

# Loaded modules by key: a model compiled twice in one process reuses them.
_LOADED = {}
#: What this process's generated modules cost, counted for the test suite's
#: report (tests/conftest.py): "compiled" (a function numba found no pickle
#: for: a cold compile), "loaded" (one loaded from numba's disk cache) and
#: "reused" (a module this process had loaded already).
COUNTS = collections.Counter()
# Cache directories that could not be used, each mapped to the private
# temporary directory this process uses instead.
_FALLBACK = {}


class CacheDirectoryError(PermissionError):
    """A cache directory that another user owns or can write to.

    Its contents cannot be trusted (numba loads pickles from it), so logdens
    refuses it rather than falling back quietly.
    """


def configured_dir(override=None):
    """The cache directory asked for: ``override``, else ``$LOGDENS_CACHE_DIR``,
    else ``$XDG_CACHE_HOME/logdens``, else ``~/.cache/logdens``."""
    path = override or os.environ.get("LOGDENS_CACHE_DIR")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "logdens")
    return os.path.abspath(os.fspath(path))


def _check_private(path):
    """Refuse ``path`` unless we own it (and the link, if it is one) and no one
    else can write to it; make it mode 700.

    A directory others could write to is refused, not tightened: what they
    may have planted there would stay (and tightening a shared directory such
    as ``/tmp`` would break it). One that others can only read (earlier
    versions of logdens created theirs 755) is made private. Windows has ACLs,
    not owners and modes: nothing is checked there.
    """
    if not hasattr(os, "geteuid"):
        return
    uid, link = os.geteuid(), os.lstat(path)
    if stat.S_ISLNK(link.st_mode) and link.st_uid != uid:
        raise CacheDirectoryError(
            f"logdens cache directory {path} is a symbolic link owned by uid {link.st_uid}, not by you "
            f"(uid {uid}): its owner could point it at any directory. Set LOGDENS_CACHE_DIR (or pass "
            "cache_dir=) to a directory of your own, not through this link.")
    info = os.stat(path)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid != uid:
        raise CacheDirectoryError(
            f"logdens cache directory {path} is owned by uid {info.st_uid}, not by you (uid {uid}): "
            "its owner could plant code that logdens would run. Set LOGDENS_CACHE_DIR (or pass "
            "cache_dir=) to a directory of your own; logdens creates it with mode 700.")
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise CacheDirectoryError(
            f"logdens cache directory {path} has mode {mode:o}: other users can write to it, so "
            "what it holds may have been planted. If it is a logdens cache, delete it (logdens "
            "recreates it with mode 700); else set LOGDENS_CACHE_DIR (or pass cache_dir=) to a "
            "directory only you can write.")
    if mode & 0o077:
        os.chmod(path, 0o700)


def _private_dir(path):
    """Create ``path`` (mode 700) if missing; check it and numba's ``__pycache__`` in it."""
    os.makedirs(path, mode=0o700, exist_ok=True)
    _check_private(path)
    pycache = os.path.join(path, "__pycache__")
    if os.path.isdir(pycache):  # numba creates it on its first save
        _check_private(pycache)


@functools.cache
def _temporary_dir():
    """This process's private fallback directory (``mkdtemp``: mode 700), made
    on first need and removed at exit."""
    path = tempfile.mkdtemp(prefix="logdens-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def key(source):
    """The cache key of a generated module."""
    h = hashlib.sha256(source.encode())
    versions = f"{logdens.__version__}|{numba.__version__}|{sys.version}"
    h.update(versions.encode())
    h.update(jit.SOURCES.encode())
    for module in KERNEL_MODULES:
        with open(module.__file__, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:24]


def _read(path):
    """The bytes of ``path``, or None if there is no such file."""
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _write_atomic(path, data):
    """Write ``data`` to ``path`` through a temporary file renamed over it;
    on any failure the temporary file is removed and the error raised."""
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=os.path.basename(path) + ".",
                               suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.remove(tmp)
        raise


def _entry(directory, k, source):
    """The path of the entry for ``source`` in ``directory``, checked to hold
    exactly ``source``: written if missing, replaced if it differs."""
    _private_dir(directory)
    path = os.path.join(directory, f"logdens_{k}.py")
    data = source.encode()
    if _read(path) != data:  # missing, truncated, edited or planted
        _write_atomic(path, data)
    return path


def _usable_entry(directory, k, source):
    """``_entry`` in ``directory``, or in the fallback directory when
    ``directory`` cannot be written or read (warning once per directory)."""
    requested = configured_dir(directory)
    if requested in _FALLBACK:
        return _entry(_FALLBACK[requested], k, source)
    try:
        return _entry(requested, k, source)
    except CacheDirectoryError:
        raise
    except OSError as error:
        fallback = _temporary_dir()
        # stacklevel 5: the user's line calling Model.compile (via compile_model and load)
        warnings.warn(f"logdens cache directory {requested} cannot be used ({error}); this process "
                      f"compiles into the private temporary directory {fallback} instead", stacklevel=5)
        _FALLBACK[requested] = fallback
        return _entry(fallback, k, source)


def _remove(paths):
    """Remove the files ``paths``, those already gone (or not removable) left alone."""
    for name in paths:
        with contextlib.suppress(OSError):
            os.remove(name)


def _remove_entry(path, k):
    """Remove the entry at ``path`` and what numba saved for it in ``__pycache__``."""
    pycache = os.path.join(os.path.dirname(path), "__pycache__")
    _remove([path] + glob.glob(os.path.join(pycache, f"logdens_{k}.*")))


class _GuardedCache:
    """numba's cache of one function of entry ``k`` (a dispatcher's ``_cache``),
    whose failures are those of a bad entry: the function's pickles removed, a warning.

    A failed load (a truncated or overwritten pickle) then compiles the
    function again; a failed save (a full disk) leaves it compiled in memory.
    """

    def __init__(self, cache, function, k):
        self._cache, self._function, self._key = cache, function, k

    def __getattr__(self, name):  # the rest of numba's cache interface
        return getattr(self._cache, name)

    def load_overload(self, sig, target_context):
        try:
            loaded = self._cache.load_overload(sig, target_context)
        except Exception as error:
            self._drop("loaded", error, "compiling the function again")
            loaded = None
        COUNTS["compiled" if loaded is None else "loaded"] += 1
        return loaded

    def save_overload(self, sig, data):
        try:
            self._cache.save_overload(sig, data)
        except Exception as error:
            self._drop("saved", error, "the compiled function runs from memory (the next process compiles it again)")

    def _drop(self, failed, error, then):
        # numba names a function's index and data files <module>.<function>-<line>.*
        directory = self._cache.cache_path
        _remove(glob.glob(os.path.join(directory, f"logdens_{self._key}.{self._function}-*")))
        warnings.warn(f"numba's cache of {self._function} in {directory} could not be {failed} "
                      f"({type(error).__name__}: {error}); its files there are removed, {then}")


def _guard(module, k):
    """Route numba's disk cache of each function ``module`` defines through
    ``_GuardedCache``, then compile those in its ``SIGNATURES`` (loading them
    from the cache). Functions it imports, and those without a disk cache
    (CUDA kernels), are left alone."""
    for value in vars(module).values():
        if (isinstance(value, Dispatcher) and value.py_func.__module__ == module.__name__
                and isinstance(value._cache, Cache)):
            value._cache = _GuardedCache(value._cache, value.py_func.__name__, k)
    for function, signature in getattr(module, "SIGNATURES", {}).items():
        dispatcher = getattr(module, function)
        dispatcher.compile(signature)
        dispatcher.disable_compile()  # other argument types go elsewhere (``core``)


def _execute(source, k, path):
    """Run ``source`` as the module of the file ``path`` (which holds the same text),
    its numba caches guarded (``_guard``).

    If it fails (numba compiles the module's ``SIGNATURES`` here), the entry
    is removed, so that the failure is not cached, and the error raised.
    """
    name = f"logdens_generated_{k}"
    module = types.ModuleType(name)
    module.__file__ = path
    sys.modules[name] = module
    try:
        exec(compile(source, path, "exec"), module.__dict__)
        _guard(module, k)
    except Exception:
        del sys.modules[name]
        _remove_entry(path, k)
        raise
    return module


def load(source, directory=None):
    """The generated module for ``source``, through the cache in ``directory``
    (default: ``configured_dir()``), writing or repairing its entry first."""
    k = key(source)
    if k in _LOADED:
        COUNTS["reused"] += 1
    else:
        _LOADED[k] = _execute(source, k, _usable_entry(directory, k, source))
    return _LOADED[k]
