"""How the distributions' scalar functions are compiled: ``kernel``, ``jitable``
and ``fast_kernel``.

Each is numba's ``register_jitable``: the function runs as plain Python when
called from Python and is compiled inside numba code. Each gives the function
fixed flags (no fastmath, except ``fast_kernel``; numpy's error model) and
caches the compiled result on disk:

* Fixed flags, whatever the caller's. numba gives a function without flags
  of its own those of its first caller, and the disk cache keeps them for
  every later caller: a kernel first compiled by a test loop with numba's
  default error model (division checks that raise) ran the logistic
  regression's gradient in 375 µs instead of 175. The kernels never divide
  by zero unguarded, so numpy's error model (no checks) is theirs.
* No fastmath flags. The engine compiles its loops with ``reassoc``
  (reductions need it to vectorize). Reassociation
  undoes careful arithmetic: ``special.lchoose`` moved by 6.9e-11 relative,
  Poisson's ``logpdf`` at a rate of 1e6 by 1e-10, and 16 kernel cases of the
  distribution tests (StudentT at df 1e8, NegativeBinomial at phi 1e12,
  TruncatedNormal 1e-10 wide, ...) lost their partials, down to 0.0 for a
  d/dphi of 1.9e-9. LLVM keeps each instruction's flags when it inlines, so
  the engine's loops stay fast around exact kernels: the gradients of the
  Poisson, logistic and hierarchical benchmark models took the same time.
  Only the Normal kernel was slower (20% at N = 1e3-1e4); it passes every
  test with the engine's flags and keeps them (``fast_kernel``).
* The disk cache, because each kernel would otherwise be compiled again in
  every process that compiles a model (0.3 s of the eight-schools model's
  0.6 s). A cached function keeps its LLVM bitcode, so the engine's loops
  still inline it. Its freshness stamp covers the whole package (see
  ``_PackageStampLocator``).
"""

import hashlib
from pathlib import Path

import numba
from numba.core import caching
from numba.extending import register_jitable

from . import cache_lock

cache_lock.install()  # numba's disk cache, shared by processes that compile at once


def _sources_hash():
    """SHA-256 of this package's ``*.py`` files, names and contents."""
    digest = hashlib.sha256()
    for path in sorted(Path(__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


#: SHA-256 of the package's sources: what a compiled kernel may contain.
SOURCES = _sources_hash()
_DECORATED = set()  # code objects of the functions compiled through this module


class _PackageStampLocator(caching._CacheLocator):
    """numba's own cache locator for a function decorated here, with a hash of
    the whole package added to its freshness stamp.

    numba checks only the function's own file, yet the compiled function
    holds the code of every function it calls (``special``, ``vmath``,
    helpers of other modules): an edit there would leave a stale kernel in
    the cache. With the hash, any edit of the package compiles the kernels
    anew; an installed copy keeps loading them.
    """

    def __init__(self, inner):
        self._inner = inner
        self._py_file = inner._py_file  # numba's warning that a function cannot be cached names it

    def ensure_cache_path(self):
        self._inner.ensure_cache_path()

    def get_cache_path(self):
        return self._inner.get_cache_path()

    def get_source_stamp(self):
        return self._inner.get_source_stamp(), SOURCES

    def get_disambiguator(self):
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func, py_file):
        if py_func.__code__ not in _DECORATED:
            return None
        for other in caching.CacheImpl._locator_classes:
            inner = None if other is cls else other.from_function(py_func, py_file)
            if inner is not None:
                return cls(inner)
        return None


caching.CacheImpl._locator_classes.insert(0, _PackageStampLocator)


def _cached(fn, **options):
    _DECORATED.add(fn.__code__)
    return register_jitable(cache=True, error_model="numpy", **options)(fn)


#: The engine's fastmath policy, stated once (STYLE 16): reassociation and
#: contraction let its reductions vectorize; never ``nnan`` or ``ninf``, since
#: ``-inf`` is a valid log density. ``logdens.engine`` compiles with it.
FASTMATH = frozenset({"reassoc", "contract", "arcp", "nsz"})


def njit(**options):
    """``numba.njit`` with the disk cache and this module's freshness stamp, for
    functions called only from compiled code (``vmath``). Their cached code
    names its module: an entry made when the package was installed under
    another name imported that name on load."""
    def decorate(fn):
        _DECORATED.add(fn.__code__)
        return numba.njit(cache=True, nogil=True, error_model="numpy", **options)(fn)
    return decorate


def kernel(fn):
    """A ``logpdf_grad`` kernel, or a helper that kernels call in their loops:
    always inlined (LLVM ``alwaysinline``). LLVM left a kernel grown by an
    inlined ``vmath`` polynomial as a call per element, which cost the call
    and stopped the loop vectorizing (logistic regression's gradient: 420 µs
    as a call, 245 µs inlined). A helper loaded from the disk cache, compiled
    there for another caller, also stayed a call without it."""
    return _cached(fn, fastmath=set(), forceinline=True)


def fast_kernel(fn):
    """A kernel compiled with the engine's flags: only for plain arithmetic that
    passes every test of ``tests/test_distributions.py`` so compiled (Normal:
    its loops take 20% less time at N = 1e3-1e4). With them, 12 other
    distributions failed 28 of those tests."""
    return _cached(fn, fastmath=set(FASTMATH), forceinline=True)


def jitable(fn):
    """Any other function: a ``logpdf``, a helper, a function of ``special``."""
    return _cached(fn, fastmath=set())
