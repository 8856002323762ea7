"""MkDocs hooks: the parts of the site generated from the code when it is built.

- ``<!-- generated: distributions -->`` becomes the table of every
  distribution in the registry (``logdens.distributions.ALL`` and
  ``MULTIVARIATE``): its parameters with their constraints and event axes,
  its support, its docstring's first paragraph and its scipy.stats twin, so the page cannot fall
  behind the code.
- ``<!-- generated: examples -->`` becomes every script in ``examples/``:
  its docstring, its figure (``docs/figures/<name>.png``, saved by running
  it with ``--quick --out docs/figures``) and its source. A script that saves
  a figure which is not there fails the build.
"""

import ast
import pathlib
import re

from mkdocs.exceptions import PluginError

ROOT = pathlib.Path(__file__).resolve().parent.parent


def _constraint(constraint):
    """A constraint as the page shows it: ``> 0``, ``real``, ``simplex``."""
    text = str(constraint).removeprefix("must be ").removeprefix("ld.")
    return re.sub(r"(\d)\.0\b", r"\1", text)


def _distribution_row(cls):
    spec = cls.spec
    events = spec.events or ((),) * (len(spec.params) + 1)
    params = ", ".join(f"`{p.name}`" + (f" ({', '.join(axes)})" if axes else "") + f": {_constraint(p.constraint)}"
                       for p, axes in zip(spec.params, events[1:]))
    value = f"({', '.join(events[0])}) " if events[0] else ""
    doc = cls.__doc__ or ""
    summary = " ".join(doc.strip().split("\n\n")[0].split())
    scipy = re.search(r"scipy: ``(.*?)``", " ".join(doc.split()))
    return (f"| `{cls.__name__}` | {params} | {value}{_constraint(spec.support)} | {summary} | "
            f"{f'`{scipy.group(1)}`' if scipy else ''} |")


def distribution_tables():
    """Markdown tables of the registry's univariate and multivariate distributions."""
    from logdens.distributions import ALL, MULTIVARIATE
    header = "| Distribution | Parameters: constraint | Support | | scipy.stats |\n|---|---|---|---|---|\n"
    tables = []
    for title, group in (("Univariate", ALL), ("Multivariate and series", MULTIVARIATE)):
        rows = "\n".join(_distribution_row(cls) for cls in sorted(group, key=lambda c: c.__name__))
        tables.append(f"### {title}\n\n{header}{rows}\n")
    return "\n".join(tables)


def examples_section():
    """Every example script: its docstring, its figure and its source."""
    parts = []
    for path in sorted((ROOT / "examples").glob("*.py")):
        if path.stem == "common":
            continue
        source = path.read_text()
        doc = ast.get_docstring(ast.parse(source)) or ""
        title, _, body = doc.partition("\n")
        parts.append(f"## {path.stem}\n\n**{title.strip()}**\n\n{body.strip()}\n")
        if f'/{path.stem}.png"' in source:
            figure = ROOT / "docs" / "figures" / f"{path.stem}.png"
            if not figure.exists():
                raise PluginError(f"{figure} is missing: run python examples/{path.name} --quick "
                                        "--out docs/figures")
            parts.append(f"![{path.stem}](figures/{path.stem}.png)\n")
        code = "\n".join("    " + line if line else "" for line in source.splitlines())
        parts.append(f'??? example "Source: examples/{path.name}"\n\n    ```python\n{code}\n    ```\n')
    return "\n".join(parts)


GENERATED = {"<!-- generated: distributions -->": distribution_tables,
             "<!-- generated: examples -->": examples_section}


def on_page_markdown(markdown, page, config, files):
    """Fill in the generated parts of a page (MkDocs' hook)."""
    for marker, generate in GENERATED.items():
        if marker in markdown:
            markdown = markdown.replace(marker, generate())
    return markdown
