"""A run as the kernel plans it: where its files lie (``paths``), the jobs it submits
(``jobs``), the texts it renders (``render``, ``findings``) and its clones
(``workspace``). Below the kernel's lanes and executor; ``attempt/`` (the run's own jobs)
sits above them and uses these too. Imports nothing, so importing ``run.paths`` from a
low layer runs no other code."""
