"""The on-disk cache of generated modules.

numba cannot cache functions created with ``exec``, but it caches the
functions of a module imported from a file (``cache=True``). So every
generated module is written to ``<cache dir>/logdens_<key>.py`` and imported;
a second process finds the file, and numba finds its compiled functions.
numba keys its cache on that file alone, so the file name carries a hash of
everything the generated code depends on: its source, every source of the
``distributions`` package (kernels inline helpers of other modules, and
``distributions.jit`` sets their flags), ``logdens.event_transforms``, and the
logdens, numba and Python versions.
"""

import hashlib
import importlib.util
import os
import sys
import tempfile

import numba

import logdens
from logdens.distributions import jit
from logdens import event_transforms

# Loaded modules by key: a model compiled twice in one process reuses them.
_LOADED = {}


def cache_dir(override=None):
    """``override``, else ``$LOGDENS_CACHE_DIR``, else the user cache directory."""
    path = override or os.environ.get("LOGDENS_CACHE_DIR")
    if not path:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        path = os.path.join(base, "logdens")
    os.makedirs(path, exist_ok=True)
    return path


def key(source):
    """The cache key of a generated module."""
    h = hashlib.sha256(source.encode())
    versions = f"{logdens.__version__}|{numba.__version__}|{sys.version}"
    h.update(versions.encode())
    h.update(jit.SOURCES.encode())
    with open(event_transforms.__file__, "rb") as f:
        h.update(f.read())
    return h.hexdigest()[:24]


def load(source, directory=None):
    """Import the generated module for ``source``, writing it to the cache first if needed."""
    k = key(source)
    if k in _LOADED:
        return _LOADED[k]
    path = os.path.join(cache_dir(directory), f"logdens_{k}.py")
    if not os.path.exists(path):
        # Write then rename: a process reading the file never sees half of it,
        # and an existing file is never rewritten (numba's cache checks its mtime).
        fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(source)
        os.replace(tmp, path)
    name = f"logdens_generated_{k}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    _LOADED[k] = module
    return module
