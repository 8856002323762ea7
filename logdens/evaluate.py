"""A numpy interpreter of expressions: deterministics, and a reference for tests.

Slow and simple on purpose: it never runs in a sampler's inner loop. Each
node's value is its rule's (``logdens.rules``); elementwise ops are numpy's
functions of ``logdens.ops.OPS``.
"""

import numpy as np

from logdens import rules


def evaluate(node, values, batch=False):
    """The value of ``node`` given ``values``: name -> array for parameters and data.

    Unnamed arrays inside expressions carry their own value. With ``batch``,
    every parameter value has a leading axis of draws (scalars as (n, 1),
    so they broadcast against data), and so has the value of every node that
    depends on parameters (``rules.with_draws``); the others are evaluated
    once, without it, so a rule is batched only where its node is.
    """
    def value(n, args):
        return rules.rule(n).evaluate(n, args, values, batch and n.depends_on_params())

    with np.errstate(all="ignore"):
        return rules.fold(node, value)
