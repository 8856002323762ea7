"""Stale numba cache files of the package are dropped."""

import os
import time

from samplers._cache import drop_stale_numba_cache


def test_drops_groups_older_than_the_newest_source(tmp_path):
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    old = [cache / "kernel.run_chunk-168.py311.nbi", cache / "kernel.run_chunk-168.py311.1.nbc"]
    mixed = [cache / "rng.uniform-70.py311.nbi", cache / "rng.uniform-70.py311.1.nbc"]
    for p in old + mixed:
        p.write_bytes(b"x")
    past = time.time() - 100
    for p in old + mixed[1:]:
        os.utime(p, (past, past))
    (tmp_path / "trajectory.py").write_text("# edited now\n")
    assert drop_stale_numba_cache(tmp_path) == 4
    assert not any(p.exists() for p in old + mixed)
    fresh = cache / "metric.velocity-62.py311.nbi"
    fresh.write_bytes(b"x")
    assert drop_stale_numba_cache(tmp_path) == 0 and fresh.exists()


def test_missing_directories_are_fine(tmp_path):
    assert drop_stale_numba_cache(tmp_path / "nowhere") == 0
