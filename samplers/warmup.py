"""Compile the samplers ahead of the first run, and say so when a run compiles them.

The samplers' compiled loops take any model (they call its numba entry
through a first-class function type) and numba caches them on disk, so
they are compiled once per install: with every cache empty that is about
7.6 of the 9.9 CPU-seconds of the first ``ld.nuts`` on eight schools.
``python -m logdens warmup`` (:func:`warmup`) does it at set-up, so that a
user's first model starts sampling at once; a run that compiles all the
same says so (:mod:`samplers.compile_notice`, which also sees what this
module's warm-up compiles).
"""

import os
import sys
import tempfile
import time
from typing import Callable, NamedTuple

import numba

from .compile_notice import watching_compiles


class Entry(NamedTuple):
    """Sampler code to compile: what it is, and a call that compiles (or loads) it."""

    label: str
    compile: Callable[[], object]


def entries(everything=False):
    """What ``ld.nuts`` compiles with its defaults (the loop of the diagonal
    metric with nutpie's warmup, the NUTS transition, the step-size search),
    and with ``everything`` the other samplers and variants after it, each
    compiling only what the entries before it have not.  (Imported here:
    the samplers' modules import this one.)"""
    from . import advi_kernel, approximation, external, kernel
    from .chees import chunk_runner as chees_runner  # samplers.chees is the function

    def runner(kind, dense, adaptation):
        return lambda: kernel.chunk_runner(kind, dense, adaptation)

    default = [Entry("NUTS, diagonal metric, nutpie's warmup (ld.nuts's default)",
                     runner(kernel.NUTS, False, kernel.ADAPT_NUTPIE))]
    if not everything:
        return default
    return default + [
        Entry("NUTS, diagonal metric, Stan's warmup (adaptation='stan')",
              runner(kernel.NUTS, False, kernel.ADAPT_STAN)),
        Entry("NUTS, dense metric (metric='dense')", runner(kernel.NUTS, True, kernel.ADAPT_STAN)),
        Entry("static HMC (ld.hmc)", runner(kernel.HMC, False, kernel.ADAPT_NUTPIE)),
        Entry("ChEES-HMC (ld.chees)", chees_runner),
        Entry("ADVI (ld.advi)", lambda: (advi_kernel.steps_kernel(), advi_kernel.elbo_kernel())),
        Entry("log densities of many draws (Pathfinder, ADVI, init='pathfinder')",
              approximation._rows_kernel),
        Entry("external Python log densities", external.python_callback),
    ]


class WarmupError(RuntimeError):
    """The warm-up could not leave its compiled code where later processes find it."""


def _check_writable(path, what, fix):
    """WarmupError unless a file can be created in ``path`` (made if missing)."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as err:
        raise WarmupError(f"{what} {path} is not writable ({err.strerror or err}): compiled "
                          f"code could not be kept for later processes. {fix}") from err


def check_cache_dirs():
    """The cache directories later processes read, checked writable: numba's
    (``$NUMBA_CACHE_DIR`` when set; else numba picks one per source folder and
    :func:`warmup` checks what it saved) and logdens' model cache.

    Returns
    -------
    tuple of str
        ``(numba's directory or None, logdens' directory)``.
    """
    from logdens.cache import configured_dir
    numba_dir = numba.config.CACHE_DIR or None
    if numba_dir:
        _check_writable(numba_dir, "NUMBA_CACHE_DIR", "Set NUMBA_CACHE_DIR to a directory you "
                        "can write (or unset it to use numba's default).")
    logdens_dir = configured_dir()
    _check_writable(logdens_dir, "logdens' cache directory", "Set LOGDENS_CACHE_DIR to a "
                    "directory you can write.")
    return numba_dir, logdens_dir


def _unsaved(dispatchers):
    """The disk-cached functions among ``dispatchers`` whose cache index numba
    did not write (their directory refused it)."""
    files = [getattr(getattr(d, "_cache", None), "_cache_file", None) for d in dispatchers]
    return [d for d, f in zip(dispatchers, files)
            if f is not None and not os.path.exists(f._index_path)]


def _compile(entry):
    """``(compiled?, wall s, CPU s)`` of one entry; WarmupError if what it
    compiled was not cached."""
    t, c = time.perf_counter(), time.process_time()
    with watching_compiles() as seen:
        try:
            entry.compile()
        except RuntimeError as err:  # numba: "cannot cache function ...: no locator available"
            if "cannot cache" not in str(err):
                raise
            raise WarmupError(f"{entry.label}: {err}. Set NUMBA_CACHE_DIR to a directory you "
                              "can write.") from err
    unsaved = _unsaved(seen.dispatchers)
    if unsaved:
        paths = sorted({d._cache._cache_path for d in unsaved})
        raise WarmupError(f"{entry.label}: numba did not save its cache in {', '.join(paths)}. "
                          "Set NUMBA_CACHE_DIR to a directory you can write.")
    return bool(seen.dispatchers), time.perf_counter() - t, time.process_time() - c


def warmup(everything=False, stream=None, extra=()):
    """Compile (or load from numba's disk cache) the samplers' code, printing
    each entry and its time; a second call in a fresh process only loads.

    Parameters
    ----------
    everything : bool
        Also the other samplers and variants, not only what ``ld.nuts``
        compiles with its defaults (:func:`entries`).
    extra : sequence of Entry
        Compiled after the samplers' (the models' kernels: samplers know no
        model, :mod:`logdens.warmup`).
    stream : file, optional
        Where to print (stdout).

    Raises
    ------
    WarmupError
        A cache directory cannot be written.
    """
    stream = stream or sys.stdout
    numba_dir, logdens_dir = check_cache_dirs()
    print(f"numba cache: {numba_dir or 'beside the package sources (numba default)'}; "
          f"logdens model cache: {logdens_dir}", file=stream, flush=True)
    total = time.perf_counter()
    for entry in [*entries(everything), *extra]:
        print(f"  {entry.label}: ", end="", file=stream, flush=True)
        compiled, wall, cpu = _compile(entry)
        print(f"{'compiled' if compiled else 'loaded from cache'} in {wall:.1f} s "
              f"({cpu:.1f} s CPU)", file=stream, flush=True)
    print(f"done in {time.perf_counter() - total:.1f} s; later processes load this code from "
          "the cache", file=stream, flush=True)
