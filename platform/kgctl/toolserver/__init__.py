"""What the three MCP servers of kgctl share: one error shape, input limits checked before any
work, per-session state with expiry, tool annotations, lazy loading and the transports."""
