"""The compiler: a model's log density and gradient as a lowered program
(``ir``), built by reverse mode (``ad``), written as code by an emitter
(``emit``). See DESIGN.md, "The lowered program"."""

from logdens.compiler.ad import NotLowered, gradient_program
from logdens.compiler.ir import Program

__all__ = ["NotLowered", "Program", "gradient_program"]
