"""Code of the CPU schedule's blocked loops: products of a block of rows with a
parameter vector, their transposes, and scatters of a block's adjoints.

The lowering (``logdens.codegen``) runs a term's loop in blocks of ``BLOCK``
rows when it reads ``X @ beta`` or gathers ``a[idx]`` at its rows: values
that depend on a whole block (a block of ``X`` times ``beta``, gathered
elements) go into per-block buffers before the rows, their adjoints come out
of buffers after them, and the loop over the rows reads and writes only at
its own index, so it vectorizes. These functions write those passes.
"""

from logdens.lines import indent

# Rows per block of a blocked term loop: its buffers and its block of X stay in
# cache (logistic regression, D = 20: 110 us at 128 rows, 114 at 256, 119 at 512;
# hierarchical Poisson the same at all three).
BLOCK = 128
# Columns of X per pass over a block's rows in ``X @ beta`` and its transpose: each
# pass loads and stores the block's buffer once for all of them. Logistic
# regression (D = 20, blocks of 128), gradient and value: 125 and 89 us with 1,
# 112 and 82 with 2, 111 and 81 with 4; compile 0.65, 0.74 and 0.89 s.
UNROLL = 2
# Most distinct indices in a block of sorted rows scattered by masked sums (see ``scatter``).
SPAN = 8


def column_groups(size, group):
    """Lines of ``group(cols)`` over the columns ``0 .. size - 1``, ``UNROLL`` at a
    time: in a loop over ``j`` (columns ``j``, ``j + 1``, ...), then the rest."""
    full = size - size % UNROLL if size >= 2 * UNROLL else 0  # a loop for two groups or more
    lines = []
    if full:
        body = group(["j"] + [f"j + {q}" for q in range(1, UNROLL)])
        lines += [f"for j in range(0, {full}, {UNROLL}):"] + indent(body)
    for lo in range(full, size, UNROLL):
        lines += group([str(c) for c in range(lo, min(lo + UNROLL, size))])
    return lines


def product_group(X, buffer, cols):
    """``buffer[r] += X[b0 + r, cols] @ v<buffer>[cols]`` for a block's rows ``r``."""
    lines = [f"c{q} = {X}[{c}, b0:b1]" for q, c in enumerate(cols)]
    lines[0] += f"  # {X} is stored transposed: {X}[{cols[0]}, b0:b1] is column {cols[0]} of the block"
    lines += [f"w{q} = v{buffer}[{c}]" for q, c in enumerate(cols)]
    terms = " + ".join(f"c{q}[r] * w{q}" for q in range(len(cols)))
    return lines + ["for r in range(b1 - b0):", f"    {buffer}[r] += {terms}"]


def transposed_group(X, buffer, cols, sinks):
    """Adds ``X[b0:b1, c] @ a<buffer>`` through ``sinks[k]`` (value code -> line) for each column ``c = cols[k]``."""
    lines = [f"c{q} = {X}[{c}, b0:b1]" for q, c in enumerate(cols)] + [f"t{q} = 0.0" for q in range(len(cols))]
    lines += ["for r in range(b1 - b0):", f"    adjoint = a{buffer}[r]"]
    lines += [f"    t{q} += c{q}[r] * adjoint" for q in range(len(cols))]
    return lines + [sink(f"t{q}") for q, sink in enumerate(sinks)]


def scatter(view, ordered, entry, adjoints):
    """Lines adding ``adjoints[r]`` to the adjoint of element ``view[r]`` (``view``:
    the block's rows of an index array) for a block's rows; ``entry(k)`` is a
    function from a value's code to the line adding it to element ``k``.

    When the index array never decreases (``ordered``, set by ``set_data``) and
    the block holds fewer than ``SPAN`` distinct indices, ``first .. last``:
    one vectorized masked sum per index. Otherwise one add per row. Sorted
    rows added one by one made every add wait for the one before it, to the
    same element: the gradient of the hierarchical Poisson model (20,000
    rows, 100 groups) took 60 us by masked sums, 72 us by one add per run of
    equal indices and 103 us by one add per row.
    """
    masked = ["for g in range(first, last + 1):", "    t = 0.0", "    for r in range(b1 - b0):",
              f"        t += {adjoints}[r] if {view}[r] == g else 0.0", "    " + entry("g")("t")]
    rows = ["for r in range(b1 - b0):", "    " + entry(f"{view}[r]")(f"{adjoints}[r]")]
    return ([f"first, last = {view}[0], {view}[b1 - b0 - 1]",
             f"if {ordered} and last - first < {SPAN}:  # a few indices: one masked sum each"]
            + indent(masked) + ["else:"] + indent(rows))
