"""File formats of run traces, shared by the agent that writes them and the reports that
read them."""

TRACE_FORMAT = "kgctl-agent-trace/1"  # the "format" of an agent run trace (JSON)
TRACE_SUFFIX = ".trace.json"  # <paper><suffix> in a run folder
