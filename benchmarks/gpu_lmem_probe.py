"""Probe (session 15): the MLP kernels' local memory per thread, and their times
before and after CU_CTX_LMEM_RESIZE_TO_MAX on the current context."""
import sys
import numpy as np
from numba import cuda
sys.path.insert(0, "benchmarks")
from bench_cuda import gpu_time
from bench_mlp import network

m, X, Y = network(256, np.random.default_rng(0))
gpu = m.compile(backend="cuda")
theta = np.random.default_rng(1).normal(size=gpu.dim) * 0.3
point, rows = cuda.to_device(theta[None]), cuda.device_array((256, gpu.dim))
gpu._run(point, True, True); gpu.per_sample_gradient(theta, "Y", out=rows)
k = gpu._kernels
for name in [n for n in vars(k) if n.startswith(("terms", "per_sample"))]:
    fn = getattr(k, name)
    try:
        print(name, "local bytes/thread", list(fn.get_local_mem_per_thread().values()), "regs",
              list(fn.get_regs_per_thread().values()), flush=True)
    except Exception as e:
        print(name, "?", e)
def times(label):
    t = gpu_time(lambda: gpu._run(point, True, True), budget=0.3)
    r = gpu_time(lambda: gpu.per_sample_gradient(theta, "Y", out=rows), budget=0.3)
    v = gpu_time(lambda: gpu._run(point, False, True), budget=0.3)
    print(label, f"value+grad {t*1e6:.1f} us, rows {r*1e6:.1f} us, value {v*1e6:.1f} us", flush=True)
times("default")
from cuda.bindings import driver as drv
print(drv.cuCtxGetFlags())
print(drv.cuCtxSetFlags(int(drv.cuCtxGetFlags()[1]) | int(drv.CUctx_flags.CU_CTX_LMEM_RESIZE_TO_MAX)))
print(drv.cuCtxGetFlags())
times("LMEM_RESIZE_TO_MAX")
