"""numba's disk cache under saves at once (``distributions.cache_lock``)."""

import os
import threading
import time

import pytest
from numba.core import caching

from logdens.distributions import cache_lock


def _race(tmp_path, monkeypatch):
    """Two threads save two versions (keys ``a`` and ``b``) of one function into one
    cache at once, in the order that left numba's index naming ``b`` and its data
    file holding ``a``: both read the empty index, ``b`` writes index and data,
    ``a`` writes its data last. Returns what each key loads afterwards."""
    load_index, save_data = caching.IndexDataCacheFile._load_index, caching.IndexDataCacheFile._save_data

    def slow_load_index(self):
        overloads = load_index(self)
        time.sleep(0.2)  # the other thread reads the index meanwhile, unless a lock holds it
        return overloads

    def slow_save_data(self, name, data):
        if data == "a":
            time.sleep(0.6)
        save_data(self, name, data)

    monkeypatch.setattr(caching.IndexDataCacheFile, "_load_index", slow_load_index)
    monkeypatch.setattr(caching.IndexDataCacheFile, "_save_data", slow_save_data)
    cache = lambda: caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", "stamp")  # noqa: E731
    first = threading.Thread(target=lambda: cache().save("a", "a"))
    first.start()
    time.sleep(0.05)
    second = threading.Thread(target=lambda: cache().save("b", "b"))
    second.start()
    first.join(10)
    second.join(10)
    monkeypatch.undo()
    return cache().load("a"), cache().load("b")


def test_saves_at_once_keep_each_version_with_its_own_key(tmp_path, monkeypatch):
    assert _race(tmp_path, monkeypatch) == ("a", "b")


def test_without_the_lock_numba_loads_the_other_version(tmp_path, monkeypatch):
    """The race the lock closes: numba's own save names key ``b`` in the index
    and leaves version ``a`` in the data file (so this test can fail)."""
    monkeypatch.setattr(caching.IndexDataCacheFile, "save", cache_lock._NUMBA[0])
    monkeypatch.setattr(caching.IndexDataCacheFile, "load", cache_lock._NUMBA[1])
    loaded = _race(tmp_path, monkeypatch)
    assert loaded[1] == "a"  # key b runs a's code


def test_a_cache_directory_without_write_access_still_loads(tmp_path):
    """No lock file can be made there (and no process saves there): loads go on unlocked."""
    cache = caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", "stamp")
    cache.save("a", "a")
    (tmp_path / "f-1.py311.nbi.lock").unlink()
    tmp_path.chmod(0o500)
    try:
        if os.access(tmp_path, os.W_OK):
            pytest.skip("running as a user who writes anywhere")
        assert caching.IndexDataCacheFile(str(tmp_path), "f-1.py311", "stamp").load("a") == "a"
    finally:
        tmp_path.chmod(0o700)
