"""kgctl.domains: `kgctl domain list|check|new`, the tools around domain packs (the manifest
and its loader are `kgctl.packs`, read by every stage)."""
