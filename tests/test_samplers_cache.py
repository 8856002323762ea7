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


def test_runner_closes_over_the_variant_and_the_hash():
    for kind in (kernel.NUTS, kernel.HMC):
        for dense in (False, True):
            fn = kernel._make_run_chunk(kind, dense)
            cells = [c.cell_contents for c in fn.__closure__]
            assert kernel.SOURCE_HASH in cells
            assert (kind == kernel.NUTS) in cells and dense in cells
