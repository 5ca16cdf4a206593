"""kgctl.compiler"""
