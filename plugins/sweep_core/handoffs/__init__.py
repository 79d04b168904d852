"""The hand-offs a sweep triggers, each in its own sub-package holding its plan (guards, pure)
next to its remote script: cleanup, cancel, harvest (tracker rows), chain (HF-only SFT chain);
plus which hand-offs a sweep triggers and the hub-evidence judge they share.
"""
