"""Device functions the generated CUDA kernels call (``logdens.cuda_source``)."""

from numba import cuda

#: Threads per block of the row kernels; a block's sums are reduced in a shared
#: array of this length, so the block size is a power of two no larger.
THREADS = 256


@cuda.jit(device=True)
def block_add(buffer, value, target, index):
    """Add the sum of ``value`` over the block's threads to ``target[index]``: a
    tree sum in the shared ``buffer``, then one atomic add by the first thread
    (one atomic per block, where one per thread would queue on one address).
    Every thread of the block must call it."""
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


@cuda.jit
def zero_rows(out):
    """``out[:, :] = 0.0`` for a C-contiguous 2-D ``out``, a thread per entry."""
    flat = out.reshape(out.size)
    for k in range(cuda.grid(1), flat.size, cuda.gridsize(1)):
        flat[k] = 0.0
