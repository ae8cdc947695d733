"""numpy's ``SeedSequence`` and ``PCG64`` in compiled code: the streams of ``block_stream``, drawn with no GIL.

A data block's stream for a resample block is ``default_rng(SeedSequence(entropy, spawn_key=key + (j,)))``
(:func:`privframe_std.samplers._blocks.block_stream`). Creating that generator in Python costs about 30 us,
and the data-block loop creates one per resample block and data block (10 000 at n = 1e7, B = 1000), each
under the GIL. Here the same derivation runs inside the compiled loop:

- :func:`entropy_prefix` (Python, once per resample block) assembles the seed's words as ``SeedSequence``
  does (the run entropy padded to the pool size, then the spawn key's words) without the data block's key;
- :func:`seed_pcg64` (compiled) appends the data block's word, mixes the pool (``mix_entropy``), generates
  four 64-bit words (``generate_state``) and seeds PCG64 with them (``pcg64_set_seed``);
- :func:`pcg64_next` is numpy's ``random_raw``: a 128-bit LCG step, then the XSL-RR output.

The words are numpy's, word for word; ``tests/test_pcg_stream.py`` checks that against numpy over many keys.
"""

from __future__ import annotations

from typing import Any

import numba
import numpy as np
import numpy.typing as npt
from llvmlite import ir
from numba.core import types
from numba.extending import intrinsic

from privframe_std._compiled import compiled

__all__ = ["entropy_prefix", "pcg64_next", "seed_pcg64"]

# SeedSequence's constants; its 32-bit arithmetic is done here in 64-bit words masked to 32 bits (numba
# widens 32-bit products to 64 bits, so the wrap must be explicit).
INIT_A = np.uint64(0x43B0D7E5)
MULT_A = np.uint64(0x931E8875)
INIT_B = np.uint64(0x8B51F9DD)
MULT_B = np.uint64(0x58F38DED)
MIX_MULT_L = np.uint64(0xCA01F9DD)
MIX_MULT_R = np.uint64(0x4973F715)
XSHIFT = np.uint64(16)
LOW32 = np.uint64(0xFFFFFFFF)
MASK32 = 0xFFFFFFFF

PCG_MULTIPLIER = (2549297995355413924 << 64) + 4865540595714422341
"""PCG's default 128-bit LCG multiplier (``PCG_DEFAULT_MULTIPLIER_128``)."""

U64_ONE = np.uint64(1)
U64_SIXTY_THREE = np.uint64(63)
U64_FIFTY_EIGHT = np.uint64(58)
U64_SIXTY_FOUR_MASK = np.uint64(63)
U64_THIRTY_TWO = np.uint64(32)


def _words_of_int(value: int) -> list[int]:
    """``SeedSequence``'s 32-bit little-endian words of a non-negative int (``[0]`` for 0)."""
    if value < 0:
        raise ValueError("negative seed entropy")
    words = [value & MASK32]
    value >>= 32
    while value:
        words.append(value & MASK32)
        value >>= 32
    return words


def _words_of(value: Any) -> list[int] | None:
    """The words of an int or a flat sequence of ints, None for anything else (numpy arrays of other
    kinds take numpy's own path)."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return _words_of_int(int(value))
    if isinstance(value, (tuple, list)) and all(
        isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value
    ):
        return [word for v in value for word in _words_of_int(int(v))]
    return None


def entropy_prefix(seed: np.random.SeedSequence) -> npt.NDArray[np.uint32] | None:
    """The words ``SeedSequence(seed.entropy, spawn_key=(*seed.spawn_key, j))`` mixes, less j's own word.

    The run entropy is padded with zeros to the pool size (a non-empty spawn key always follows), then the
    spawn key's words. None where the entropy is not an int or a sequence of ints (then the caller builds
    the generator in Python).
    """
    run = _words_of(seed.entropy)
    if run is None:
        return None
    run = run + [0] * max(0, seed.pool_size - len(run))
    key = _words_of(tuple(seed.spawn_key))
    if key is None:
        return None
    return np.array(run + key, dtype=np.uint32)


@numba.njit(inline="always")
def _hashmix(value: Any, hash_const: Any) -> Any:
    value = np.uint64(value) ^ hash_const
    hash_const = (hash_const * MULT_A) & LOW32
    value = (value * hash_const) & LOW32
    value ^= value >> XSHIFT
    return value, hash_const


@numba.njit(inline="always")
def _mix(x: Any, y: Any) -> Any:
    result = (MIX_MULT_L * x - MIX_MULT_R * y) & LOW32
    result ^= result >> XSHIFT
    return result


_unituple: Any = types.UniTuple
_pair_of_words = _unituple(types.uint64, 2)


@intrinsic
def _lcg_step(typingctx: Any, hi: Any, lo: Any, inc_hi: Any, inc_lo: Any) -> Any:
    """``state * PCG_MULTIPLIER + inc`` on 128-bit values given as (high, low) 64-bit halves."""
    if not all(isinstance(a, types.Integer) for a in (hi, lo, inc_hi, inc_lo)):
        return None
    result = _pair_of_words

    def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
        wide = ir.IntType(128)
        shift = ir.Constant(wide, 64)

        def join(high: Any, low: Any) -> Any:
            return builder.or_(builder.shl(builder.zext(high, wide), shift), builder.zext(low, wide))

        product = builder.mul(join(args[0], args[1]), ir.Constant(wide, PCG_MULTIPLIER))
        state = builder.add(product, join(args[2], args[3]))
        high = builder.trunc(builder.lshr(state, shift), ir.IntType(64))
        low = builder.trunc(state, ir.IntType(64))
        return context.make_tuple(builder, result, [high, low])

    return result(types.uint64, types.uint64, types.uint64, types.uint64), codegen


lcg_step: Any = _lcg_step


@compiled
def seed_pcg64(prefix: Any, length: int, block: int, pool_size: int, mixer: Any, state: Any) -> None:
    """``state`` = (state high, state low, increment high, increment low) of
    ``PCG64(SeedSequence(...))`` for the seed whose words are ``prefix[:length]`` (:func:`entropy_prefix`)
    and data block ``block`` (below 2^32) appended to its spawn key; ``mixer`` is ``pool_size`` scratch
    ``uint64`` (holding 32-bit words)."""
    hash_const = INIT_A
    total = length + 1
    for i in range(pool_size):
        if i < length:
            word = np.uint64(prefix[i])
        elif i == length:
            word = np.uint64(block)
        else:
            word = np.uint64(0)
        mixer[i], hash_const = _hashmix(word, hash_const)
    for source in range(pool_size):
        for target in range(pool_size):
            if source != target:
                mixed, hash_const = _hashmix(mixer[source], hash_const)
                mixer[target] = _mix(mixer[target], mixed)
    for source in range(pool_size, total):
        word = np.uint64(prefix[source]) if source < length else np.uint64(block)
        for target in range(pool_size):
            mixed, hash_const = _hashmix(word, hash_const)
            mixer[target] = _mix(mixer[target], mixed)
    # generate_state(4, uint64): eight 32-bit words cycling through the pool, read as four little-endian
    # 64-bit words: (seed high, seed low, sequence high, sequence low)
    hash_const = INIT_B
    words = np.empty(4, dtype=np.uint64)
    for i in range(4):
        pair = np.uint64(0)
        for half in range(2):
            value = mixer[(2 * i + half) % pool_size] ^ hash_const
            hash_const = (hash_const * MULT_B) & LOW32
            value = (value * hash_const) & LOW32
            value ^= value >> XSHIFT
            pair |= value << (U64_THIRTY_TWO * np.uint64(half))
        words[i] = pair
    # pcg64_set_seed: inc = (sequence << 1) | 1; state = 0; step; state += seed; step
    inc_hi = (words[2] << U64_ONE) | (words[3] >> U64_SIXTY_THREE)
    inc_lo = (words[3] << U64_ONE) | U64_ONE
    hi, lo = lcg_step(np.uint64(0), np.uint64(0), inc_hi, inc_lo)
    low = lo + words[1]
    hi = hi + words[0] + np.uint64(low < lo)
    hi, lo = lcg_step(hi, low, inc_hi, inc_lo)
    state[0], state[1], state[2], state[3] = hi, lo, inc_hi, inc_lo


@numba.njit(inline="always")
def pcg64_next(hi: Any, lo: Any, inc_hi: Any, inc_lo: Any) -> Any:
    """``(word, state high, state low)``: numpy's PCG64 ``random_raw`` (step, then XSL-RR of the new state)."""
    hi, lo = lcg_step(hi, lo, inc_hi, inc_lo)
    value = hi ^ lo
    rotation = hi >> U64_FIFTY_EIGHT
    word = (value >> rotation) | (value << ((np.uint64(64) - rotation) & U64_SIXTY_FOUR_MASK))
    return word, hi, lo


@compiled
def pcg64_words(state: Any, out: Any) -> None:
    """The next ``out.size`` words of the PCG64 ``state`` (:func:`seed_pcg64`) into ``out``, advancing it."""
    hi, lo, inc_hi, inc_lo = state[0], state[1], state[2], state[3]
    for i in range(out.shape[0]):
        out[i], hi, lo = pcg64_next(hi, lo, inc_hi, inc_lo)
    state[0], state[1] = hi, lo
