"""kgctl.compiler: IR -> tool specs (pure and deterministic)."""

from kgctl.compiler.schema import input_schema
from kgctl.compiler.spec import ArgSpec, ToolSpec, ToolSurface
from kgctl.compiler.tools import compile_tools

__all__ = ["ArgSpec", "ToolSpec", "ToolSurface", "compile_tools", "input_schema"]
