"""Chemistry the extraction agent can call, offline.

Names become structures through OPSIN (one persistent JVM), structures become identifiers and
formulas through RDKit, and chemical building units (CBUs) are derived from precursor
structures: organic linkers by removing and counting their binding groups, metal secondary
building units (SBUs) from a table of families with their literature sources
(`sbu_families.yaml`). Java and RDKit are optional: without them every call raises
`ChemistryUnavailable` with one line saying what is missing.
"""

from kgctl.chemistry.errors import ChemistryUnavailable

__all__ = ["ChemistryUnavailable"]
