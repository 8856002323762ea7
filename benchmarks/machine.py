"""What a benchmark ran on: the CPU with its vector ISA, and the versions that
decide the generated code (numba, llvmlite), for every RESULTS.md table."""

import importlib.metadata
import os
import platform


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


def describe(pinned=""):
    """Lines for a benchmark's header: platform, CPU and ISA, the target numba
    compiles for (``NUMBA_CPU_NAME``), versions."""
    target = os.environ.get("NUMBA_CPU_NAME", "host")
    return "\n".join([f"platform: {platform.platform()}, Python {platform.python_version()}",
                      f"CPU: {cpu_model()} ({os.cpu_count()} logical CPUs{', ' + pinned if pinned else ''}); "
                      f"numba target: {target}",
                      versions()])
