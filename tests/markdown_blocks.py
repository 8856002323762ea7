"""The ```python blocks of a Markdown file (the README, a docs page), for the
tests that run them as written.

A block runs unless an HTML comment on the line just above its fence (which
Markdown renders as nothing) says otherwise:

``<!-- test: skip: reason -->``
    never run here (a GPU, a cluster); a test of its own may run it another way.
``<!-- test: requires pkg1 pkg2 -->``
    run only where these packages import (optional peers: emcee, nutpie, ...).
"""

import importlib.util
import pathlib
import re
import textwrap
from typing import NamedTuple, Optional, Tuple

ROOT = pathlib.Path(__file__).resolve().parent.parent

_BLOCK = re.compile(r"(?:<!-- test: (?P<marker>[^\n]*?) -->\n)?(?P<indent>[ \t]*)```python\n(?P<code>.*?)\n[ \t]*```",
                    re.S)


class Block(NamedTuple):
    code: str
    line: int                   # the fence's line in the file, 1-based
    skip: Optional[str]         # why it never runs here, or None
    requires: Tuple[str, ...]   # packages it needs


def python_blocks(path):
    """The ```python blocks of ``path`` (relative to the repository root), in order."""
    text = (ROOT / path).read_text()
    blocks = []
    for match in _BLOCK.finditer(text):
        marker = match.group("marker") or ""
        if marker and not (marker.startswith("skip: ") or marker.startswith("requires ")):
            raise ValueError(f"{path}: unknown test marker {marker!r} (use 'skip: why' or 'requires pkg ...')")
        blocks.append(Block(code=textwrap.dedent(match.group("code")),
                            line=text.count("\n", 0, match.start("indent")) + 1,
                            skip=marker[len("skip: "):] if marker.startswith("skip: ") else None,
                            requires=tuple(marker.split()[1:]) if marker.startswith("requires ") else ()))
    if text.count("<!-- test:") != sum(bool(b.skip or b.requires) for b in blocks):
        raise ValueError(f"{path}: a '<!-- test: ... -->' marker not on the line just above a ```python fence")
    return blocks


def missing(block):
    """The packages ``block`` requires that do not import here."""
    return [name for name in block.requires if importlib.util.find_spec(name) is None]


def run_blocks(path):
    """Run the runnable blocks of ``path`` in order in one namespace, each
    compiled under its file and line so a traceback points at the page;
    returns the namespace and the blocks left out."""
    namespace = {}
    left_out = []
    for block in python_blocks(path):
        if block.skip is not None or missing(block):
            left_out.append(block)
            continue
        code = "\n" * (block.line) + block.code  # line numbers as in the file
        exec(compile(code, str(path), "exec"), namespace)
    return namespace, left_out
