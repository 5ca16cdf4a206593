"""kgctl.evaluation"""
