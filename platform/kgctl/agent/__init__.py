"""kgctl.agent"""
