"""kgctl.ontology: OWL T-Boxes plus their profiles -> the intermediate model (IR).

>>> from kgctl.ontology import pack_ir
>>> ir = pack_ir("nerre-doping")
>>> sorted(ir.classes[c].name for c in ir.classes)
['Dopant', 'Doping', 'HostMaterial', 'Sentence']
"""

from kgctl.ontology.ir import OntologyIR
from kgctl.ontology.loader import default_ir, default_ontology_paths, load_ir, pack_ir

__all__ = ["OntologyIR", "default_ir", "default_ontology_paths", "load_ir", "pack_ir"]
