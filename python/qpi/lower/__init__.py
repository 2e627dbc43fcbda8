"""Stage 5: lowering of the planned graph to an engine Plan (lower/compiler.py)."""
from .compiler import Compiler, compile_graph, to_nc4

__all__ = ["Compiler", "compile_graph", "to_nc4"]
