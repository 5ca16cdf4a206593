"""kgctl.grounding"""
