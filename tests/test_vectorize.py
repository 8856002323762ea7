"""The generated loops of seven models, and plain loops over the branch-free
kernels, stay vectorized (no timing: the LLVM IR).

numba 0.68 (LLVM 22) left the Poisson model's loop scalar where numba 0.65
vectorized it, and nothing but a timing on an AVX2 machine showed it (see
``distributions.spec``). These tests read the optimized IR of the generated
``value`` and ``logp_grad`` functions and look in the loop vectorizer's
``vector.body`` blocks for the kernel's own math on vectors of doubles: the
exponent shift of ``vmath.exp`` (``shl ... 52``), the exponent extraction of
``vmath.log`` (``lshr ... 52``), a division, or, for the Normal model's plain
arithmetic, a multiplication. The host build runs here; the haswell build
(AVX2, what most x86-64 users have) runs in a subprocess with its own numba
cache, so its code never lands in the user's cache, under
``benchmarks/machine.AVX2_ENV``: ``NUMBA_CPU_NAME=haswell`` alone keeps the
host's AVX-512, so that build's assembly is checked for ``zmm`` registers.

The kernel loops call a kernel's ``logpdf_grad`` with every argument varying
per element and store every partial, as the engine does for parameters; on
numba 0.68 the kernels that returned early left such loops scalar.
"""

import json
import os
import re
import subprocess
import sys
import tempfile

import numpy as np
import pytest

import logdens as ld
from logdens import distributions

sys.path.insert(0, os.path.join(os.path.dirname(__file__), os.pardir, "benchmarks"))
from machine import AVX2_ENV  # noqa: E402

#: Vector ops in a loop body, by the hallmark they stand for.
HALLMARKS = {
    "exp": r"= shl [^\n]*<(\d+) x i64>[^\n]*\b52\b",
    "log": r"= lshr [^\n]*<(\d+) x i64>[^\n]*\b52\b",
    "div": r"= fdiv [^\n]*<(\d+) x double>",
    "mul": r"= fmul [^\n]*<(\d+) x double>",
}

#: What each model's loop computes, hence what must appear vectorized.
EXPECTED = {
    "normal": {"mul"},
    "poisson": {"log", "div"},
    "bernoulli_logit": {"exp", "log", "div"},
    "logistic": {"exp", "log", "div"},
    "hierarchical": {"exp"},
    "mlp": {"exp", "div", "mul"},  # tanh's exp and division, the Normal kernel over a block
    "mv_normal": {"mul"},  # the triangular solves down a block's rows (``Spec.rows``)
}


#: Branch-free kernels whose loops must vectorize, and the math each one's loop shows.
KERNELS = {
    "Bernoulli": {"log", "div"},
    "Cauchy": {"log", "div"},
    "HalfCauchy": {"log", "div"},
    "Pareto": {"log", "div"},
    "Geometric": {"log", "div"},
    "Laplace": {"log", "div"},
    "LogNormal": {"log", "div"},
    "Logistic": {"exp", "log", "div"},
    "Uniform": {"log", "div"},
}

_KERNEL_LOOP = """
def loop(x, {params}, grad):
    lp = 0.0
    for i in range(x.size):
        r = logpdf_grad(x[i], {items}, keep{x_valid})
        lp += r[0]
{stores}
    return lp
"""


def kernel_loop(spec):
    """A compiled loop over ``spec.logpdf_grad`` with the engine's flags, the value
    and every argument varying per element; ``keep`` drops the data-only summands."""
    import numba

    from logdens.distributions.jit import FASTMATH
    params = [f"p{j}" for j in range(len(spec.params))]
    stores = "\n".join(f"        grad[{j}, i] = r[{j + 1}]" for j in range(len(params) + 1))
    source = _KERNEL_LOOP.format(params=", ".join(params), items=", ".join(f"{p}[i]" for p in params),
                                 x_valid=", True" if spec.takes_x_valid else "", stores=stores)
    namespace = {"logpdf_grad": spec.logpdf_grad,
                 "keep": tuple(any(d != "x" for d in s.depends) for s in spec.summands)}
    exec(source, namespace)
    loop = numba.njit(error_model="numpy", fastmath=set(FASTMATH))(namespace["loop"])
    ones = np.ones(8)
    loop(ones, *[ones] * len(params), np.empty((len(params) + 1, 8)))
    return loop


def kernel_report(package=distributions):
    """``{kernel: {"grad": hallmarks}}`` of the kernel loops of ``package``'s ``KERNELS``."""
    out = {}
    for name in KERNELS:
        loop = kernel_loop(getattr(package, name).spec)
        out[name] = {"grad": {**hallmarks(loop.inspect_llvm(loop.signatures[0])), "zmm": zmm_registers(loop)}}
    return out


def _models(n=64, seed=0):
    """The five models of the engine benchmarks, a small neural network and a
    multivariate normal."""
    rng = np.random.default_rng(seed)
    y01 = (rng.uniform(size=n) < 0.5).astype(float)
    models = {}
    m = models["normal"] = ld.Model()
    m.observe("y", ld.Normal(m.param("mu", shape=n), 1.5), rng.normal(size=n))
    m = models["poisson"] = ld.Model()
    m.observe("c", ld.Poisson(m.param("rate", shape=n)), rng.poisson(3.0, n).astype(float))
    m = models["bernoulli_logit"] = ld.Model()
    m.observe("y", ld.BernoulliLogit(m.param("eta", shape=n)), y01)
    m = models["logistic"] = ld.Model()
    eta = m.data("X", rng.normal(size=(n, 5))) @ m.param("beta", shape=5) + m.param("alpha")
    m.observe("y", ld.BernoulliLogit(eta), y01)
    m = models["hierarchical"] = ld.Model()
    z = m.param("z", shape=10)
    eta = (m.param("mu") + ld.exp(m.param("log_sigma")) * z)[m.data("group", rng.integers(0, 10, n))]
    eta = eta + m.param("b") * m.data("x", rng.normal(size=n))
    m.observe("c", ld.PoissonLog(eta), rng.poisson(2.0, n).astype(float))
    m = models["mlp"] = ld.Model()  # values with shape (logdens.shaped): blocks of rows
    W1, W2 = m.param("W1", ld.Normal(0, 1), shape=(4, 8)), m.param("W2", ld.Normal(0, 1), shape=(8, 3))
    out = ld.tanh(m.data("X", rng.normal(size=(n, 4))) @ W1 + m.param("b1", shape=8)) @ W2
    m.observe("Y", ld.Normal(out, m.param("sigma", ld.HalfNormal(1))), rng.normal(size=(n, 3)))
    m = models["mv_normal"] = ld.Model()
    scale = ld.diag_pre_multiply(m.param("sigma", ld.HalfNormal(1), shape=3),
                                 m.param("corr", shape=(3, 3), constraint=ld.cholesky_corr))
    m.observe("Y", ld.MvNormal(m.param("mu", shape=3), scale_tril=scale), rng.normal(size=(n, 3)))
    return models


def vector_body(ir):
    """The lines of the basic blocks the loop vectorizer made (``vector.body*``)."""
    keep, lines = False, []
    for line in ir.splitlines():
        label = re.match(r'^"?([\w.$-]+)"?:', line)
        if label:
            keep = "vector.body" in label.group(1)
        elif keep:
            lines.append(line)
    return "\n".join(lines)


def hallmarks(ir):
    """``{hallmark: widest vector it appears on}`` in the vectorized loop bodies of ``ir``."""
    body = vector_body(ir)
    found = {}
    for name, pattern in HALLMARKS.items():
        widths = [int(w) for w in re.findall(pattern, body)]
        if widths:
            found[name] = max(widths)
    return found


def _generated_functions(name, model, directory, functions=("value", "logp_grad")):
    """``functions`` of ``model``'s generated source (of ``value``, ``logp_grad`` and
    ``gradient``), imported from ``directory`` without numba's disk cache (compiled
    here, cached nowhere) and typed."""
    import importlib.util
    path = os.path.join(directory, f"generated_{name}.py")
    with open(path, "w") as f:
        f.write(model.compile(backend="python").source().replace("cache=True", "cache=False"))
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    array = "float64[::1], float64[::1], int64[::1]"
    module.value.compile(f"float64({array}, boolean)")
    if not module.logp_grad.signatures:
        module.logp_grad.compile(f"float64(float64[::1], {array})")
    if "gradient" in functions:
        module.gradient.compile(f"(float64[::1], {array}, boolean)")
    return {name: getattr(module, name) for name in functions}


def zmm_registers(dispatcher):
    """How often the assembly of ``dispatcher``'s first signature names an AVX-512 register."""
    return len(re.findall(r"%zmm\d+", dispatcher.inspect_asm(dispatcher.signatures[0])))


def report():
    """``{model: {function: hallmarks}}`` for this process's numba target, each
    function's hallmarks with its count of ``zmm`` registers."""
    out = {}
    with tempfile.TemporaryDirectory() as directory:
        for name, model in _models().items():
            functions = _generated_functions(name, model, directory)
            out[name] = {f: {**hallmarks(d.inspect_llvm(d.signatures[0])), "zmm": zmm_registers(d)}
                         for f, d in functions.items()}
    return out


def _min_width(cpu_name):
    """Doubles per vector expected: 4 with AVX2 (haswell, or a host that has it), else 2."""
    if cpu_name == "haswell":
        return 4
    import llvmlite.binding as llvm
    return 4 if "+avx2" in llvm.get_host_cpu_features().flatten() else 2


def check(found, min_width, expected=EXPECTED):
    """The model/function pairs whose expected hallmarks are missing or too narrow."""
    missing = []
    for model, functions in found.items():
        for function, marks in functions.items():
            for mark in sorted(expected[model]):
                if marks.get(mark, 0) < min_width:
                    missing.append(f"{model}.{function}: {mark} (found {marks})")
    return missing


def test_host_loops_are_vectorized():
    assert check(report(), _min_width(os.environ.get("NUMBA_CPU_NAME", "host"))) == []


def test_host_kernel_loops_are_vectorized():
    min_width = _min_width(os.environ.get("NUMBA_CPU_NAME", "host"))
    assert check(kernel_report(), min_width, KERNELS) == []


@pytest.mark.slow
def test_haswell_loops_are_vectorized(tmp_path):
    """A true AVX2 build: its loops vectorize 4 doubles wide and its assembly names
    no AVX-512 register (the haswell name alone kept the host's AVX-512)."""
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "numba"),
               LOGDENS_CACHE_DIR=str(tmp_path / "logdens"), **AVX2_ENV)
    code = "import json, test_vectorize as t; print(json.dumps([t.report(), t.kernel_report()]))"
    # 800 s: below pytest-timeout's 900 s, so that subprocess.run's error names the build
    result = subprocess.run([sys.executable, "-c", code], env=env, cwd=os.path.dirname(__file__),
                            capture_output=True, text=True, timeout=800)
    assert result.returncode == 0, result.stderr[-3000:]
    models, kernels = json.loads(result.stdout.splitlines()[-1])
    assert check(models, 4) == []
    assert check(kernels, 4, KERNELS) == []
    zmm = {f"{m}.{f}": marks["zmm"] for found in (models, kernels) for m, functions in found.items()
           for f, marks in functions.items() if marks["zmm"]}
    assert zmm == {}


def test_a_scalar_loop_is_reported():
    """The check itself can fail: a loop with a carried dependence through log and a
    division cannot vectorize, and shows none of the hallmarks."""
    import numba

    from logdens.distributions import vmath

    @numba.njit(error_model="numpy", fastmath={"reassoc", "contract"})
    def recurrence(x):
        acc = 1.0
        for i in range(x.size):
            acc = vmath.log(1.0 + acc * acc) + x[i] / (1.0 + acc)
        return acc

    recurrence(np.ones(8))
    marks = hallmarks(recurrence.inspect_llvm(recurrence.signatures[0]))
    assert marks == {}
    assert check({"poisson": {"value": marks}}, 2) == ["poisson.value: div (found {})",
                                                     "poisson.value: log (found {})"]


def test_the_gradient_alone_drops_the_values_log(tmp_path):
    """Poisson's summand x log(rate) - rate has the partial x / rate - 1: the
    generated ``gradient`` (no term adds to lp) keeps the division, vectorized,
    and has no ``vmath.log`` left anywhere, while ``logp_grad`` has both."""
    functions = _generated_functions("poisson", _models()["poisson"], str(tmp_path),
                                     ("logp_grad", "gradient"))
    ir = {f: d.inspect_llvm(d.signatures[0]) for f, d in functions.items()}
    min_width = _min_width(os.environ.get("NUMBA_CPU_NAME", "host"))
    assert hallmarks(ir["gradient"]).get("div", 0) >= min_width
    assert {"log", "div"} <= set(hallmarks(ir["logp_grad"]))
    assert not re.search(r"= lshr [^\n]*\b52\b", ir["gradient"])


def test_per_sample_outer_products_store_whole_vectors(tmp_path):
    """A network's per-sample rows: each row's outer products (``h[r, j] * g[r, q]``
    into the row) vectorize along the row, with plain vector stores, where
    constant bounds had LLVM unroll the row's loop and vectorize the loop
    around it with scatters (``logdens.opaque``; on AVX-512 hosts)."""
    import importlib.util

    rng = np.random.default_rng(1)
    m = ld.Model()
    W1, W2 = m.param("W1", ld.Normal(0, 1), shape=(4, 16)), m.param("W2", ld.Normal(0, 1), shape=(16, 8))
    out = ld.tanh(m.data("X", rng.normal(size=(40, 4))) @ W1) @ W2
    m.observe("Y", ld.Normal(out, 1.0), rng.normal(size=(40, 8)))
    source = m.compile(backend="python").source().replace("cache=True", "cache=False")
    path = tmp_path / "generated_rows.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("generated_rows", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    name = next(n for n in dir(module) if n.startswith("per_sample_Y") and "sparse" not in n)
    rows = getattr(module, name)
    rows.compile("(float64[::1], float64[::1], int64[::1], float64[:, ::1])")
    body = vector_body(rows.inspect_llvm(rows.signatures[0]))
    assert "masked.scatter" not in body
    widths = [int(w) for w in re.findall(r"store <(\d+) x double>", body)]
    assert widths and max(widths) >= _min_width(os.environ.get("NUMBA_CPU_NAME", "host"))
