"""The dependency cache: a target's packages, built on the tick host, read by its jobs.

Compute nodes usually cannot reach a package index. A target whose benchmark needs
packages names a pip requirements (lock) file in its contract (``dependencies:
requirements``); the kernel reads that file **from the base tree** (the default
branch head), keys it by the sha256 of its bytes and the interpreter it is built for
(``lock.cache_key``), and warms ``<home>/deps/<owner>__<name>/<key>/site/`` with
``pip install --target --only-binary :all:`` on the tick host (``warm``). Every
sandboxed child of the target's runs (sessions, launches, both sides of an eval pair,
the scorer) gets that directory read-only and on ``PYTHONPATH``; nothing a run writes
can reach it. See docs/architecture.md ("The dependency cache").

- ``lock``: the lock's rules (names and versions only) and the key (pure);
- ``store``: the cache's layout and what state a key is in (warm, warming, failed,
  cold), read from its files;
- ``warm``: the warm itself (a bounded, detached process on the tick host) and how the
  executor starts it.
"""
