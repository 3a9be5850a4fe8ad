"""calibcore's compiled kernels, compiled or loaded in a background job at server start.

The first start after an installation compiles them (:mod:`calibcore.kernels`: about
half a minute on 2 cores); later starts load numba's on-disk cache in a second or two.
Without it, the first job to reach a kernel would compile it midway, its progress
standing still and a cancel waiting for the compilation to end (up to 8 s for the
local forests of hidden heterogeneity). UMAP's own compilation has its warm-up beside
the representation it serves (:func:`app.services.local_embedding.start_warm_up`).
"""

from __future__ import annotations

from collections.abc import Callable

from app.jobs import Job, Progress
from app.services.cost import CostEstimate
from app.services.shared import ServiceContext
from calibcore.kernels import compile_kernels

__all__ = ["KERNELS_ESTIMATE", "start_kernel_warm_up"]

#: Measured on the 2-core reference machine: 1.6 s with numba's cache (every start but
#: the first), 26 s compiling every kernel (the first start after an installation).
KERNELS_ESTIMATE = CostEstimate(6.5, "calibcore's compiled kernels: loaded from numba's "
                                "cache, or compiled at the first start after an "
                                "installation", spread=4.0)


def start_kernel_warm_up(services: ServiceContext,
                         then: Callable[[], object] | None = None) -> Job:
    """Submit the job that compiles (or loads) every kernel; its result says it is done.

    ``then`` is called once every kernel is ready (the server starts UMAP's warm-up there:
    numba compiles one function at a time, so two warm-ups side by side would only delay
    the kernels every job needs, 1.6 s alone against 16 s beside UMAP's). A job cancelled
    by the server's shutdown never calls it.
    """

    def compile_all(progress: Progress) -> dict[str, str]:
        compile_kernels(progress.update)
        if then is not None:
            then()
        return {"status": "compiled"}

    return services.jobs.submit("kernels_warm_up", compile_all,
                                estimate=KERNELS_ESTIMATE.as_dict())
