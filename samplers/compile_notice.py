"""Say when a run compiles sampler code, and see what numba compiles.

Both listen to numba's ``numba:compile`` event, which numba raises only when
a function is not loaded from its cache: a warm run prints nothing, at no
cost. The samplers' modules import this one; the warm-up that compiles them
ahead (:mod:`samplers.warmup`) imports them.
"""

import sys
from contextlib import contextmanager, nullcontext

from numba.core import event

#: Printed before a run compiles sampler code (:func:`announcing_compile`).
MESSAGE = ("logdens: compiling {what} for this machine; this takes seconds and happens once per "
           "install (later runs load it from numba's cache). Run `python -m logdens warmup` at "
           "set-up to do it ahead.")


class _Compiles(event.Listener):
    """Records the functions numba compiles (``numba:compile`` starts only on a
    cache miss); calls ``on_first`` before the first one."""

    def __init__(self, on_first=None):
        self.dispatchers = []
        self._on_first = on_first

    def on_start(self, ev):
        if not self.dispatchers and self._on_first is not None:
            self._on_first()
        self.dispatchers.append(ev.data["dispatcher"])

    def on_end(self, ev):
        pass


@contextmanager
def watching_compiles(on_first=None):
    """Context manager yielding a record (``.dispatchers``) of what numba
    compiles in the block; ``on_first()`` runs before the first compile."""
    listener = _Compiles(on_first)
    with event.install_listener("numba:compile", listener):
        yield listener


def announcing_compile(what, enabled=True, stream=None):
    """Context manager: before numba compiles anything in the block, print
    :data:`MESSAGE` about ``what`` to ``stream`` (stderr); nothing when all
    loads from the cache or ``enabled`` is false."""
    if not enabled:
        return nullcontext()
    return watching_compiles(lambda: print(MESSAGE.format(what=what),
                                           file=stream or sys.stderr, flush=True))
