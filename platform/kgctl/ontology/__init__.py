"""kgctl.ontology"""
