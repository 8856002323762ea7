"""A hash of the package's sources, for numba's disk-cache key of the kernels.

numba keys a cached function on its own source file only, yet a compiled
function contains the code of every function it calls: the cached NUTS
transition of :mod:`samplers.kernel` holds the trajectory code of
``trajectory.py``, so an edit there would leave a stale transition in the
cache.  The package therefore caches only its entry points (the chunk
runners, the transitions and the step-size search they call, and the
external-density callback; helpers are compiled with them), and each is a
closure over this hash.  numba's cache key includes the values of a
closure's variables, so an edit anywhere in the package, or in the
distributions package whose code they compile in (the generator of
``distributions.random``, ``vmath``: its ``jit.SOURCES``), compiles them
anew while an installed copy keeps loading them.  Nothing is deleted; entries for
old sources stay in numba's index until ``kernel.py`` itself changes, which
resets it.
"""

import hashlib
from pathlib import Path

from ..distributions.jit import SOURCES as DISTRIBUTION_SOURCES


def source_hash(package_dir):
    """Return the SHA-256 (hex) of the package's ``*.py`` files, names and contents,
    and of the distributions' sources.

    Parameters
    ----------
    package_dir : str or Path

    Returns
    -------
    str
    """
    digest = hashlib.sha256()
    for path in sorted(Path(package_dir).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(DISTRIBUTION_SOURCES.encode())
    return digest.hexdigest()
