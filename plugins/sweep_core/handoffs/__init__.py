"""The hand-offs a sweep triggers, each a sub-package of the same parts: ``plan`` (the pure
decision over typed inputs), ``usecase`` (its steps, I/O given as arguments: ports.py) and, when it
sends commands to a login node, ``remote`` (their text, every value shlex-quoted, and their
readers); ``kernel`` what they all stand on; ``dispatch`` the sweep's side (which get work, the
views their policies judge); at the top only what several hand-offs share.
"""
