"""Automations: rules triggered by catalogue events or schedules, with conditions and actions run through the domain
services; every run recorded.
"""
