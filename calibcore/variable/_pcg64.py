"""numpy's PCG64 bit generator stepped inside compiled code, on the generator's own state.

The permutation null (:mod:`calibcore.variable._permutation`) draws 1.5M swap targets per
permutation, each numpy's ``random_interval`` on the bit generator's 32-bit stream:
through ``ctypes.next_uint32`` (an indirect call per word) 10 ms per 1.5M targets here,
with the step compiled in :func:`fill_targets` 4 ms. The compiled step reads and writes
the generator's state in place (views on ``bit_generator.ctypes.state_address``), so
numpy's generator is left exactly where its own draws would have left it.

PCG64 is O'Neill's PCG XSL RR 128/64 (O'Neill 2014): the 128-bit state steps as
``state * MULTIPLIER + increment`` and the output is ``rotr(high ^ low, high >> 58)``;
numpy hands out 32-bit draws as the low then the high half of one 64-bit output. The
views assume numpy's layout with native 128-bit integers (low word first);
:func:`pcg64_words` checks the step against numpy's on a fresh generator once per
process and answers None (use ``next_uint32``) if it differs.
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable
from functools import cache
from typing import cast

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core.base import BaseContext
from numba.extending import intrinsic
from numpy.typing import NDArray

#: PCG's default 128-bit multiplier, high and low words.
_MULTIPLIER_HIGH = np.uint64(2549297995355413924)
_MULTIPLIER_LOW = np.uint64(4865540595714422341)
#: Offset of ``has_uint32`` in numpy's ``pcg64_state`` (after the state pointer).
_BUFFER_OFFSET = 8
#: Rows shuffled by both in the check.
_CHECK_ROWS = 1000


@intrinsic
def _multiply_high_intrinsic(typing_context: object, left: types.Integer,
                             right: types.Integer) -> tuple[object, Callable[..., object]]:
    """The high 64 bits of the 128-bit product of two unsigned 64-bit integers."""
    signature = types.uint64(types.uint64, types.uint64)

    def codegen(context: BaseContext, builder: ir.IRBuilder, signature: object,
                arguments: tuple[ir.Value, ir.Value]) -> ir.Value:
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(arguments[0], wide), builder.zext(arguments[1], wide))
        return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

    return signature, codegen


#: :func:`_multiply_high_intrinsic` as compiled code calls it.
_multiply_high = cast(Callable[[np.uint64, np.uint64], np.uint64], _multiply_high_intrinsic)


@numba.njit(nogil=True, cache=True)
def fill_targets(targets: NDArray[np.intp], top: int, bottom: int,
                 words: NDArray[np.uint64], buffer: NDArray[np.uint32]) -> None:
    """``targets[top - i]`` = numpy's ``random_interval(i)`` for i = top down to bottom + 1.

    ``words`` (state low, high, increment low, high) and ``buffer`` (has_uint32,
    uinteger) are numpy's PCG64 state, read once and written back at the end. Each
    draw is numpy's masked rejection on ``pcg64_next32`` (0 < i < 2^32): a 32-bit
    word ``& mask`` (the smallest ``2^k - 1 >= i``) is accepted when at most i.
    Written without a branch on the acceptance (it is random), and the mask shrinks
    as i falls instead of being recomputed, so that the draws do not wait on one
    another: 10 -> 4 ms per 1.5M targets here.
    """
    low = words[0]
    high = words[1]
    increment_low = words[2]
    increment_high = words[3]
    has_spare = buffer[0]
    spare = np.uint64(buffer[1])
    position = np.uint64(top)
    end = np.uint64(bottom)
    mask = position
    mask |= mask >> np.uint64(1)
    mask |= mask >> np.uint64(2)
    mask |= mask >> np.uint64(4)
    mask |= mask >> np.uint64(8)
    mask |= mask >> np.uint64(16)
    filled = 0
    while position > end:
        if position <= (mask >> np.uint64(1)):
            mask >>= np.uint64(1)
        if has_spare != 0:
            has_spare = 0
            word = spare
        else:
            product_low = low * _MULTIPLIER_LOW
            product_high = _multiply_high(low, _MULTIPLIER_LOW) + low * _MULTIPLIER_HIGH \
                + high * _MULTIPLIER_LOW
            low = product_low + increment_low
            high = product_high + increment_high \
                + (np.uint64(1) if low < product_low else np.uint64(0))
            folded = high ^ low
            rotation = high >> np.uint64(58)
            output = (folded >> rotation) | (folded << ((np.uint64(64) - rotation)
                                                        & np.uint64(63)))
            has_spare = 1
            spare = output >> np.uint64(32)
            word = output & np.uint64(0xFFFFFFFF)
        value = word & mask
        accepted = np.uint64(value <= position)
        targets[filled] = value
        filled += int(accepted)
        position -= accepted
    words[0] = low
    words[1] = high
    buffer[0] = has_spare
    buffer[1] = np.uint32(spare)


def _views(rng: np.random.Generator) -> tuple[NDArray[np.uint64], NDArray[np.uint32]]:
    address = rng.bit_generator.ctypes.state_address
    inner = ctypes.c_void_p.from_address(address).value
    words = np.ctypeslib.as_array((ctypes.c_uint64 * 4).from_address(inner or 0))
    buffer = np.ctypeslib.as_array((ctypes.c_uint32 * 2).from_address(address + _BUFFER_OFFSET))
    return words, buffer


@cache
def _layout_checked() -> bool:
    """Whether :func:`fill_targets` makes numpy's swaps and leaves numpy's state."""
    ours, theirs = np.random.default_rng(20231), np.random.default_rng(20231)
    ours.integers(0, 2, 3)  # a spare 32-bit half is left buffered (or not) alike
    theirs.integers(0, 2, 3)
    expected = np.arange(_CHECK_ROWS)
    theirs.shuffle(expected)
    targets = np.empty(_CHECK_ROWS - 1, dtype=np.intp)
    fill_targets(targets, _CHECK_ROWS - 1, 0, *_views(ours))
    shuffled = np.arange(_CHECK_ROWS)
    for swap, position in enumerate(range(_CHECK_ROWS - 1, 0, -1)):
        target = targets[swap]
        shuffled[position], shuffled[target] = shuffled[target], shuffled[position]
    return bool(np.array_equal(shuffled, expected)
                and ours.bit_generator.state == theirs.bit_generator.state)


def pcg64_words(
    rng: np.random.Generator,
) -> tuple[NDArray[np.uint64], NDArray[np.uint32]] | None:
    """Views on ``rng``'s PCG64 state for :func:`fill_targets` (keep ``rng`` alive while
    they are used), or None when ``rng`` is not PCG64 or the layout is not numpy's."""
    if type(rng.bit_generator) is not np.random.PCG64 or not _layout_checked():
        return None
    return _views(rng)
