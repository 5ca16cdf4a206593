"""kgctl: executable ontologies for literature knowledge graphs."""

__version__ = "0.1.0"
