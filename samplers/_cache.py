"""Drop numba cache files of this package that are older than its sources.

numba keys a cached function on its own file only: when ``trajectory.py``
changes, the cached ``kernel.run_chunk`` (which has the old trajectory code
compiled into it) would still be loaded.  Before anything is compiled or
loaded, every ``.nbi``/``.nbc`` file of this package older than the newest
source file is removed, so an edit anywhere recompiles everything (once).
Installed copies whose sources do not change are unaffected.
"""

import os
from pathlib import Path


def drop_stale_numba_cache(package_dir):
    """Remove this package's numba cache files older than its newest source.

    Parameters
    ----------
    package_dir : str or Path
        Directory of the package (its ``__pycache__`` holds numba's files).

    Returns
    -------
    int
        Number of files removed.
    """
    package_dir = Path(package_dir)
    try:
        newest = max(p.stat().st_mtime for p in package_dir.glob("*.py"))
        cached = [p for p in (package_dir / "__pycache__").iterdir()
                  if p.suffix in (".nbi", ".nbc")]
    except (OSError, ValueError):
        return 0
    groups = {}
    for path in cached:  # an index (.nbi) and its data files (.nbc) go together
        groups.setdefault(path.name.split(".py3")[0], []).append(path)
    removed = 0
    for paths in groups.values():
        try:
            stale = min(p.stat().st_mtime for p in paths) < newest
        except OSError:
            continue
        for path in paths if stale else ():
            try:
                os.remove(path)
                removed += 1
            except OSError:  # another process got there first, or read-only
                pass
    return removed
