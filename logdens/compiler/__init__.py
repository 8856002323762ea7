"""The compiler: a model's log density and gradient as a lowered program
(``ir``), built by reverse mode (``ad``), written as code by an emitter
(``emit``). See DESIGN.md, "The lowered program"."""

from logdens.compiler.ad import NotLowered, gradient_program, per_sample_program, pointwise_program
from logdens.compiler.cpu_schedule import assign_first, one_pass_sums, row_blocks
from logdens.compiler.ir import Program

__all__ = ["NotLowered", "Program", "cpu_program", "gradient_program", "per_sample_program", "pointwise_program"]


def cpu_program(model, layout, name="core", term=None):
    """The program ``name`` (``gradient_program``; ``pointwise`` or ``per_sample``
    of observed ``term``) with the CPU schedule's passes applied (per-sample
    rows: none yet)."""
    if name == "per_sample":
        return per_sample_program(model, layout, term)
    program = pointwise_program(model, layout, term) if name == "pointwise" else gradient_program(model, layout, name)
    return assign_first(one_pass_sums(row_blocks(program)))
