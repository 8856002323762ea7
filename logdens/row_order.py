"""Rows of observed terms sorted by their group index when data are set.

A term such as ``PoissonLog((mu + sigma * z)[group] + b * x)`` scatters one
adjoint per row into ``z``'s entries. With the rows in ``group`` order, a
block of rows holds a few groups and the scatter becomes one vectorized sum
per group (``codegen._scatter``): the hierarchical Poisson model's gradient,
20,000 shuffled rows and 100 groups, took 72 us in the order given and 58 us
sorted. The sum over rows does not depend on their order, so ``set_data``
packs such a term's row-aligned arrays sorted by its index for the value and
gradient, and packs them once more in the user's order for the per-row
outputs (pointwise log-likelihood, per-sample gradients): twice the memory
for the data, no copy per call.

A term is sorted when it gathers a parameter expression at its rows, reads
no parameter vector at its rows (``rate[i]`` would pair with another row),
and every array it reads at its rows is read nowhere else, except at the
rows of terms sorted by the same index.
"""

import numpy as np

from logdens import expr as ex


class RowOrder:
    """Which observed terms are sorted, by which index array, and what moves with them.

    ``terms``: term name -> index array name; ``arrays``: index array name ->
    names of the arrays permuted with it (the index among them).
    """

    def __init__(self, model, layout):
        candidates, elsewhere = {}, set()
        for term in model.terms:
            at_row, other, indices, row_only = _reads(term, layout)
            elsewhere |= other
            if term.kind == "observe" and indices and row_only:
                candidates[term.name] = (indices[0], at_row)
            else:
                elsewhere |= at_row
        changed = True
        while changed:  # dropping a term puts its arrays elsewhere, which may drop another
            changed = False
            for name, (index, at_row) in list(candidates.items()):
                shared = {n for t, (i, rows) in candidates.items() if t != name and i != index for n in rows}
                if at_row & (elsewhere | shared):
                    del candidates[name]
                    elsewhere |= at_row
                    changed = True
        self.terms = {name: index for name, (index, _) in candidates.items()}
        self.arrays = {}
        for index, at_row in candidates.values():
            self.arrays.setdefault(index, set()).update(at_row)

    def sort(self, arrays):
        """``arrays`` with the sorted terms' rows in index order (a stable sort);
        ``arrays`` itself when every such index is sorted already."""
        out = arrays
        for index, names in self.arrays.items():
            group = arrays[index]
            if np.all(group[1:] >= group[:-1]):
                continue
            order = np.argsort(group, kind="stable")
            out = dict(out) if out is arrays else out
            for name in names:
                out[name] = arrays[name][order]
        return out


def _reads(term, layout):
    """(arrays read at the term's rows, arrays read otherwise, gather indices at the
    rows whose source reads parameters, whether no parameter vector is read at the rows)."""
    at_row, other, indices = set(), set(), []
    row_only = True

    seen = set()  # (node, row): a shared sub-expression is visited once per context

    def walk(node, row):
        nonlocal row_only
        if (id(node), row) in seen:
            return
        seen.add((id(node), row))
        if isinstance(node, ex.Data):
            (at_row if row and node.shape != () else other).add(layout.data_name(node))
        elif isinstance(node, ex.Param):
            row_only = row_only and not (row and node.shape != ())
        elif isinstance(node, ex.Gather):
            source, index = node.children
            walk(index, row)
            walk(source, False)
            if row and source.depends_on_params():
                indices.append(layout.data_name(index))
        elif isinstance(node, ex.MatVec):
            matrix, vector = node.children
            walk(matrix, row)
            walk(vector, False)
        else:  # a sum reads its argument whole; a slice reads other rows
            row_only = row_only and not (row and isinstance(node, ex.Slice))
            for child in node.children:
                walk(child, row and not isinstance(node, (ex.Sum, ex.Slice)))

    for arg in term.args:
        walk(arg, True)
    return at_row, other, indices, row_only
