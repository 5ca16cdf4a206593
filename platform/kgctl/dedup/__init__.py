"""kgctl.dedup"""
