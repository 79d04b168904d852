"""The flag rules (spec §1 LIVENESS, §4 "Flag + hand off", §5 standing constraints): one module per rule
family, each rule ``rule_<name>(ctx) -> list[Flag]`` listed in registry.RULES; every flag names its rule,
thresholds come from ``rules:`` in include/sweep.yaml (config.py). Rules report and hand off, never act.
"""
