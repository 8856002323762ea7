"""Ctrl-C during a run: stop the chains at once, keep the draws, finish the output.

Python delivers SIGINT to the main thread only, between bytecodes, while the
chains run in compiled loops on other threads.  :class:`Interrupt` replaces
the default handler (which raises ``KeyboardInterrupt`` wherever the main
thread happens to be) for the length of a run:

- while sampling, a press sets a flag that the compiled trajectory reads
  after every leapfrog step, so even a trajectory of ``2**40`` steps ends
  promptly; nothing is raised, so no press can escape while the chains
  wind down;
- afterwards, a press raises ``KeyboardInterrupt`` only inside an
  :meth:`Interrupt.abortable` block (an optional part of the output, such as
  the pointwise log-likelihood), which the caller catches and reports; the
  draws themselves are always returned.

An error that cannot be raised where it happens (an external log density
called back from a compiled loop, :mod:`samplers.external`) stops the chains
the same way: :meth:`Interrupt.fail` records it and sets the flag, and the
runner raises it once the draws made before it are collected
(:meth:`Interrupt.raise_failure`).
"""

import signal
import threading
from contextlib import contextmanager

import numpy as np


class Interrupt:
    """The stop flag shared with the compiled chains, and the SIGINT handler that sets it.

    Attributes
    ----------
    flag : ndarray of int64, shape (1,)
        Nonzero asks every chain to stop (see
        :class:`samplers.trajectory.TreeWork`); also set when a chain fails.
    presses : int
        Ctrl-C presses seen while the handler was installed.
    failure : BaseException or None
        The first error recorded by :meth:`fail`.
    """

    def __init__(self):
        self.flag = np.zeros(1, dtype=np.int64)
        self.presses = 0
        self.failure = None
        self._abortable = False
        self._presses_allowed = 0

    def stop(self):
        """Ask every chain to stop (from any thread)."""
        self.flag[0] = 1

    def fail(self, err):
        """Record ``err`` (the first one is kept) and stop every chain: for code
        that cannot raise, such as a callback from a compiled loop."""
        if self.failure is None:
            self.failure = err
        self.stop()

    def raise_failure(self, idata=None):
        """Raise the error recorded by :meth:`fail`, if any.

        Parameters
        ----------
        idata : xarray.DataTree, optional
            The output of the draws made before the error; it becomes the
            error's ``idata`` attribute, as an interrupted run returns them.
        """
        if self.failure is None:
            return
        if idata is not None:
            self.failure.idata = idata
            if hasattr(self.failure, "add_note"):  # Python >= 3.11
                self.failure.add_note("(raised by the log density while sampling; the draws "
                                      "made before it are in this exception's `idata`)")
        raise self.failure

    def _handle(self, signum, frame):
        self.presses += 1
        self.stop()
        if self._abortable:
            self._abortable = False
            raise KeyboardInterrupt

    @contextmanager
    def handling_sigint(self):
        """Install the handler for the block (main thread only: elsewhere SIGINT
        never arrives, and ``signal.signal`` would raise)."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return
        previous = signal.signal(signal.SIGINT, self._handle)
        try:
            yield self
        finally:
            signal.signal(signal.SIGINT, previous)

    @contextmanager
    def abortable(self):
        """A block that a Ctrl-C cuts short with ``KeyboardInterrupt``.

        A press while the handler is installed but outside such a block only
        counts (see :attr:`presses`).
        """
        self._abortable = True
        try:
            yield
        finally:
            self._abortable = False

    def wrap_up(self):
        """Mark the end of sampling: from now on, any press but the one that
        stopped sampling cuts the optional parts of the output short."""
        self._presses_allowed = min(self.presses, 1)

    def optional(self, what, build, missing):
        """Return ``build()``, or None after noting ``what`` and why in ``missing``.

        For the optional parts of the output after sampling: ``build`` fails
        when it raises, when a Ctrl-C cuts it short, or when Ctrl-C was
        pressed since :meth:`wrap_up` (beyond the press that stopped
        sampling): whoever presses Ctrl-C while the output is built wants it
        now, so the remaining parts are skipped.

        Parameters
        ----------
        what : str
            The part, as the report names it.
        build : callable
            No arguments.
        missing : list of str
            Appended to on failure.
        """
        if self.presses > self._presses_allowed:
            missing.append(f"{what} (skipped after Ctrl-C)")
            return None
        try:
            with self.abortable():
                return build()
        except KeyboardInterrupt:
            missing.append(f"{what} (interrupted by Ctrl-C)")
        except Exception as err:
            missing.append(f"{what} ({type(err).__name__}: {err})")
        return None
