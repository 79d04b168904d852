"""The flag rules (spec §1 LIVENESS, §4 "Flag + hand off", §5 standing constraints): every flag names
its rule; rules report and hand off, they never act.
"""
