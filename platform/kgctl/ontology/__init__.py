"""kgctl.ontology: OWL T-Boxes plus their profiles -> the intermediate model (IR).

>>> from kgctl.ontology import default_ir
>>> ir = default_ir()
>>> sorted(ir.classes[c].name for c in ir.subclasses(ir.prefixes["ontosyn"] + "SynthesisStep"))[:3]
['Add', 'Dry', 'Evaporate']
"""

from kgctl.ontology.ir import OntologyIR
from kgctl.ontology.loader import default_ir, default_ontology_paths, load_ir, pack_ir

__all__ = ["OntologyIR", "default_ir", "default_ontology_paths", "load_ir", "pack_ir"]
