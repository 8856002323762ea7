"""The GPU schedule: passes over a lowered program that say how a GPU runs it.

A point's evaluation is three launches (``stages``): ``prepare`` (the
constrained values of vector parameters, the gradient zeroed), ``terms``
(every term, a grid of rows x points) and ``finish`` (one thread per point:
the event transforms' reverse sweeps, the log-Jacobians, the result).

In ``terms`` every thread of a point runs the statements outside the maps
(values of the call: cheap, the same on each thread), and a map's rows are
spread over the threads (``Spread``: a grid-stride loop) where that is
exact. A value then has one of three states:

- ``U``: every thread holds it (a parameter, its transform);
- ``P``: each thread holds a part, the value is their sum (what a spread
  map adds into a local of the call, and linear functions of that: an
  adjoint times a value of the call, a sum of adjoints);
- ``F``: only the point's first thread holds it (``First``): what a map that
  is not spread computes (a reduction read again by the term: its rows on
  one thread per point, as the engine runs such terms), and what depends on it.

A map is spread when its rows read only ``U`` values, touch no workspace
(running sums: a thread's local array), do not read what they add up, add
(not ``max``), and what they add up is used only linearly afterwards; else
it runs on the first thread. Each add into an array other threads add to
(``GridAdd``) says how, by its ``ir.KINDS`` kind: ``shared`` at a
fixed entry into a per-thread sum added once per block (``block``);
``scatter`` atomically, into the block's copy of a short parameter's
adjoints in shared memory where they fit (``shared``, added to the gradient
once per block: rows of many groups would queue on a few addresses);
``own_row`` a plain add where every add into that array is at the row of a
spread map (one thread owns each entry), else atomically. A ``P`` value is added by every thread, a ``U`` or ``F`` value
once per point.
"""

import string
from typing import NamedTuple

from logdens.compiler import ir
from logdens.ops import OPS

#: Longest vector whose product adjoints (``DotAdjoint``) a thread sums in a
#: local array flushed per block (``block``); longer ones are atomic per row.
LOCAL_VECTOR = 64
#: Float64 entries of shared memory a block may hold for the copies of ``shared``
#: adds (32 KB of the 48 KB a block may declare statically).
SHARED_ENTRIES = 4096
#: Linear ops: an op of these with a ``P`` argument gives a ``P`` value when its
#: other arguments are ``P`` (``add``, ``sub``) or ``U`` (``mul``'s other factor).
LINEAR = {"add": "P", "sub": "P", "neg": "P", "mul": "U"}
_ORDER = {"U": 0, "F": 1, "P": 2}


class Spread(NamedTuple):
    """``map``'s rows spread over the point's threads (a grid-stride loop)."""

    map: ir.Map

    def __str__(self):
        return f"{self.map}  (rows over the threads)"


class First(NamedTuple):
    """Statements only the point's first thread runs."""

    body: tuple

    def __str__(self):
        return "on the first thread of the point:"


class GridAdd(NamedTuple):
    """``statement`` (an ``ir.Accumulate`` into a buffer or ``lp``, an
    ``ir.DotAdjoint``), which other threads add to as well, done ``how``:
    ``block`` (a per-thread sum, summed over the block and added with one
    atomic add per block), ``atomic``, ``shared`` (atomically into the block's
    copy in shared memory, added once per block) or ``plain``."""

    statement: object
    how: str

    def __str__(self):
        return f"{self.statement}  [{self.how}]"


class Stages(NamedTuple):
    """A program's statements by launch (see the module docstring)."""

    name: str
    prepare: tuple
    terms: tuple
    finish: tuple

    def lines(self):
        out = []
        for stage in ("prepare", "terms", "finish"):
            out.append(f"{stage}:")
            _lines(getattr(self, stage), 1, out)
        return out

    def __str__(self):
        return "\n".join(self.lines())


def _lines(body, depth, out):
    for s in body:
        out.append("    " * depth + str(s))
        nested = s.map.body if isinstance(s, Spread) else getattr(s, "body", None)
        if isinstance(s, (Spread, First, ir.Map, ir.When)):
            _lines(nested, depth + 1, out)


def stages(program, lengths):
    """``program`` split into its launches, its ``terms`` scheduled on the threads;
    ``lengths``: each parameter's number of gradient entries."""
    prepare, terms, finish = [], [], []
    for s in program.body:
        if isinstance(s, ir.Zero) and s.buffer.kind in ("grad", "aconstrained") or (
                isinstance(s, ir.Constrain) and s.out is None):
            prepare.append(s)
        elif isinstance(s, ir.ConstrainAdjoint) or (
                isinstance(s, ir.When) and s.body and all(isinstance(x, ir.Jacobian) for x in s.body)):
            finish.append(s)
        else:
            terms.append(s)
    return Stages(program.name, tuple(prepare), grid(tuple(terms), lengths), tuple(finish))


class _Retry(Exception):
    """Maps that must not be spread (their ids): the analysis runs again without them."""

    def __init__(self, maps):
        super().__init__()
        self.maps = maps


def grid(body, lengths):
    """``body`` (a stage's statements) with its maps spread where exact, the
    statements of ``F`` values on the first thread, adds into shared arrays
    as ``GridAdd`` (see the module docstring; ``lengths`` as ``stages``')."""
    spread = {id(s) for s in ir.walk(body) if isinstance(s, ir.Map) and _spreadable(s)}
    known = {}
    while True:
        threads = _Threads(spread, known)
        try:
            out = threads.place(body)
        except _Retry as retry:
            if not retry.maps & spread:  # every part has an origin: this would run forever
                raise RuntimeError(f"gpu_schedule: no spread map to take back ({retry.maps})") from None
            spread, known = spread - retry.maps, {}  # states learnt with those maps spread are stale
            continue
        if threads.final == known:
            return _owned(out, lengths)
        known = threads.final


def _spreadable(m):
    """Whether map ``m`` may be spread at all: forward, no workspace, each local
    of the call it adds to added (not ``max``) and not read by its rows."""
    if m.backward or any(isinstance(s, ir.Map) for s in m.body):
        return False
    inner = _defined(m.body)
    read = {v.name for s in ir.walk(m.body) for v in _reads(s)}
    for s in ir.walk(m.body):
        if any(b.kind == "workspace" for b in buffers(s)):
            return False
        if isinstance(s, ir.Accumulate) and isinstance(s.dest, ir.Value) and s.dest.name not in inner:
            if s.op != "add" or s.dest.name in read:
                return False
    return True


class _Threads:
    """One run of the analysis (see ``grid``): ``final`` the states of the locals
    of the call with the maps their parts come from, ``known`` those of the
    previous run."""

    def __init__(self, spread, known):
        self.spread, self.known = spread, known
        self.state, self.origin, self.final = {}, {}, {}

    def of(self, v):
        return self.state.get(v.name, "U")

    def set(self, v, state, origin=frozenset()):
        self.state[v.name], self.origin[v.name] = state, origin

    def place(self, body):
        """The statements of ``body`` placed; consecutive first-thread ones in one ``First``."""
        out = []
        for s in body:
            placed, first = self.statement(s)
            if first and out and isinstance(out[-1], First):
                out[-1] = First(out[-1].body + (placed,))
            else:
                out.append(First((placed,)) if first else placed)
        return tuple(out)

    def statement(self, s):
        """``(s placed, whether on the first thread only)``."""
        if isinstance(s, ir.When):
            return s._replace(body=self.place(s.body), otherwise=self.place(s.otherwise)), False
        if isinstance(s, ir.Map):
            return self.map(s)
        states = [self.of(v) for v in _reads(s)]
        partial = [v for v in _reads(s) if self.of(v) == "P"]
        first = "F" in states
        if partial and not self._linear(s):
            raise _Retry(frozenset().union(*(self.origin[v.name] for v in partial)))
        origin = frozenset().union(*(self.origin[v.name] for v in partial)) if partial else frozenset()
        out = "P" if partial else "F" if first else "U"
        if isinstance(s, ir.Load) and s.buffer.kind == "workspace":
            out, first = "F", True  # filled by a map on the first thread
        for v in _written(s):
            self.set(v, out, origin)
        if isinstance(s, ir.Accumulate) and isinstance(s.dest, ir.Value):
            return s, self.add_local(s.dest, out, origin)
        if _shared_buffer(s):
            if partial:
                return GridAdd(s, _how(s, None)), False
            return GridAdd(s, _how(s, None)), True
        return s, first or (isinstance(s, ir.Store) and not partial and s.buffer.kind != "workspace")

    def _linear(self, s):
        """Whether ``s`` is linear in its ``P`` reads (see ``LINEAR``)."""
        if isinstance(s, ir.Accumulate):
            return s.op == "add" and (s.at is None or not isinstance(s.at.index, ir.Value)
                                      or self.of(s.at.index) != "P") and not (
                isinstance(s.dest, ir.Buffer) and s.dest.kind == "workspace")
        if not isinstance(s, ir.Let) or s.op not in LINEAR:
            return False
        states = [self.of(a) if isinstance(a, ir.Value) else "U" for a in s.args]
        others = LINEAR[s.op]
        if others == "P":
            return all(x == "P" for x in states)
        return states.count("P") == 1 and all(x in ("P", "U") for x in states)

    def add_local(self, dest, state, origin):
        """An add of a ``state`` value into local ``dest``: whether on the first thread only."""
        before, known = (d.get(dest.name, ("U", frozenset())) for d in (self.final, self.known))
        joined = max(before[0], known[0], state, key=_ORDER.get)
        origin = before[1] | known[1] | origin
        self.final[dest.name] = (joined, origin)
        self.set(dest, joined, origin)
        return state == "F" or (joined == "P" and state == "U")

    def map(self, m):
        free = [v for s in ir.walk(m.body) for v in _reads(s) if v.name not in _defined(m.body)]
        partial = [v for v in free if self.of(v) == "P"]
        if partial:
            raise _Retry(frozenset().union(*(self.origin[v.name] for v in partial)))
        spread = id(m) in self.spread
        if spread and any(self.of(v) == "F" for v in free):
            raise _Retry(frozenset([id(m)]))
        state, origin = ("P", frozenset([id(m)])) if spread else ("F", frozenset())
        inner = _defined(m.body)
        body = []
        for s in m.body:
            if isinstance(s, ir.Accumulate) and isinstance(s.dest, ir.Value) and s.dest.name not in inner:
                self.add_local(s.dest, state, origin)
            body.append(GridAdd(s, _how(s, m.index if spread else None)) if _shared_buffer(s) else s)
        m = m._replace(body=tuple(body))
        return (Spread(m), False) if spread else (m, True)


def _how(s, row):
    """How ``s`` (into a shared buffer) adds: ``own`` (a plain add if every add
    into its array is one, ``_owned``) at the row ``row`` of a spread map."""
    if s.dest.kind == "rows":  # a per-sample row: its observation's own (one thread runs each)
        return "plain"
    if isinstance(s, ir.DotAdjoint):
        return "block" if isinstance(s.length, ir.Size) and s.length.kind == "fixed" and \
            s.length.value <= LOCAL_VECTOR else "atomic"
    if s.dest.kind == "lp" or (s.at is not None and s.at.index is None):
        return "block"
    if s.kind == "own_row" and row is not None and s.at.index == row:
        return "own"
    return "atomic"


def _owned(body, lengths):
    """``body`` with its ``own`` adds plain where every add into their array is
    ``own``, else atomic; scatters into a short parameter's gradient ``shared``
    (the first ones that fit in ``SHARED_ENTRIES``)."""
    hows, shared = {}, set()
    for s in ir.walk(_unwrapped(body)):
        if isinstance(s, GridAdd):
            hows.setdefault(_array(s.statement), set()).add(s.how)
            if _scatter(s) and s.statement.dest.name not in shared and lengths[s.statement.dest.name] + sum(
                    lengths[p] for p in shared) <= SHARED_ENTRIES:
                shared.add(s.statement.dest.name)
    plain = {a for a, h in hows.items() if h == {"own"}}

    def fix(s):
        if isinstance(s, GridAdd) and s.how == "own":
            return s._replace(how="plain" if _array(s.statement) in plain else "atomic")
        if isinstance(s, GridAdd) and _scatter(s) and s.statement.dest.name in shared:
            return s._replace(how="shared")
        if isinstance(s, Spread):
            return Spread(fix(s.map))
        if isinstance(s, (First, ir.Map)):
            return s._replace(body=tuple(map(fix, s.body)))
        if isinstance(s, ir.When):
            return s._replace(body=tuple(map(fix, s.body)), otherwise=tuple(map(fix, s.otherwise)))
        return s
    return tuple(map(fix, body))


def _scatter(g):
    """Whether ``GridAdd`` ``g`` adds a gathered element's adjoint into the gradient atomically."""
    s = g.statement
    return g.how == "atomic" and isinstance(s, ir.Accumulate) and s.kind == "scatter" and s.dest.kind == "grad"


def _unwrapped(body):
    """``body`` with each ``Spread`` and ``First`` replaced by what it holds (for ``ir.walk``)."""
    out = []
    for s in body:
        if isinstance(s, Spread):
            out += [s.map._replace(body=_unwrapped(s.map.body))]
        elif isinstance(s, First):
            out += list(_unwrapped(s.body))
        elif isinstance(s, ir.Map):
            out += [s._replace(body=_unwrapped(s.body))]
        elif isinstance(s, ir.When):
            out += [s._replace(body=_unwrapped(s.body), otherwise=_unwrapped(s.otherwise))]
        else:
            out.append(s)
    return tuple(out)


def unwrapped(body):
    """Every statement of a scheduled ``body``, nested ones included, in order."""
    return list(ir.walk(_unwrapped(body)))


def _array(s):
    return (s.dest.kind, s.dest.name)


def _shared_buffer(s):
    """Whether ``s`` adds into an array or ``lp`` that every thread of the point may add to."""
    return isinstance(s, (ir.Accumulate, ir.DotAdjoint)) and isinstance(s.dest, ir.Buffer) and \
        s.dest.kind != "workspace"


def _values(x):
    if isinstance(x, ir.Value):
        yield x
    elif isinstance(x, (tuple, ir.At)):
        for y in x:
            yield from _values(y)


def _reads(s):
    """The values statement ``s`` reads (its nested bodies' not included); a
    ``Partial`` only those its derivative's template names (``d(a - b)/db`` is
    -1.0: it reads neither, and an adjoint through it stays linear)."""
    if isinstance(s, (ir.Map, ir.When, Spread, First)):
        return []
    if isinstance(s, ir.Partial):
        names = {field for _, field, _, _ in string.Formatter().parse(OPS[s.op].derivatives[s.k]) if field}
        used = [a for k, a in enumerate(s.args) if str(k) in names] + ([s.value] if "v" in names else [])
        return [v for v in used if isinstance(v, ir.Value)]
    return [v for field, x in s._asdict().items() if field not in ("out", "outs", "dest") for v in _values(x)]


def _written(s):
    out = [getattr(s, "out", None), getattr(s, "dout", None)] + list(getattr(s, "outs", ()))
    return [v for v in out if isinstance(v, ir.Value)]


def _defined(body):
    return {v.name for s in ir.walk(body) for v in _written(s)}


def buffers(s):
    """The buffers statement ``s`` names (its nested bodies' not included)."""
    return [x for x in s if isinstance(x, ir.Buffer)] if isinstance(s, tuple) and not isinstance(
        s, (ir.Map, ir.When)) else []
