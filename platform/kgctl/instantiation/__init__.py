"""kgctl.instantiation"""
