"""kgctl.service"""
