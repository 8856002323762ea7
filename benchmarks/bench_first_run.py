"""The first ``ld.nuts`` of a process: cold (empty caches), warm, and a new model.

Run: python benchmarks/bench_first_run.py [--rounds 5] [--roots OLD,NEW]
     python benchmarks/bench_first_run.py --events       (compile events and LLVM time, one cold run)
     python benchmarks/bench_first_run.py --after-warmup [--events]   (set-up, then a first run)

Each round runs three fresh processes on eight schools (``draws=20, tune=20``,
one chain): *cold*, with empty numba and logdens cache directories (the first
run after installing); *warm*, the same directories again (every later
process); *new model*, the warm numba directory and an empty logdens one (a
model never compiled before, with the samplers' code in numba's cache).  Each
reports the wall and CPU seconds of the first ``ld.nuts`` call, after the
imports that call would make (``arviz_base``, ``xarray``, ``dask.array``:
about 1 s of the warm first call, none of it the samplers' code), and the
model's ``compile()``.  Rounds alternate the code under test when
``--roots`` names directories that each hold a ``logdens`` package (a
snapshot of the package with the samplers in ``logdens/samplers``), so that
old and new code see the same load; on a shared machine read the medians
and the paired differences, not single runs.  ``--events`` lists numba's
compile events of one cold run, slowest first, with the time spent in each
function alone (its callees' compiles left out), then the wall time the
first ``ld.nuts``'s numba libraries spend in LLVM (function passes, module
passes, machine code), in total and for the eight that spend the most.

``--after-warmup`` times set-up as the README runs it: in empty cache
directories, ``python -m logdens warmup`` (*warmup*: its process's wall and
CPU seconds, imports included), then a fresh process's first ``ld.nuts``
on eight schools (*after warmup*; warmup compiles the samplers and the
distributions' kernels through a model of its own, so this one is new to
the caches), beside *cold* (the same process with no warmup before
it) in the same round.  ``total`` is the model's ``compile()`` plus the
first ``ld.nuts``.  With ``--events`` it lists the compile events of the
process after warmup: what a first run still compiles.
"""

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

CODE = r"""
import json, time
C, W = time.process_time, time.perf_counter
import numpy as np
import logdens as ld
y = np.array([28, 8, -3, 7, -1, 1, 18, 12.0])
s = np.array([15, 10, 16, 11, 9, 11, 10, 18.0])
t0, c0 = W(), C()
m = ld.Model()
mu = m.param("mu", ld.Normal(0, 5))
tau = m.param("tau", ld.HalfCauchy(5))
z = m.param("z", ld.Normal(0, 1), shape=8)
m.observe("y", ld.Normal(mu + tau * z, s), y)
density = m.compile()
t1, c1 = W(), C()
import arviz_base, xarray, logdens.samplers  # noqa: E401
try:
    import dask.array  # xarray imports it on its first array when installed
except ImportError:
    pass
t2, c2 = W(), C()
EVENTS
ld.nuts(density, draws=20, tune=20, chains=1, seed=1, progress=False)
t3, c3 = W(), C()
print(json.dumps({"compile": t1 - t0, "compile_cpu": c1 - c0, "imports": t2 - t1,
                  "nuts": t3 - t2, "nuts_cpu": c3 - c2, "total": t1 - t0 + t3 - t2,
                  "total_cpu": c1 - c0 + c3 - c2}))
"""

EVENTS = r"""
from numba.core import event
records, stack = [], []
class _Listener(event.Listener):
    def on_start(self, ev):
        stack.append([C(), 0.0])
    def on_end(self, ev):
        t, inner = stack.pop()
        dt = C() - t
        if stack:
            stack[-1][1] += dt
        fn = ev.data["dispatcher"].py_func
        records.append((dt - inner, dt, f"{fn.__module__}.{fn.__qualname__}"))
event.register("numba:compile", _Listener())
import collections
from numba.core import codegen
llvm = collections.defaultdict(float)  # (phase, library) -> wall seconds in LLVM
def _timed(cls, method, phase):
    inner = getattr(cls, method)
    def timed(self, *args):
        t = W()
        try:
            return inner(self, *args)
        finally:
            llvm[phase, self.name] += W() - t
    setattr(cls, method, timed)
_timed(codegen.CPUCodeLibrary, "_optimize_functions", "function passes")
_timed(codegen.CPUCodeLibrary, "_optimize_final_module", "module passes")
_timed(codegen.JITCodeLibrary, "_finalize_specific", "machine code")
def _report():
    for a, b, n in sorted(records)[::-1]:
        print(f"{a:6.2f} {b:6.2f}  {n}")
    libraries = collections.defaultdict(float)
    for (phase, name), t in llvm.items():
        libraries[name] += t
    phases = {ph: sum(t for (q, _), t in llvm.items() if q == ph) for ph in dict.fromkeys(q for q, _ in llvm)}
    print("LLVM (wall s): " + ", ".join(f"{ph} {t:.2f}" for ph, t in phases.items())
          + f"; total {sum(phases.values()):.2f} over {len(libraries)} libraries")
    for name, t in sorted(libraries.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  {t:6.2f}  {name}")
import atexit
atexit.register(_report)
"""


def environment(root, numba_dir, logdens_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=numba_dir, LOGDENS_CACHE_DIR=logdens_dir,
               PYTHONWARNINGS="ignore")
    if root:
        env["PYTHONPATH"] = root
    return env


def warm_up(root, numba_dir, logdens_dir):
    """``python -m logdens warmup`` in one process: its wall and CPU seconds."""
    before, t = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run([sys.executable, "-m", "logdens", "warmup"], check=True, capture_output=True,
                   env=environment(root, numba_dir, logdens_dir), cwd=tempfile.gettempdir(),
                   timeout=1800)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return {"warmup": time.perf_counter() - t, "warmup_cpu": cpu}


def run(root, numba_dir, logdens_dir, events=False):
    """One process; its JSON line as a dict (the events table is printed)."""
    env = environment(root, numba_dir, logdens_dir)
    code = CODE.replace("EVENTS", EVENTS if events else "")
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=1800,
                         capture_output=True, text=True, cwd=tempfile.gettempdir())
    lines = out.stdout.splitlines()
    row = next(json.loads(line) for line in lines if line.startswith("{"))
    if events:
        print("  self  with callees (CPU s)  function")
        print("\n".join(line for line in lines if not line.startswith("{")))
    return row


def rounds(roots, n):
    """``{root: {kind: [row, ...]}}`` over ``n`` interleaved rounds."""
    results = {root: {"cold": [], "warm": [], "new model": []} for root in roots}
    for _ in range(n):
        for root in roots:
            with tempfile.TemporaryDirectory() as tmp:
                numba_dir = os.path.join(tmp, "numba")
                for kind, logdens_dir in (("cold", "a"), ("warm", "a"), ("new model", "b")):
                    row = run(root, numba_dir, os.path.join(tmp, logdens_dir))
                    results[root][kind].append(row)
    return results


def after_warmup_rounds(roots, n, events=False):
    """``{root: {kind: [row, ...]}}``: the warmup command, the first run after
    it, and a cold first run, each in empty cache directories, per round."""
    results = {root: {"warmup": [], "after warmup": [], "cold": []} for root in roots}
    for _ in range(n):
        for root in roots:
            with tempfile.TemporaryDirectory() as tmp:
                dirs = os.path.join(tmp, "numba"), os.path.join(tmp, "logdens")
                results[root]["warmup"].append(warm_up(root, *dirs))
                results[root]["after warmup"].append(run(root, *dirs, events=events))
            if events:
                continue
            with tempfile.TemporaryDirectory() as tmp:
                results[root]["cold"].append(run(root, os.path.join(tmp, "numba"),
                                                 os.path.join(tmp, "logdens")))
    return results


def report(results):
    roots = list(results)
    for kind in next(iter(results.values())):
        if not results[roots[0]][kind]:
            continue
        print(f"{kind}: median (min) over rounds, seconds")
        for root in roots:
            rows = results[root][kind]
            cells = [f"{key} {statistics.median(r[key] for r in rows):6.3f} "
                     f"({min(r[key] for r in rows):.3f})" for key in rows[0]]
            print(f"  {root or 'installed':>24}: " + ", ".join(cells))
        if len(roots) == 2 and "nuts_cpu" in results[roots[0]][kind][0]:
            a, b = (results[r][kind] for r in roots)
            diff = [x["nuts_cpu"] - y["nuts_cpu"] for x, y in zip(a, b)]
            print(f"  paired nuts_cpu difference (first - second): median "
                  f"{statistics.median(diff):.3f}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--roots", default="",
                   help="comma-separated directories holding a logdens package to compare")
    p.add_argument("--events", action="store_true", help="compile events of one cold run "
                   "(with --after-warmup: of one run after warmup)")
    p.add_argument("--after-warmup", action="store_true",
                   help="python -m logdens warmup, then a first run, beside a cold one")
    args = p.parse_args(argv)
    roots = args.roots.split(",") if args.roots else [""]
    if args.after_warmup:
        results = after_warmup_rounds(roots, 1 if args.events else args.rounds, args.events)
        report(results)
        for root in roots:
            after, cold = results[root]["after warmup"], results[root]["cold"]
            if cold:
                ratio = statistics.median(c["total_cpu"] / a["total_cpu"] for a, c in zip(after, cold))
                print(f"  {root or 'installed'}: cold / after-warmup total CPU, median "
                      f"{ratio:.1f}x")
        return
    if args.events:
        for root in roots:
            with tempfile.TemporaryDirectory() as tmp:
                print(root or "installed", run(root, os.path.join(tmp, "n"),
                                               os.path.join(tmp, "l"), events=True))
        return
    report(rounds(roots, args.rounds))


if __name__ == "__main__":
    main()
