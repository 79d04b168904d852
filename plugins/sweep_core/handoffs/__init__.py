"""The hand-offs a sweep triggers, each in its own sub-package holding its plan (guards, pure),
its remote script and its use-case (the DAG's steps, I/O given as arguments: ports.py): cleanup,
cancel, harvest (tracker rows), chain (HF-only SFT chain); plus which hand-offs get work
(triggers) and the hub-evidence judge they share.
"""
