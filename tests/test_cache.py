"""``logdens.cache``: private directories, verified entries, atomic writes, fallback."""

import collections
import errno
import math
import os
import re
import stat
import tempfile
import warnings

import numpy as np
import pytest

import logdens as ld
from logdens import cache
from logdens.engine import generate_source
from logdens.layout import Layout

posix_only = pytest.mark.skipif(not hasattr(os, "geteuid"), reason="owners and modes are POSIX")
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                             reason="giving a directory to another user needs root")
OTHER_UID = 12345


@pytest.fixture(autouse=True)
def fresh_process(monkeypatch):
    """Each test starts as a new process would: nothing loaded, no fallback chosen."""
    monkeypatch.setattr(cache, "_LOADED", {})
    monkeypatch.setattr(cache, "_FALLBACK", {}, raising=False)


def _model():
    m = ld.Model()
    mu = m.param("mu", ld.Normal(0, 1))
    m.observe("y", ld.Normal(mu, 1), np.array([0.5]))
    return m


def _entry_path(directory, m):
    """The path and source of ``m``'s cache entry in ``directory``."""
    source = generate_source(m, Layout(m))
    return directory / f"logdens_{cache.key(source)}.py", source


def _check_density(density):
    """The model's log density at mu = 0: two standard normal terms, at 0 and 0.5."""
    lp, grad = density.log_density_gradient(np.zeros(1), propto=False)
    assert lp == pytest.approx(-math.log(2 * math.pi) - 0.125, rel=1e-12)
    assert grad == pytest.approx([0.5], rel=1e-12)


def _planted(marker):
    """Module text that leaves ``marker`` behind if it runs."""
    return f"open({str(marker)!r}, 'w').close()\nraise RuntimeError('planted code ran')\n"


def test_a_planted_entry_is_replaced_not_run(tmp_path):
    m = _model()
    path, source = _entry_path(tmp_path, m)
    marker = tmp_path.parent / f"{tmp_path.name}-marker"
    path.write_text(_planted(marker))
    _check_density(m.compile(cache_dir=tmp_path))
    assert not marker.exists()
    assert path.read_text() == source


def test_an_edited_entry_is_replaced(tmp_path):
    m = _model()
    path, source = _entry_path(tmp_path, m)
    edited = source.replace("lp = 0.0", "lp = 100.0")
    assert edited != source
    path.write_text(edited)
    _check_density(m.compile(cache_dir=tmp_path))
    assert path.read_text() == source


def test_a_truncated_entry_is_replaced(tmp_path):
    m = _model()
    path, source = _entry_path(tmp_path, m)
    path.write_text(source[:len(source) // 2])
    _check_density(m.compile(cache_dir=tmp_path))
    assert path.read_text() == source


def test_a_file_swapped_before_the_import_is_not_run(tmp_path, monkeypatch):
    """The generated source runs, never the file: a swap between writing (or
    checking) the entry and importing it changes nothing."""
    m = _model()
    path, _ = _entry_path(tmp_path, m)
    marker = tmp_path.parent / f"{tmp_path.name}-marker"
    replace = os.replace

    def replace_then_swap(src, dst, **kwargs):
        replace(src, dst, **kwargs)
        if os.path.abspath(dst) == str(path):
            path.write_text(_planted(marker))

    monkeypatch.setattr(os, "replace", replace_then_swap)
    _check_density(m.compile(cache_dir=tmp_path))
    assert not marker.exists()


def test_a_valid_entry_is_loaded_as_it_is(tmp_path):
    """Not rewritten: numba's compiled functions beside it stay valid."""
    m = _model()
    m.compile(cache_dir=tmp_path)
    path, _ = _entry_path(tmp_path, m)
    before = os.stat(path)
    cache._LOADED.clear()
    _check_density(m.compile(cache_dir=tmp_path))
    after = os.stat(path)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


def test_a_module_that_fails_to_compile_leaves_no_entry(tmp_path):
    source = ("import numba\n\n\n@numba.njit('float64(float64)', cache=True)\n"
              "def f(x):\n    return x.no_such_attribute\n")
    with pytest.raises(Exception, match="no_such_attribute"):
        cache.load(source, tmp_path)
    leftovers = [p for p in tmp_path.rglob("*") if p.name.startswith("logdens_")]
    assert leftovers == []


@posix_only
def test_a_new_directory_is_private(tmp_path):
    directory = tmp_path / "new" / "cache"
    _model().compile(cache_dir=directory)
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


@posix_only
@pytest.mark.parametrize("mode", [0o777, 0o1777, 0o770, 0o722])
def test_a_directory_others_can_write_is_refused(tmp_path, mode):
    """Refused, not tightened: what others wrote there would stay, and the
    directory may be a shared one such as /tmp."""
    directory = tmp_path / "shared"
    directory.mkdir()
    os.chmod(directory, mode)
    with pytest.raises(PermissionError, match=re.escape(f"{directory} has mode {mode:o}")) as refused:
        _model().compile(cache_dir=directory)
    assert "LOGDENS_CACHE_DIR" in str(refused.value)
    assert stat.S_IMODE(os.stat(directory).st_mode) == mode
    assert list(directory.iterdir()) == []


@posix_only
def test_a_directory_others_can_only_read_is_made_private(tmp_path):
    directory = tmp_path / "readable"
    directory.mkdir()
    os.chmod(directory, 0o755)
    _check_density(_model().compile(cache_dir=directory))
    assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700


@as_root
def test_a_directory_of_another_user_is_refused(tmp_path):
    m = _model()
    directory = tmp_path / "theirs"
    directory.mkdir(mode=0o700)
    path, _ = _entry_path(directory, m)
    marker = tmp_path / "marker"
    path.write_text(_planted(marker))
    os.chown(directory, OTHER_UID, OTHER_UID)
    with pytest.raises(PermissionError, match=re.escape(f"{directory} is owned by uid {OTHER_UID}")):
        m.compile(cache_dir=directory)
    assert not marker.exists()


@as_root
def test_a_pycache_of_another_user_is_refused(tmp_path):
    """numba loads the pickles in ``__pycache__`` unverified."""
    pycache = tmp_path / "__pycache__"
    pycache.mkdir(mode=0o700)
    os.chown(pycache, OTHER_UID, OTHER_UID)
    with pytest.raises(PermissionError, match=re.escape(f"{pycache} is owned by uid {OTHER_UID}")):
        _model().compile(cache_dir=tmp_path)


def _failing_mkstemp(directory):
    """``tempfile.mkstemp`` refusing to create files in ``directory``, as it
    would for a user other than root in a read-only directory."""
    mkstemp = tempfile.mkstemp

    def failing(*args, dir=None, **kwargs):
        if dir is not None and os.path.abspath(dir) == str(directory):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), dir)
        return mkstemp(*args, dir=dir, **kwargs)
    return failing


def _failing_replace(directory):
    """``os.replace`` failing for destinations in ``directory`` (a full disk)."""
    replace = os.replace

    def failing(src, dst, **kwargs):
        if os.path.dirname(os.path.abspath(dst)) == str(directory):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), dst)
        return replace(src, dst, **kwargs)
    return failing


def test_a_read_only_directory_falls_back_with_a_warning(tmp_path, monkeypatch):
    directory = tmp_path / "read-only"
    directory.mkdir(mode=0o700)
    os.chmod(directory, 0o500)
    monkeypatch.setattr(tempfile, "mkstemp", _failing_mkstemp(directory))
    with pytest.warns(UserWarning, match=re.escape(f"logdens cache directory {directory} cannot be used")):
        density = _model().compile(cache_dir=directory)
    _check_density(density)
    assert list(directory.iterdir()) == []
    fallback = os.path.dirname(density._module.__file__)
    assert stat.S_IMODE(os.stat(fallback).st_mode) == 0o700
    m = _model()
    m.param("other", ld.Normal(0, 1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # one warning per directory and process
        other = m.compile(cache_dir=directory)
    assert os.path.dirname(other._module.__file__) == fallback


def test_a_failed_write_leaves_no_temporary_file(tmp_path, monkeypatch):
    directory = tmp_path / "full"
    monkeypatch.setattr(os, "replace", _failing_replace(directory))
    with pytest.warns(UserWarning, match="No space left on device"):
        _check_density(_model().compile(cache_dir=directory))
    assert list(directory.iterdir()) == []


def _compile_and_call(directory):
    """``_model()`` compiled in ``directory`` (as a new process would) and its
    functions that save to numba's cache called: ``logp_grad``, ``value``, ``constants``."""
    cache._LOADED.clear()
    density = _model().compile(cache_dir=directory)
    _check_density(density)
    assert density.log_density(np.zeros(1)) == pytest.approx(-0.125, rel=1e-12)
    return density


def test_counts_say_what_was_compiled_loaded_and_reused(tmp_path, monkeypatch):
    """``cache.COUNTS``, which the test suite's summary reports (tests/conftest.py)."""
    monkeypatch.setattr(cache, "COUNTS", collections.Counter())
    _compile_and_call(tmp_path)  # an empty directory: every function compiled
    compiled = cache.COUNTS["compiled"]
    assert compiled >= 3 and cache.COUNTS == {"compiled": compiled}
    _model().compile(cache_dir=tmp_path)
    assert cache.COUNTS == {"compiled": compiled, "reused": 1}
    cache.COUNTS.clear()
    _compile_and_call(tmp_path)  # as a new process: every function loaded
    assert cache.COUNTS == {"loaded": compiled}


def _pickles(directory):
    """numba's index and data files in ``directory``'s ``__pycache__``."""
    return sorted(p for p in (directory / "__pycache__").glob("logdens_*") if p.suffix in (".nbi", ".nbc"))


@pytest.mark.parametrize("damage", [lambda data: data[:len(data) // 2], lambda data: b"garbage"],
                         ids=["truncated", "garbage"])
def test_numba_pickles_that_fail_to_load_are_removed_and_compiled_again(tmp_path, damage):
    """numba loads ``logp_grad``'s pickles at load and the others' at first
    call: every failed load is a bad entry, removed, compiled again, with a warning."""
    _compile_and_call(tmp_path)
    pickles = _pickles(tmp_path)
    assert {p.name.split(".")[1].split("-")[0] for p in pickles} >= {"logp_grad", "value"}
    for p in pickles:
        p.write_bytes(damage(p.read_bytes()))
    with pytest.warns(UserWarning, match="numba's cache of logp_grad .* could not be loaded") as caught:
        _compile_and_call(tmp_path)
    assert any("numba's cache of value" in str(w.message) for w in caught)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # saved again: the next process loads them
        _compile_and_call(tmp_path)


def test_numba_pickles_that_cannot_be_saved_leave_a_working_model(tmp_path, monkeypatch):
    """A disk with room for the entry but not for numba's pickles (the temporary
    directory on it too): the compiled functions stay in memory, with a warning."""
    from numba.core import caching

    def full(self, path):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), path)

    monkeypatch.setattr(caching.IndexDataCacheFile, "_open_for_write", full)
    with pytest.warns(UserWarning, match="numba's cache of logp_grad .* could not be saved .*No space left"):
        _compile_and_call(tmp_path)
    assert _pickles(tmp_path) == []


@as_root
def test_a_symlink_of_another_user_is_refused_not_followed(tmp_path):
    """Whoever owns the link can point it at any directory of yours, which
    logdens would fill and make private: the link is refused, its target untouched."""
    target = tmp_path / "mine"
    target.mkdir()
    os.chmod(target, 0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    os.lchown(link, OTHER_UID, OTHER_UID)
    with pytest.raises(PermissionError, match=re.escape(f"{link} is a symbolic link owned by uid {OTHER_UID}")):
        _model().compile(cache_dir=link)
    assert stat.S_IMODE(os.stat(target).st_mode) == 0o755
    assert list(target.iterdir()) == []


@posix_only
def test_a_symlink_of_your_own_is_followed(tmp_path):
    target = tmp_path / "mine"
    (tmp_path / "link").symlink_to(target)
    target.mkdir(mode=0o700)
    _check_density(_model().compile(cache_dir=tmp_path / "link"))
    assert list(target.glob("logdens_*.py"))


@posix_only
def test_a_symlink_seen_by_another_user_is_refused_as_a_link(tmp_path, monkeypatch):
    """The same without root: to a process of another uid, the link (ours) is refused."""
    target = tmp_path / "mine"
    target.mkdir(mode=0o755)
    link = tmp_path / "link"
    link.symlink_to(target)
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + OTHER_UID)
    with pytest.raises(PermissionError, match=re.escape(f"{link} is a symbolic link owned by uid {os.getuid()}")):
        _model().compile(cache_dir=link)
    assert list(target.iterdir()) == []
