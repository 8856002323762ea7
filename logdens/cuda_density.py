"""``CudaLogDensity``: a model whose log density and gradient run on a GPU.

``Model.compile(backend="cuda")`` makes one. Its data live on the device
(``set_data`` copies them once); ``log_density_gradient`` and the batch
calls launch the kernels of ``logdens.cuda_source``, the batch calls K
points in one launch per stage (a grid of rows x points). Inputs may be
numpy arrays (results come back as numpy arrays) or device arrays (cupy's,
or numba's: anything with ``__cuda_array_interface__``; results stay on the
device, as numba device arrays that cupy takes without a copy).

Everything else (the numba entry that samplers compiled on the CPU call,
per-sample gradients, the constants ``propto=False`` adds, constrained
values) comes from the CPU module, compiled as for ``backend="cpu"``. Rows
stay in the user's order (``sort_rows=False``): sorting them by group serves
the CPU's blocked scatter only, and the device reads the same arrays for
sums and for per-observation values.

With ``compile(backend="cuda", dtype=np.float32)`` the packed data live on
the device in half the bytes: ``fdata`` as float32 and ``idata`` (headers,
index arrays) as int32, or int64 when a value does not fit in int32 (an
offset past 2**31 floats): half the bytes of data an evaluation reads,
which is its time where the reads bound it (large N; ``bench_cuda.py``'s
section ``large32`` measures it). Only the storage is float32:
each value is widened to float64 where it is read
(``codegen.Lowering.data_read``), and theta, sums, gradients and log
densities stay float64 (numba types the distributions' float literals as
float64, so float32 arithmetic would need every kernel's constants typed
per target). The host's ``fdata`` holds the same rounded values, so every
method, on the device or on the CPU, computes the model at the data rounded
to float32 (``data()`` still returns the arrays as given). Rounding loses
precision (about 6e-8 relative), which is what float32 means; a finite
value beyond float32's range (3.4e38), or a nonzero one that would become 0
(below 1.4e-45), is a ValueError naming the array, index and value.
"""

import math
from typing import NamedTuple

import numpy as np
from numba import config, cuda

from logdens.cuda_device import THREADS, zero_rows
from logdens.cuda_source import workspace_sizes
from logdens.density import LogDensity, _checked_out, _real, _shared_error, _vector
from logdens.distributions.frozen import _first_violation
from logdens.layout import HEADER_WIDTH

#: Blocks along the rows at most per point: enough to fill the device for one
#: point of a large model; a batch of many points fills it with fewer each.
MAX_BLOCKS = 4096
#: Threads per multiprocessor that a launch aims at (2048 resident, four waves):
#: beyond that, threads take more rows each rather than more blocks, so each
#: block's sums and flushes serve more rows.
THREADS_PER_SM = 4 * 2048
#: Threads a multiprocessor holds at once: many points (where even two
#: blocks of ``THREADS`` each would pass ``THREADS_PER_SM``) get one block
#: each, of as many threads as fill one such wave. On an H200 (RESULTS.md,
#: session 14), 4096 points of 1000 rows took 0.051 us per point with one
#: block of 64 threads against 0.197 with two of 256 (logistic regression;
#: 0.028 against 0.054 for the hierarchical Poisson model): fewer threads
#: take more rows each and sum fewer partial results per block.
RESIDENT_PER_SM = 2048
#: Points per launch at most: a grid's second dimension is at most 65535.
MAX_POINTS = 65535
#: Batch sizes (gradient or value) whose device buffers a density keeps.
KEPT_BUFFERS = 4


def _on_device(array):
    """Whether ``array`` lives on the device: cupy's, numba's (the simulator's too)."""
    return hasattr(array, "__cuda_array_interface__") or getattr(array, "__cuda_ndarray__", False)


def _device(array):
    """``array`` (on the device) as a numba device array, without a copy."""
    return array if getattr(array, "__cuda_ndarray__", False) else cuda.as_cuda_array(array)


def _threads(rows):
    """Threads per block for ``rows`` rows: a power of two, from a warp (the
    sums shuffle within whole warps) up to ``THREADS``; in the simulator, which
    runs each thread in Python, from 1 up to 32."""
    threads, fewest = (32, 1) if config.ENABLE_CUDASIM else (THREADS, 32)
    while threads > fewest and threads // 2 >= rows:
        threads //= 2
    return threads


def _multiprocessors():
    """The device's multiprocessor count (one in the simulator, which has no device)."""
    if config.ENABLE_CUDASIM:
        return 1
    return cuda.get_current_device().MULTIPROCESSOR_COUNT


class _DeviceData(NamedTuple):
    """A data set on the device (``DataSet.device``): its packed arrays, and the
    rows a launch spreads over its threads (the longest data array, ``dim``
    or a parameter's constrained size)."""

    fdata: object
    idata: object
    rows: int


def _span(array):
    """``(first byte, end byte)`` of a device array's elements, from its CUDA array
    interface (the simulator's arrays: their numpy array's, of the same form)."""
    face = getattr(array, "__cuda_array_interface__", None) or array.__array_interface__
    shape, itemsize, start = face["shape"], np.dtype(face["typestr"]).itemsize, face["data"][0]
    if 0 in shape:
        return start, start
    strides = face.get("strides") or [itemsize * math.prod(shape[k + 1:]) for k in range(len(shape))]  # None: C order
    reach = [(n - 1) * s for n, s in zip(shape, strides)]
    return start + sum(r for r in reach if r < 0), start + sum(r for r in reach if r > 0) + itemsize


def _overlap(a, b):
    """Whether device arrays ``a`` and ``b`` may share memory: their spans
    overlap (the host's exact test needs the memory; a bounds check errs only
    towards refusing a strided array that interleaves with the other)."""
    (a0, a1), (b0, b1) = _span(a), _span(b)
    return a0 < a1 and b0 < b1 and a0 < b1 and b0 < a1  # both hold elements, and their spans meet


class _Buffers:
    """Device arrays for evaluations of ``k`` points: inputs, outputs, sums and
    workspaces. ``sums`` is zero between calls (``finish`` zeroes it)."""

    def __init__(self, k, dim, sizes):
        self.thetas = cuda.device_array((k, dim))
        self.grads = cuda.device_array((k, dim))
        self.lps = cuda.device_array(k)
        self.sums = cuda.to_device(np.zeros(k))
        self.workspaces = [cuda.device_array((k, max(size, 1))) for size in sizes.values()]


class CudaLogDensity(LogDensity):
    """A ``LogDensity`` whose value, gradient, batches, pointwise log-likelihood
    and per-sample rows run on the GPU (see the module docstring)."""

    #: Samplers of many chains (``chees``) use ``log_density_gradient_batch`` by default.
    batches_on_device = True
    #: A GPU thread's buffers are local arrays of compile-time lengths.
    fixed_whole_sizes = True

    def __init__(self, model, layout, module, source, kernels, kernel_source, dtype=np.float64):
        self._kernels, self._kernel_source = kernels, kernel_source
        #: The dtype of the float data on the device: float64, or float32 (the module docstring).
        self.dtype = np.dtype(dtype)
        self._sizes = {True: workspace_sizes(layout, True), False: workspace_sizes(layout, False)}
        self._buffers = {}
        self._threads_wanted = THREADS_PER_SM * _multiprocessors()
        self._resident = RESIDENT_PER_SM * _multiprocessors()
        super().__init__(model, layout, module, source, sort_rows=False)

    def _new_data(self, arrays, coords, old_arrays, old_coords):
        """``LogDensity._new_data`` with the data's copy on the device (``DataSet.device``)."""
        single = self.dtype == np.float32
        if single:
            _check_float32_range(self.layout, arrays)  # before anything changes
        data = super()._new_data(arrays, coords, old_arrays, old_coords)
        fdata = data.fdata.astype(self.dtype, copy=False) if data.fdata.size else np.zeros(1, self.dtype)
        if single:  # the host's copy holds the device's values (the module docstring)
            data.fdata[:] = fdata[:data.fdata.size]
        idata = data.idata if data.idata.size else np.zeros(1, dtype=np.int64)
        rows = data.idata[2:HEADER_WIDTH * len(self.layout.data):HEADER_WIDTH]  # each data array's (layout.pack)
        sizes = [p.constrained_size for p in self.layout.params.values()]
        idata = _narrow(idata) if single else idata
        return data._replace(device=_DeviceData(cuda.to_device(fdata), cuda.to_device(idata),
                                                max([1, self.dim] + sizes + list(rows))))

    def _grid(self, k, rows):
        """``((blocks along the rows, k points), threads per block)`` for data of ``rows`` rows."""
        threads = _threads(rows)
        enough = math.ceil(self._threads_wanted / (k * threads))  # blocks per point that fill the device
        if enough <= 2:  # many points: one block each, one wave in all (``RESIDENT_PER_SM``)
            per_point = max(1, self._resident // k)
            return (1, k), min(threads, _threads(1 << (per_point.bit_length() - 1)))  # a power of two, rounded down
        return (max(1, min(math.ceil(rows / threads), MAX_BLOCKS, enough)), k), threads

    def _buffer(self, k, gradient):
        """The device buffers for ``k`` points, kept for the ``KEPT_BUFFERS`` batch
        sizes used last (a sampler reuses one; a sweep over sizes frees the rest)."""
        key = (k, gradient)
        buffers = self._buffers.pop(key, None) or _Buffers(k, self.dim, self._sizes[gradient])
        self._buffers[key] = buffers  # the most recent last
        while len(self._buffers) > KEPT_BUFFERS:
            del self._buffers[next(iter(self._buffers))]
        return buffers

    def _run(self, device, thetas, gradient, jacobian):
        """Evaluate the rows of the device array ``thetas`` on the data ``device``
        (``_DeviceData``); return the buffers."""
        k = thetas.shape[0]
        b = self._buffer(k, gradient)
        if k <= MAX_POINTS:
            self._launch(device, thetas, b.grads, b.sums, b.lps, b.workspaces, gradient, jacobian)
            return b
        for start in range(0, k, MAX_POINTS):  # the grid holds MAX_POINTS points at most
            part = slice(start, start + MAX_POINTS)
            self._launch(device, thetas[part], b.grads[part], b.sums[part], b.lps[part],
                         [w[part] for w in b.workspaces], gradient, jacobian)
        return b

    def _launch(self, device, thetas, grads, sums, lps, workspaces, gradient, jacobian):
        """The stages' launches for the points ``thetas`` (at most ``MAX_POINTS``)."""
        k = thetas.shape[0]
        grid, threads = self._grid(k, device.rows)
        points = (math.ceil(k / 32), 32)
        kern = self._kernels
        if gradient:
            if kern.PREPARE[True]:
                kern.prepare[grid, threads](thetas, grads, sums, jacobian, *workspaces)
            kern.terms[grid, threads](thetas, grads, sums, jacobian, device.fdata, device.idata, *workspaces)
            kern.finish[points](thetas, grads, sums, lps, jacobian, *workspaces)
        else:
            if kern.PREPARE[False]:
                kern.prepare_value[grid, threads](thetas, sums, jacobian, *workspaces)
            kern.terms_value[grid, threads](thetas, sums, jacobian, device.fdata, device.idata, *workspaces)
            kern.finish_value[points](thetas, sums, lps, jacobian, *workspaces)

    def _workspaces(self, device, thetas):
        """The value buffers of one point with its constrained values filled in
        (``prepare_value`` without the Jacobian: ``sums`` stays zero)."""
        b = self._buffer(1, False)
        if self._kernels.PREPARE[False]:
            grid, threads = self._grid(1, device.rows)
            self._kernels.prepare_value[grid, threads](thetas, b.sums, False, *b.workspaces)
        return b

    def _points(self, thetas, what):
        """``(device array (K, dim), whether it came from the host)``."""
        if _on_device(thetas):
            thetas = _device(thetas)
            if thetas.ndim != 2 or thetas.shape[1] != self.dim or thetas.dtype != np.float64:
                raise ValueError(f"{what} must be a float64 array of shape (K, {self.dim}), got "
                                 f"{thetas.dtype} of shape {thetas.shape}")
            return thetas, False
        thetas = _real(thetas, what)
        if thetas.ndim != 2 or thetas.shape[1] != self.dim:
            raise ValueError(f"{what} must have shape (K, {self.dim}), got {thetas.shape}")
        b = self._buffer(len(thetas), True)
        b.thetas.copy_to_device(thetas)
        return b.thetas, True

    def _single(self, theta):
        if _on_device(theta):
            theta = _device(theta)
            if theta.shape != (self.dim,) or theta.dtype != np.float64:
                raise ValueError(f"theta must be a float64 array of shape ({self.dim},), got {theta.dtype} "
                                 f"of shape {theta.shape}")
            return theta.reshape((1, self.dim)), False
        return self._points(_vector(theta, self.dim).reshape(1, self.dim), "theta")

    # ----- log density and gradient -------------------------------------
    def log_density(self, theta, propto=True, jacobian=True):
        thetas, host = self._single(theta)
        data = self._data
        lp = float(self._run(data.device, thetas, False, jacobian).lps.copy_to_host()[0])
        return lp if propto else self._with_constant(data, lp, self._host(theta))

    def log_density_gradient(self, theta, propto=True, jacobian=True, out=None):
        """``(log density, gradient)``: the gradient a numpy array (into ``out``
        when given) for a host ``theta``, a device array for a device one."""
        return self._value_and_gradient(theta, propto, jacobian, out, "log_density_gradient")

    def gradient(self, theta, jacobian=True, out=None):
        """The gradient alone (from the value and gradient kernels)."""
        return self._value_and_gradient(theta, True, jacobian, out, "gradient")[1]

    def _value_and_gradient(self, theta, propto, jacobian, out, method):
        """``log_density_gradient``, called by ``method`` (named in its errors)."""
        thetas, host = self._single(theta)
        if host and out is not None:  # refused as on the CPU, though theta is on the device by now
            _checked_out(out, (self.dim,), method, self._host(theta))
        data = self._data
        b = self._run(data.device, thetas, True, jacobian)
        lp = float(b.lps.copy_to_host()[0])
        lp = lp if propto else self._with_constant(data, lp, self._host(theta))
        if not host:
            return lp, _copy(b.grads)[0]
        grad = np.empty(self.dim) if out is None else out
        if grad.flags.c_contiguous:
            b.grads[0].copy_to_host(grad)  # straight into the caller's array
        else:
            grad[:] = b.grads[0].copy_to_host()
        return lp, grad

    def log_density_gradient_batch(self, thetas, propto=True, jacobian=True):
        """Log densities ``(K,)`` and gradients ``(K, dim)`` of the rows of
        ``thetas``, K points in one launch per stage."""
        points, host = self._points(thetas, "thetas")
        data = self._data
        b = self._run(data.device, points, True, jacobian)
        return (self._log_densities(data, b.lps, thetas, host, propto),
                b.grads.copy_to_host() if host else _copy(b.grads))

    def device_gradients(self, thetas):
        """Log densities ``(K,)`` and gradients ``(K, dim)`` of the device array
        ``thetas`` in this density's own device buffers, no copy and no wait: a
        sampler's loop on the device (``samplers.chees_device``) reads them
        before its next call, which overwrites them."""
        b = self._run(self._data.device, _device(thetas), True, True)
        return b.lps, b.grads

    def log_density_batch(self, thetas, propto=True, jacobian=True):
        points, host = self._points(thetas, "thetas")
        data = self._data
        return self._log_densities(data, self._run(data.device, points, False, jacobian).lps, thetas, host, propto)

    def _log_densities(self, data, lps, thetas, host, propto):
        """The buffer ``lps`` as the caller gets it: a numpy array for host
        ``thetas``, else a new device array; with ``propto=False`` plus the
        constants of ``data`` (computed on the host, once per data set)."""
        if propto:
            return lps.copy_to_host() if host else _copy(lps)
        full = self._with_constants(data, lps.copy_to_host(), self._host(thetas))
        return full if host else cuda.to_device(full)

    def _host(self, theta):
        return _device(theta).copy_to_host() if _on_device(theta) else np.asarray(theta, dtype=float)

    def _pointwise(self, data, theta):
        """Per-observation log-likelihood of every observed term, computed on the
        device (numpy arrays by term name, as the CPU backend's)."""
        thetas, _ = self._single(theta)
        device = data.device
        b, (grid, threads) = self._workspaces(device, thetas), self._grid(1, device.rows)
        host_theta, out = self._host(theta).reshape(-1), {}
        for term in self.model.terms:
            if term.per_observation:
                n = data.n_obs[term.name]
                values = cuda.device_array(max(n, 1))
                kernel = getattr(self._kernels, f"pointwise_{self.layout.term_idents[term.name]}")
                kernel[grid, threads](thetas, device.fdata, device.idata, values, False, *b.workspaces)
                values = values.copy_to_host()[:n]
                dropped = self._dropped_summands(data, term.name, host_theta)
                out[term.name] = values if dropped is None else values + dropped
        return out

    def per_sample_gradient(self, theta, name, sparse=False, out=None):
        """Dense rows computed on the device (into ``out`` when it is a device
        array of shape (n_obs, dim), which is returned; else copied to a numpy
        array); sparse rows, and terms without a row kernel
        (``cuda_source.per_sample_on_device``), from the CPU module."""
        term = self._observed(name)
        kernel = getattr(self._kernels, f"per_sample_{self.layout.term_idents[term.name]}", None)
        if sparse or kernel is None or (out is not None and not _on_device(out)):
            host_out = None if out is not None and _on_device(out) else out
            rows = super().per_sample_gradient(self._host(theta).reshape(-1), name, sparse, host_out)
            if host_out is out:
                return rows
            _device(out).copy_to_device(rows)
            return out
        data = self._data
        n = data.n_obs[term.name]
        rows = cuda.device_array((n, self.dim)) if out is None else _device(out)
        if rows.shape != (n, self.dim) or rows.dtype != np.float64:
            raise ValueError(f"per_sample_gradient: out must have shape {(n, self.dim)} and dtype float64, got "
                             f"{rows.dtype} of shape {rows.shape}")
        thetas, host = self._single(theta)
        if not host and _overlap(thetas, rows):  # a host theta was copied to the device
            raise _shared_error("per_sample_gradient")
        b, (grid, threads) = self._workspaces(data.device, thetas), self._grid(1, data.device.rows)
        if rows.size:
            zero_rows[min(math.ceil(rows.size / THREADS), MAX_BLOCKS), THREADS](rows)
        kernel[grid, threads](thetas, data.device.fdata, data.device.idata, rows, *b.workspaces)
        return rows if out is not None else rows.copy_to_host()

    def kernel_source(self):
        """The generated CUDA kernels' source."""
        return self._kernel_source


def _check_float32_range(layout, arrays):
    """A ValueError for the first float value of ``arrays`` (name -> array, those
    ``set_data`` takes) that float32 cannot hold: finite but beyond its range
    (it would be inf on the device), or nonzero but below its smallest
    subnormal (it would be 0: a positive observation on a support's boundary).
    Integers all fit (float32 reaches 3.4e38)."""
    for name, value in arrays.items():
        slot, array = layout.data.get(name), np.asarray(value)
        if slot is None or not slot.as_value or array.dtype.kind != "f":
            continue  # read by no kernel as a value, or no float that can overflow
        with np.errstate(over="ignore", under="ignore"):
            single = array.astype(np.float32)
        for lost, what in ((np.isinf(single) & np.isfinite(array), "overflows"), ((single == 0) & (array != 0), "underflows")):
            if np.any(lost):
                raise ValueError(f"data {name!r}: {_first_violation(name, array, ~lost)} {what} float32 (its "
                                 f"range {float(np.finfo(np.float32).smallest_subnormal):.3g} to "
                                 f"{float(np.finfo(np.float32).max):.7g}); compile(backend='cuda', dtype=np.float32) "
                                 "keeps the data as float32: rescale them or use the default float64")


def _narrow(idata):
    """``idata`` as int32 when every value fits (half the bytes), else as it is (int64)."""
    info = np.iinfo(np.int32)
    return idata.astype(np.int32) if info.min <= idata.min() and idata.max() <= info.max else idata


def _copy(device_array):
    """A new device array holding ``device_array`` (the buffers are reused by the next call)."""
    out = cuda.device_array(device_array.shape)
    out.copy_to_device(device_array)
    return out
