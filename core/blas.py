"""One BLAS thread while fairplace runs its own threads and processes.

numpy's OpenBLAS keeps a worker thread per core that busy-waits for a while after every call it
splits over threads (a dense dot of ~30,000 entries is one). fairplace parallelises itself (the
leave-one-out solves on 2 threads, the batch driver beside its Dask workers), and a spinning BLAS
thread takes the core one of those needs: on 2 cores, the payments of 1,024 GPUs x 256 apps burnt
~40% of a core in an idle BLAS thread (CPU 52-59 s for 30-33 s of wall time; with one BLAS thread
CPU 43 s, wall 24-28 s). Nothing here does dense linear algebra large enough to gain from BLAS
threads.
"""

from __future__ import annotations

import functools

from threadpoolctl import ThreadpoolController


@functools.cache
def _controller(load_scipy: bool) -> ThreadpoolController:
    """The process's BLAS libraries, found once: threadpoolctl reads /proc/self/maps and opens every
    loaded library to find them (~10 ms a call: per THEMIS auction it was a third of the run)."""
    if load_scipy:
        import scipy.linalg  # heavy: imported on use  # noqa: F401
    return ThreadpoolController()


def one_blas_thread(load_scipy: bool = True):
    """A context manager (also effective for the whole process if never exited) limiting BLAS
    libraries (OpenBLAS, MKL, BLIS) to one thread; the previous limits come back on exit. Only
    libraries loaded at the first call are limited: with ``load_scipy``, scipy's own OpenBLAS
    (loaded with scipy.linalg, which the solvers use) is loaded first (~0.3 s the first time)."""
    return _controller(load_scipy).limit(limits=1, user_api="blas")
