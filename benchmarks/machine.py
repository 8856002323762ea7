"""What a benchmark ran on: the CPU with its vector ISA, and the versions that
decide the generated code (numba, llvmlite), for every RESULTS.md table; and
the true AVX2 build most users' machines get.

``NUMBA_CPU_NAME=haswell`` alone does not build AVX2 code: numba keeps the
host's feature flags unless ``NUMBA_CPU_FEATURES`` is set too, so on an
AVX-512 host it still emits ``zmm`` code. ``AVX2_ENV`` sets both; run a
benchmark under it with ``python benchmarks/machine.py --avx2 python
benchmarks/bench_mlp.py`` (``tests/test_vectorize.py`` builds with it too).
"""

import importlib.metadata
import os
import platform
import sys

#: Haswell's LLVM features (AVX2 and FMA), with every AVX-512 extension off.
HASWELL_FEATURES = ",".join(
    ["+64bit", "+avx", "+avx2", "+bmi", "+bmi2", "+cmov", "+cx16", "+cx8", "+f16c", "+fma",
     "+fsgsbase", "+fxsr", "+invpcid", "+lzcnt", "+mmx", "+movbe", "+pclmul", "+popcnt", "+rdrnd",
     "+sahf", "+sse", "+sse2", "+sse3", "+sse4.1", "+sse4.2", "+ssse3", "+xsave", "+xsaveopt",
     "-avx512f", "-avx512bw", "-avx512cd", "-avx512dq", "-avx512vl"])

#: The environment of a true AVX2 build: both variables, never the name alone.
AVX2_ENV = {"NUMBA_CPU_NAME": "haswell", "NUMBA_CPU_FEATURES": HASWELL_FEATURES}


def cpu_model():
    """The CPU's model name and its widest vector extensions, from /proc/cpuinfo."""
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                if line.startswith("flags"):
                    flags = set(line.split(":", 1)[1].split())
                    simd = [ext for ext in ("avx2", "fma", "avx512f") if ext in flags]
                    return f"{model} [{' '.join(simd)}]"
    except OSError:
        pass
    return model


def versions(names=("numpy", "numba", "llvmlite", "jax")):
    """``"numpy 2.4.6, numba 0.68.1, ..."``; a missing package says so."""
    out = []
    for name in names:
        try:
            out.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{name} absent")
    return ", ".join(out)


def numba_target():
    """The target numba compiles for, as a table should name it: ``host``,
    ``haswell (AVX2)`` under ``AVX2_ENV``, or a CPU name that kept the host's
    features (what ``NUMBA_CPU_NAME`` alone builds: not that CPU's code)."""
    name = os.environ.get("NUMBA_CPU_NAME", "host")
    features = os.environ.get("NUMBA_CPU_FEATURES")
    if features is None:
        return name if name == "host" else f"{name} with the host's features (NUMBA_CPU_FEATURES unset)"
    return f"{name} (AVX2)" if features == HASWELL_FEATURES else f"{name} ({features})"


def pin_one_core():
    """Pin this process to its last allowed CPU (where the OS can); the words for
    ``describe``'s ``pinned``."""
    if not hasattr(os, "sched_setaffinity"):
        return ""
    core = max(os.sched_getaffinity(0))
    os.sched_setaffinity(0, {core})
    return f"pinned to CPU {core}"


def describe(pinned=""):
    """Lines for a benchmark's header: platform, CPU and ISA, the target numba
    compiles for (``numba_target``), versions."""
    target = numba_target()
    return "\n".join([f"platform: {platform.platform()}, Python {platform.python_version()}",
                      f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs{', ' + pinned if pinned else ''}); "
                      f"numba target: {target}",
                      versions()])


if __name__ == "__main__":  # python benchmarks/machine.py --avx2 COMMAND ...: COMMAND as a true AVX2 build
    if len(sys.argv) < 3 or sys.argv[1] != "--avx2":
        sys.exit("usage: python benchmarks/machine.py --avx2 COMMAND [ARGS ...]")
    os.execvpe(sys.argv[2], sys.argv[2:], {**os.environ, **AVX2_ENV})
