"""numpy's ``Generator.shuffle`` compiled, for the permutation nulls of
:mod:`calibcore.variable._permutation`: the same swaps from the same stream, with the
sums of consecutive segments taken as rows settle, and the rows of the next swaps loaded
into cache early (on large inputs each swap otherwise waits on one random row).

Private: callers validate inputs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import cast

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core.base import BaseContext
from numba.extending import intrinsic
from numpy.typing import NDArray

from calibcore.variable._pcg64 import fill_targets

#: Swap targets drawn at a time before the swaps are made (see :func:`shuffle_segment_sums`).
_DRAW_BLOCK = 4096
#: Swaps ahead of the current one whose random row is prefetched (each swap waits on one
#: row out of cache otherwise: 31 -> 19 ms per permutation of 1.5M rows here).
_PREFETCH_AHEAD = 32


@numba.njit(nogil=True, cache=True)
def _draw(bound: int, next_uint32: Callable[[int], int], state: int) -> int:
    """numpy's ``random_interval``: a uniform integer in [0, bound] by masked rejection."""
    mask = np.uint64(bound)
    mask |= mask >> np.uint64(1)
    mask |= mask >> np.uint64(2)
    mask |= mask >> np.uint64(4)
    mask |= mask >> np.uint64(8)
    mask |= mask >> np.uint64(16)
    while True:
        value = np.uint64(next_uint32(state)) & mask
        if value <= np.uint64(bound):
            return int(value)


@intrinsic
def _prefetch_intrinsic(typing_context: object, array: types.Array,
                        index: types.Integer) -> tuple[object, Callable[..., object]]:
    """Hint the processor to load ``array[index]`` into cache for writing (LLVM's
    ``llvm.prefetch``): no effect on any value, only on when the row arrives."""
    signature = types.void(array, index)

    def codegen(context: BaseContext, builder: ir.IRBuilder, signature: object,
                arguments: tuple[ir.Value, ir.Value]) -> object:
        data = context.make_array(array)(context, builder, arguments[0]).data
        address = builder.bitcast(builder.gep(data, [arguments[1]]), ir.IntType(8).as_pointer())
        hint = builder.module.declare_intrinsic(
            "llvm.prefetch", fnty=ir.FunctionType(ir.VoidType(), [
                ir.IntType(8).as_pointer(), ir.IntType(32), ir.IntType(32), ir.IntType(32)]))
        # write, high temporal locality, data cache
        builder.call(hint, [address, ir.Constant(ir.IntType(32), 1),
                            ir.Constant(ir.IntType(32), 3), ir.Constant(ir.IntType(32), 1)])
        return context.get_dummy_value()

    return signature, codegen


#: :func:`_prefetch_intrinsic` as compiled code calls it.
_prefetch = cast(Callable[[NDArray[np.float64], int], None], _prefetch_intrinsic)


@numba.njit(nogil=True, cache=True)
def shuffle_segment_sums(
    values: NDArray[np.float64],
    starts: NDArray[np.intp],
    sums: NDArray[np.float64],
    next_uint32: Callable[[int], int],
    state: int,
    words: NDArray[np.uint64],
    buffer: NDArray[np.uint32],
    inline: bool,
) -> None:
    """Shuffle ``values`` in place as ``Generator.shuffle`` does and sum its segments.

    numpy swaps position i with a draw j in [0, i] for i = n-1 down to 1, drawing j
    with ``random_interval`` from the bit generator's 32-bit stream (n < 2^32). The
    draws do not depend on the values, so a block of them is drawn first and the
    swaps of the block made after: with the targets known in advance, the row of the
    swap :data:`_PREFETCH_AHEAD` swaps later is prefetched, so that the cache misses of
    many swaps overlap instead of each waiting in turn. When ``inline`` the targets come
    from :func:`calibcore.variable._pcg64.fill_targets` (numpy's PCG64 stepped here on
    the generator's own ``words`` and ``buffer``), otherwise through ``next_uint32``.
    Position i is final once swapped, so ``sums`` (one per segment starting at
    ``starts``) is filled on the way.
    """
    n = values.size
    targets = np.empty(_DRAW_BLOCK, dtype=np.intp)
    sums[:] = 0.0
    segment = starts.size - 1
    for block_top in range(n - 1, 0, -_DRAW_BLOCK):
        block_bottom = max(block_top - _DRAW_BLOCK, 0)
        count = block_top - block_bottom
        if inline:
            fill_targets(targets, block_top, block_bottom, words, buffer)
        else:
            for position in range(block_top, block_bottom, -1):
                targets[block_top - position] = _draw(position, next_uint32, state)
        for ahead in range(min(_PREFETCH_AHEAD, count)):
            _prefetch(values, targets[ahead])
        for position in range(block_top, block_bottom, -1):
            swap = block_top - position
            if swap + _PREFETCH_AHEAD < count:
                _prefetch(values, targets[swap + _PREFETCH_AHEAD])
            target = targets[swap]
            value = values[target]
            values[target] = values[position]
            values[position] = value
            while position < starts[segment]:
                segment -= 1
            sums[segment] += value
    if n > 0:
        sums[0] += values[0]


@numba.njit(nogil=True, cache=True)
def descending_segment_sums(values: NDArray[np.float64], starts: NDArray[np.intp],
                            sums: NDArray[np.float64]) -> None:
    """``sums`` of the segments of ``values`` starting at ``starts``, each row added from
    the last down to the first: the order in which :func:`shuffle_segment_sums` adds the
    rows as they settle, so another cut of the same shuffle sums to the same bits."""
    sums[:] = 0.0
    segment = starts.size - 1
    for position in range(values.size - 1, 0, -1):
        while position < starts[segment]:
            segment -= 1
        sums[segment] += values[position]
    if values.size > 0:
        sums[0] += values[0]
