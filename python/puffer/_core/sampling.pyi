"""
Counter-based SIMD samplers and the secure (exact lattice) mode. Use puffer.sampling.
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['Kind', 'LAYOUT_SHIFT', 'Layout', 'STATIC_TARGET_ONLY', 'chacha20_block', 'fill_constant', 'fill_f32', 'fill_f64', 'fill_keyed_f32', 'fill_keyed_f64', 'first_nonfinite', 'keyed_lattice_fill', 'keyed_lattice_words', 'keyed_pair_words', 'keyed_reject_words', 'lattice_add', 'lattice_magnitude', 'lattice_sample', 'lattice_tables', 'layout_of', 'philox4x32_10', 'secure_add', 'secure_sample', 'set_simd_target', 'simd_target', 'simd_targets']
class Kind:
    """
    sampler kinds (sampling/samplers.hpp)
    
    Members:
    
      uniform
    
      exponential
    
      laplace
    
      gaussian
    
      cauchy
    
      student_t
    
      gen_gaussian
    
      logistic
    
      gen_cauchy
    """
    __members__: typing.ClassVar[dict[str, Kind]]
    cauchy: typing.ClassVar[Kind]
    exponential: typing.ClassVar[Kind]
    gaussian: typing.ClassVar[Kind]
    gen_cauchy: typing.ClassVar[Kind]
    gen_gaussian: typing.ClassVar[Kind]
    laplace: typing.ClassVar[Kind]
    logistic: typing.ClassVar[Kind]
    student_t: typing.ClassVar[Kind]
    uniform: typing.ClassVar[Kind]
    @typing.overload
    def __eq__(self, other: Kind) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    @typing.overload
    def __ge__(self, other: Kind) -> bool:
        ...
    @typing.overload
    def __ge__(self, other: typing.Any) -> None:
        ...
    def __getstate__(self) -> int:
        ...
    @typing.overload
    def __gt__(self, other: Kind) -> bool:
        ...
    @typing.overload
    def __gt__(self, other: typing.Any) -> None:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __le__(self, other: Kind) -> bool:
        ...
    @typing.overload
    def __le__(self, other: typing.Any) -> None:
        ...
    @typing.overload
    def __lt__(self, other: Kind) -> bool:
        ...
    @typing.overload
    def __lt__(self, other: typing.Any) -> None:
        ...
    @typing.overload
    def __ne__(self, other: Kind) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
class Layout:
    """
    counter-word layout tags (sampling/samplers.hpp)
    
    Members:
    
      pair
    
      student_t
    
      gen_gaussian
    
      partial_value
    """
    __members__: typing.ClassVar[dict[str, Layout]]
    gen_gaussian: typing.ClassVar[Layout]
    pair: typing.ClassVar[Layout]
    partial_value: typing.ClassVar[Layout]
    student_t: typing.ClassVar[Layout]
    @typing.overload
    def __eq__(self, other: Layout) -> bool:
        ...
    @typing.overload
    def __eq__(self, other: typing.Any) -> bool:
        ...
    @typing.overload
    def __ge__(self, other: Layout) -> bool:
        ...
    @typing.overload
    def __ge__(self, other: typing.Any) -> None:
        ...
    def __getstate__(self) -> int:
        ...
    @typing.overload
    def __gt__(self, other: Layout) -> bool:
        ...
    @typing.overload
    def __gt__(self, other: typing.Any) -> None:
        ...
    def __hash__(self) -> int:
        ...
    def __index__(self) -> int:
        ...
    def __init__(self, value: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __int__(self) -> int:
        ...
    @typing.overload
    def __le__(self, other: Layout) -> bool:
        ...
    @typing.overload
    def __le__(self, other: typing.Any) -> None:
        ...
    @typing.overload
    def __lt__(self, other: Layout) -> bool:
        ...
    @typing.overload
    def __lt__(self, other: typing.Any) -> None:
        ...
    @typing.overload
    def __ne__(self, other: Layout) -> bool:
        ...
    @typing.overload
    def __ne__(self, other: typing.Any) -> bool:
        ...
    def __repr__(self) -> str:
        ...
    def __setstate__(self, state: typing.SupportsInt | typing.SupportsIndex) -> None:
        ...
    def __str__(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def value(self) -> int:
        ...
def chacha20_block(state: typing.Annotated[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(16)"]) -> typing.Annotated[list[int], "FixedSize(16)"]:
    """
    RFC 8439 ChaCha20 block function (for the known-answer test).
    """
def fill_constant(out: numpy.ndarray, value: typing.SupportsFloat | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    """
    The memory-write ceiling the benchmark compares against: the same pool, 2^15-value tasks, nothing but stores.
    """
def fill_f32(kind: typing.SupportsInt | typing.SupportsIndex, p0: typing.SupportsFloat | typing.SupportsIndex, p1: typing.SupportsFloat | typing.SupportsIndex, k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, values: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
def fill_f64(kind: typing.SupportsInt | typing.SupportsIndex, p0: typing.SupportsFloat | typing.SupportsIndex, p1: typing.SupportsFloat | typing.SupportsIndex, k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, values: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
def fill_keyed_f32(kind: typing.SupportsInt | typing.SupportsIndex, p0: typing.SupportsFloat | typing.SupportsIndex, p1: typing.SupportsFloat | typing.SupportsIndex, key: bytes, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, values: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    ...
def fill_keyed_f64(kind: typing.SupportsInt | typing.SupportsIndex, p0: typing.SupportsFloat | typing.SupportsIndex, p1: typing.SupportsFloat | typing.SupportsIndex, key: bytes, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, out: numpy.ndarray, values: typing.Any = None, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    """
    Keyed ChaCha20 stream (sampling/keyed_stream.hpp): out = values + X[start:start+n]; key: 32 secret bytes.
    """
def first_nonfinite(values: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> int:
    """
    Index of the first NaN/inf in a float32/float64 buffer, or -1.
    """
def keyed_lattice_fill(key: bytes, word: typing.SupportsInt | typing.SupportsIndex, j0: typing.SupportsInt | typing.SupportsIndex, nb: typing.SupportsInt | typing.SupportsIndex, log_scale: typing.SupportsFloat | typing.SupportsIndex) -> tuple[numpy.typing.NDArray[numpy.uint64], numpy.typing.NDArray[numpy.float64]]:
    """
    The SIMD words and hints of lattice fast blocks j0 .. j0 + nb - 1 (for tests).
    """
def keyed_lattice_words(key: bytes, word: typing.SupportsInt | typing.SupportsIndex, block: typing.SupportsInt | typing.SupportsIndex) -> typing.Annotated[list[int], "FixedSize(8)"]:
    """
    The eight 64-bit words of lattice fast block `block` (scalar reference, for tests).
    """
def keyed_pair_words(key: bytes, word: typing.SupportsInt | typing.SupportsIndex, block: typing.SupportsInt | typing.SupportsIndex) -> typing.Annotated[list[int], "FixedSize(8)"]:
    """
    The eight 64-bit words of pair-layout block `block` (scalar reference, for tests).
    """
def keyed_reject_words(key: bytes, word: typing.SupportsInt | typing.SupportsIndex, tag: typing.SupportsInt | typing.SupportsIndex, index: typing.SupportsInt | typing.SupportsIndex, attempt: typing.SupportsInt | typing.SupportsIndex) -> typing.Annotated[list[int], "FixedSize(8)"]:
    """
    The eight 64-bit words of attempt `attempt` of value `index` (rejection layouts; for tests).
    """
def lattice_add(family: typing.SupportsInt | typing.SupportsIndex, S: typing.SupportsInt | typing.SupportsIndex, g_exp: typing.SupportsInt | typing.SupportsIndex, key: bytes, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, values: numpy.ndarray, out: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
    """
    out = (round_half_even(values 2^-g_exp) + Z) 2^g_exp with Z the lattice noise of positions start ...
    """
def lattice_magnitude(family: typing.SupportsInt | typing.SupportsIndex, S: typing.SupportsInt | typing.SupportsIndex, u: typing.SupportsInt | typing.SupportsIndex, extra: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], fast: bool, hint: typing.SupportsInt | typing.SupportsIndex = 0) -> int:
    """
    |Z| for a uniform whose first 63 bits are u and next words `extra`: the exact path alone, or (fast=True) the tables from `hint` (-1 where they cannot decide). For tests.
    """
def lattice_sample(family: typing.SupportsInt | typing.SupportsIndex, S: typing.SupportsInt | typing.SupportsIndex, key: bytes, word: typing.SupportsInt | typing.SupportsIndex, start: typing.SupportsInt | typing.SupportsIndex, n: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0) -> numpy.typing.NDArray[numpy.int64]:
    """
    Lattice noise integers of stream positions start .. start + n - 1 (sampling/lattice.hpp): family 0 rounded Laplace (s = S 2^-64), 1 discrete Gaussian (w = S 2^-64).
    """
def lattice_tables(family: typing.SupportsInt | typing.SupportsIndex, S: typing.SupportsInt | typing.SupportsIndex) -> dict[str, typing.Any]:
    """
    The threshold tables of a lattice law (for tests).
    """
def layout_of(kind: Kind) -> Layout:
    """
    the counter-word layout a sampler kind draws with
    """
def philox4x32_10(counter: typing.Annotated[collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], "FixedSize(4)"], k0: typing.SupportsInt | typing.SupportsIndex, k1: typing.SupportsInt | typing.SupportsIndex) -> typing.Annotated[list[int], "FixedSize(4)"]:
    """
    Scalar Philox4x32-10 block (reference).
    """
def secure_add(kind: typing.SupportsInt | typing.SupportsIndex, num: typing.SupportsInt | typing.SupportsIndex, den: typing.SupportsInt | typing.SupportsIndex, t: typing.SupportsInt | typing.SupportsIndex, g_exp: typing.SupportsInt | typing.SupportsIndex, values: numpy.ndarray, out: numpy.ndarray, threads: typing.SupportsInt | typing.SupportsIndex = 0, key: typing.Any = None) -> None:
    ...
def secure_sample(kind: typing.SupportsInt | typing.SupportsIndex, num: typing.SupportsInt | typing.SupportsIndex, den: typing.SupportsInt | typing.SupportsIndex, t: typing.SupportsInt | typing.SupportsIndex, n: typing.SupportsInt | typing.SupportsIndex, threads: typing.SupportsInt | typing.SupportsIndex = 0, key: typing.Any = None) -> numpy.typing.NDArray[numpy.int64]:
    """
    Exact discrete Laplace (kind 0, scale num/den) or discrete Gaussian (kind 1, sigma^2 = num/den, t = floor(sigma)+1) integers. key: 32 bytes for tests only (None = OS entropy).
    """
def set_simd_target(name: str) -> None:
    """
    Force a SIMD target by name ('auto' = best); affects all later calls in this process.
    """
def simd_target() -> str:
    """
    The SIMD target in use.
    """
def simd_targets() -> list[str]:
    """
    SIMD targets compiled in and supported by this CPU, best first.
    """
LAYOUT_SHIFT: int = 30
STATIC_TARGET_ONLY: bool = False
