"""A model as a graphviz graph, like PyMC's ``model_to_graphviz``.

Nodes: parameters (ellipses, with their prior's name), data (rounded
boxes), deterministics (boxes), observed terms (grey ellipses; an observed
array is its term's node) and potentials (octagons). Edges go from every
parameter, data array or deterministic an expression reads to the variable
it defines. Variables of one shape share a plate, labelled by their dims
(``school (8)``) or by their length.

``graphviz`` (the Python package, which writes DOT source) is an optional
dependency: ``pip install graphviz`` or ``pip install "logdens[viz]"``;
drawing the graph as an image also needs Graphviz's ``dot`` program.
"""

from logdens import expr as ex

_INSTALL = ("Model.to_graphviz needs the graphviz package: pip install graphviz "
            "(or pip install \"logdens[viz]\"); drawing an image also needs Graphviz's "
            "dot program (apt install graphviz, brew install graphviz, conda install graphviz)")

_STYLES = {
    "param": {"shape": "ellipse"},
    "data": {"shape": "box", "style": "rounded, filled", "fillcolor": "white"},
    "deterministic": {"shape": "box"},
    "observed": {"shape": "ellipse", "style": "filled", "fillcolor": "lightgrey"},
    "potential": {"shape": "octagon"},
}


def _import_graphviz():
    try:
        import graphviz
    except ImportError as err:
        raise ImportError(_INSTALL) from err
    return graphviz


def variables(model):
    """``(name, kind, label, shape, parents)`` of every node, in model order."""
    determ = {id(e): name for name, e in model.deterministics.items()}
    priors = {t.name: t for t in model.terms if t.kind == "prior" or (t.kind == "potential" and t.mixture)}
    observed = {t.name: t for t in model.terms if t.kind == "observe" or (t.kind == "likelihood" and t.mixture)}
    names = [*model.params, *model.data_nodes, *model.deterministics, *(t.name for t in model.terms)]
    order = {name: k for k, name in reversed(list(enumerate(names)))}  # first position of each

    def parents(roots, own=None, own_node=None):
        """Named variables the expressions ``roots`` read, but ``own`` itself (its
        observed array; ``own_node``: a deterministic's own expression)."""
        found = []

        def stop(node):  # a deterministic read by another expression is one parent
            if id(node) in determ and node is not own_node:
                found.append(determ[id(node)])
                return True
            return False

        for root in roots:
            for node in ex.nodes(root, stop):
                if isinstance(node, (ex.Param, ex.Data)) and node.name not in (None, own, *model.imputed):
                    found.append(node.name)
        return sorted(set(found), key=order.__getitem__)  # in model order, each once

    out = []
    for name, node in model.params.items():
        term = priors.get(name)
        bounds = [b for b in (node.constraint.lower, node.constraint.upper) if isinstance(b, ex.Expr)]
        out.append((name, "param", _label(term) if term else "Flat", node.shape,
                    parents([*(_arguments(term) if term else ()), *bounds], name)))
    for name, node in model.data_nodes.items():
        if name not in observed and name not in model.imputed:  # imputed: the deterministic of its name
            out.append((name, "data", "Data", node.shape, []))
    for name, e in model.deterministics.items():
        joins = [f"{name}_observed"] if name in model.imputed else []  # as PyMC draws it (logdens.missing)
        out.append((name, "deterministic", "Deterministic", e.shape, parents([e], own_node=e) + joins))
    for term in model.terms:
        if term.name in observed:
            shape = (term.mixture.x if term.mixture else term.value).shape
            out.append((term.name, "observed", _label(term), shape, parents(term.args, term.name)))
        elif term.kind in ("potential", "likelihood") and term.name not in priors:
            out.append((term.name, "potential", "Potential", (), parents([term.value], term.name)))
    return out


def _label(term):
    """A prior's or observed term's distribution: ``Normal``, ``Mixture``."""
    return "Mixture" if term.mixture else term.dist.spec.name


def _arguments(term):
    """The expressions a prior reads besides its parameter (a Mixture's log density
    reads the parameter too; ``parents`` leaves it out)."""
    return term.args if term.mixture else term.args[1:]


def plate_label(shape, dims):
    """``school (8)``, ``obs (5) x feature (2)`` or ``8``: where a variable's plate is drawn."""
    if dims:
        return " x ".join(f"{d} ({n})" for d, n in zip(dims, shape))
    return " x ".join(str(n) for n in shape)


def to_graphviz(model, graph_attr=None):
    """The graph of ``model`` as a ``graphviz.Digraph`` (``.source`` is its DOT text).

    Raises
    ------
    ImportError
        Without the ``graphviz`` package, saying how to install it.
    """
    graphviz = _import_graphviz()
    graph = graphviz.Digraph("model", graph_attr=graph_attr)
    plates = {}
    for name, kind, label, shape, _ in variables(model):
        plate = plate_label(shape, model.dims.get(name)) if shape else None
        plates.setdefault(plate, []).append((name, f"{name}\n~\n{label}", _STYLES[kind]))
    for plate, members in plates.items():
        if plate is None:
            for name, label, style in members:
                graph.node(name, label, **style)
            continue
        with graph.subgraph(name=f"cluster_{plate}") as cluster:
            cluster.attr(label=plate, labeljust="r", labelloc="b", style="rounded")
            for name, label, style in members:
                cluster.node(name, label, **style)
    for name, _, _, _, parents in variables(model):
        for parent in parents:
            graph.edge(parent, name)
    return graph
