"""Configuration: the YAML front matter of include/ops/<cluster>/ops.md (one cluster's particulars)
and include/sweep.yaml (sweep-wide settings), read by a strict YAML loader (duplicate keys and
impossible dates rejected by name) and validated by one pydantic schema (*_schema.py: every key,
its type and its only default; an unknown key is an error naming the file and the key path).
"""
