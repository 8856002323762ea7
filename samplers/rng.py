"""The samplers' per-chain generator: ``distributions.random`` under the
samplers' compile policy.

Each chain owns a ``uint64[4]`` xoshiro256** state seeded by splitmix64 from
``(seed, chain)``, so results are the same whatever the number of cores.
The generator has one implementation, in ``distributions.random`` (it is
also what the distributions' ``rvs`` draw from); here its functions are
wrapped as sampler helpers (``samplers._jit.compiled``: no Python wrappers
inside the compiled runner, a compiled twin when called from Python).
The runner's disk-cache key hashes the distributions' sources too
(``samplers._cache``), so an edit of ``distributions/random.py`` compiles it
anew.
"""

from ..distributions import random as _random
from ._jit import compiled

make_state = _random.make_state
next_uint64 = compiled(_random.next_uint64)
uniform = compiled(_random.uniform)
normal = compiled(_random.normal)
fill_normal = compiled(_random.fill_normal)

__all__ = ["make_state", "next_uint64", "uniform", "normal", "fill_normal"]
