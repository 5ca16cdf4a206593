"""kgctl.store"""
