"""kgctl.retrieval"""
