"""``distributions.jit``: the kernels' fixed flags and their disk cache."""

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import numba
import numpy as np
from numba.core import caching

from logdens import distributions
from logdens.distributions import jit, normal, special
from logdens.distributions.jit import FASTMATH


def _package_hash():
    digest = hashlib.sha256()
    for path in sorted(Path(distributions.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def test_a_decorated_function_is_stamped_with_the_whole_package():
    """numba would check only ``normal.py``; the stamp also changes with any
    other file of the package (``special``, ``vmath``), so no stale kernel loads."""
    impl = caching.CompileResultCacheImpl(normal.logpdf_grad)
    assert isinstance(impl.locator, jit._PackageStampLocator)
    own_stamp, package = impl.locator.get_source_stamp()
    assert package == _package_hash()
    numbas = type(impl.locator._inner).from_function(normal.logpdf_grad, normal.__file__)
    assert own_stamp == numbas.get_source_stamp()  # numba's own stamp of the file, whatever its form
    assert impl.locator.get_cache_path()  # numba's own directory for the file


def test_other_functions_keep_numbas_locator():
    def plain(x):
        return x + 1.0

    impl = caching.CompileResultCacheImpl(plain)
    assert not isinstance(impl.locator, jit._PackageStampLocator)


def test_the_kernel_gives_the_same_bits_whatever_its_callers_flags():
    """Flags are the kernel's own: compiled first from a caller without fastmath
    and then from one with the engine's, it returns the same values."""
    def loop(x, out):
        for i in range(x.size):
            out[i] = normal.logpdf_grad(x[i], 0.3, 1.7, (True, True, True))[2]

    x = np.random.default_rng(0).normal(size=1000)
    plain, fast = np.empty(1000), np.empty(1000)
    numba.njit(error_model="numpy")(loop)(x, plain)
    numba.njit(fastmath=set(FASTMATH), error_model="numpy")(loop)(x, fast)
    np.testing.assert_array_equal(plain, fast)
    # arcp: a multiply by 1/scale**2, a few ulp from the quotient; atol for x near loc
    np.testing.assert_allclose(plain, (x - 0.3) / 1.7 ** 2, rtol=1e-14, atol=1e-16)


def test_special_functions_are_cached_without_fastmath():
    impl = caching.CompileResultCacheImpl(special.lchoose)
    assert isinstance(impl.locator, jit._PackageStampLocator)


@jit.jitable
def _reciprocal(x):
    return 1.0 / x


def test_flags_do_not_come_from_the_first_caller():
    """numba's default error model in the caller would make the division raise
    (and cost the logistic regression half its speed when cached that way);
    the decorated function keeps numpy's: 1 / 0 is inf."""
    @numba.njit
    def caller(x):
        return _reciprocal(x)

    assert caller(0.0) == np.inf
    assert caller(4.0) == 0.25


def test_a_kernel_numba_cannot_cache_is_compiled_with_a_warning(tmp_path):
    """numba's warning that a function cannot be cached (with ``NUMBA_OPT=0``
    the kernels hold dynamic globals) names the locator's file: it used to
    raise ``AttributeError`` instead, so no model compiled at ``NUMBA_OPT=0``."""
    script = ("import numpy as np, logdens as ld\n"
              "m = ld.Model()\n"
              "m.observe('y', ld.Poisson(ld.exp(m.param('mu'))), np.zeros(3))\n"
              f"print(m.compile(cache_dir={str(tmp_path / 'models')!r}).log_density_gradient(np.zeros(1))[0])\n")
    env = {**os.environ, "NUMBA_OPT": "0", "NUMBA_CACHE_DIR": str(tmp_path / "numba")}
    result = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert float(result.stdout.split()[-1]) == -3.0
