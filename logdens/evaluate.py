"""A numpy interpreter of expressions: deterministics, and a reference for tests.

Slow and simple on purpose: it never runs in a sampler's inner loop.
"""

import numpy as np
from scipy import special as sp

from logdens import expr as ex

UNARY = {
    "neg": np.negative, "exp": np.exp, "log": np.log, "log1p": np.log1p, "expm1": np.expm1,
    "sqrt": np.sqrt, "square": np.square, "abs": np.abs, "logistic": sp.expit, "logit": sp.logit,
    "log_logistic": sp.log_expit, "softplus": lambda x: np.logaddexp(0.0, x), "tanh": np.tanh,
    "lgamma": sp.gammaln, "digamma": sp.digamma, "erf": sp.erf,
}
BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide, "pow": np.power,
    "logaddexp": np.logaddexp,
}


def evaluate(node, values, batch=False):
    """The value of ``node`` given ``values``: name -> array for parameters and data.

    Unnamed arrays inside expressions carry their own value. With ``batch``,
    every parameter value has a leading axis of draws (scalars as (n, 1),
    so they broadcast against data); the result has the same leading axis.
    """
    memo = {}

    def walk(n):
        if id(n) in memo:
            return memo[id(n)]
        if isinstance(n, ex.Const):
            out = np.float64(n.value)
        elif isinstance(n, ex.Param):
            out = np.asarray(values[n.name], dtype=float)
        elif isinstance(n, ex.Data):
            out = np.asarray(values[n.name] if n.name is not None else n.value)
            out = out if n.integer else out.astype(float)
        elif isinstance(n, ex.Unary):
            out = UNARY[n.op](walk(n.children[0]))
        elif isinstance(n, ex.Binary):
            out = BINARY[n.op](walk(n.children[0]), walk(n.children[1]))
        elif isinstance(n, ex.Gather):
            out = walk(n.children[0])[..., walk(n.children[1])]
        elif isinstance(n, ex.Slice):
            out = walk(n.children[0])[..., n.start:n.stop:n.step]
        elif isinstance(n, ex.MatVec):
            out = walk(n.children[1]) @ walk(n.children[0]).T
        elif isinstance(n, ex.Sum):
            out = np.sum(walk(n.children[0]), axis=-1, keepdims=batch)
        else:
            raise TypeError(f"cannot evaluate {type(n).__name__}")
        memo[id(n)] = out
        return out

    with np.errstate(all="ignore"):
        return walk(node)
