"""Device functions the generated CUDA kernels call (``logdens.cuda_source``)."""

from numba import config, cuda

#: Threads per block of the row kernels: a power of two, at most 32 warps.
THREADS = 256


@cuda.jit(device=True)
def _tree_add(buffer, value, target, index):
    """``block_add`` for the simulator, which has no warp shuffles: a tree sum
    over the block in the shared ``buffer`` (a barrier per level)."""
    tid = cuda.threadIdx.x
    buffer[tid] = value
    cuda.syncthreads()
    half = cuda.blockDim.x // 2
    while half > 0:
        if tid < half:
            buffer[tid] += buffer[tid + half]
        cuda.syncthreads()
        half //= 2
    if tid == 0:
        cuda.atomic.add(target, index, buffer[0])
    cuda.syncthreads()  # the buffer is free again for the next sum


@cuda.jit(device=True)
def _warp_add(buffer, value, target, index):
    """``block_add`` on a device: each warp's sum by shuffles, the warps' sums
    through ``buffer`` (two barriers, where the tree took one per level: a
    logistic regression's 22 sums per block made 4096 points of 1000 rows
    take 5.5 times JAX's time)."""
    for offset in (16, 8, 4, 2, 1):
        value += cuda.shfl_down_sync(0xFFFFFFFF, value, offset)
    tid = cuda.threadIdx.x
    if tid % 32 == 0:
        buffer[tid // 32] = value
    cuda.syncthreads()
    if tid == 0:
        total = 0.0
        for w in range(cuda.blockDim.x // 32):
            total += buffer[w]
        cuda.atomic.add(target, index, total)
    cuda.syncthreads()  # the buffer is free again for the next sum


#: ``block_add(buffer, value, target, index)``: add the sum of ``value`` over the
#: block's threads to ``target[index]``, one atomic add per block (one per
#: thread would queue on one address). Every thread of the block calls it;
#: ``buffer`` is a shared array of ``THREADS`` floats.
block_add = _tree_add if config.ENABLE_CUDASIM else _warp_add


@cuda.jit
def zero_rows(out):
    """``out[:, :] = 0.0`` for a C-contiguous 2-D ``out``, a thread per entry."""
    flat = out.reshape(out.size)
    for k in range(cuda.grid(1), flat.size, cuda.gridsize(1)):
        flat[k] = 0.0


@cuda.jit(device=True)
def total(values, size):
    """The sum of ``values[:size]``: a term's log densities at one row, on a GPU
    thread (``logdens.shaped``), which has no ``np.sum``."""
    acc = 0.0
    for k in range(size):
        acc += values[k]
    return acc
