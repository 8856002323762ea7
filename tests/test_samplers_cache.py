"""numba's cache key of the kernels follows every source file of the package."""

import shutil
from pathlib import Path

from logdens.samplers import kernel
from logdens.samplers._cache import source_hash


def test_hash_changes_with_any_source_file(tmp_path):
    for name in ("kernel.py", "trajectory.py"):
        (tmp_path / name).write_text(f"# {name}\n")
    before = source_hash(tmp_path)
    assert source_hash(tmp_path) == before
    (tmp_path / "trajectory.py").write_text("# edited\n")
    assert source_hash(tmp_path) != before
    (tmp_path / "notes.txt").write_text("not a source\n")
    assert source_hash(tmp_path) == source_hash(tmp_path)


def test_hash_of_a_copy_is_the_same(tmp_path):
    package = Path(kernel.__file__).parent
    copy = tmp_path / "copy"
    copy.mkdir()
    for path in package.glob("*.py"):
        shutil.copy(path, copy / path.name)
    assert source_hash(copy) == kernel.SOURCE_HASH


def _cells(fn):
    return [c.cell_contents for c in fn.__closure__]


def test_entry_points_close_over_the_variant_and_the_hash():
    for dense, nutpie in ((False, True), (False, False), (True, False)):
        cells = _cells(kernel._make_run_chunk(dense, nutpie))
        assert kernel.SOURCE_HASH in cells and dense in cells and nutpie in cells
    for kind in (kernel.NUTS, kernel.HMC):
        cells = _cells(kernel._make_transition(kind))
        assert kernel.SOURCE_HASH in cells and (kind == kernel.NUTS) in cells
    assert _cells(kernel._make_step_size_search()) == [kernel.SOURCE_HASH]
