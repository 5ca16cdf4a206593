"""kgctl.compiler: IR -> tool specs (pure and deterministic)."""

from kgctl.compiler.schema import model_for
from kgctl.compiler.spec import ArgSpec, ToolSpec, ToolSurface
from kgctl.compiler.tools import compile_tools

__all__ = ["ArgSpec", "ToolSpec", "ToolSurface", "compile_tools", "model_for"]
