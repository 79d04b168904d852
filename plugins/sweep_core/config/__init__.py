"""Configuration: the YAML front matter of include/ops/<cluster>/ops.md (one cluster's particulars)
and include/sweep.yaml (sweep-wide settings), both read by a strict YAML loader that rejects
duplicate keys and impossible dates by name.
"""
