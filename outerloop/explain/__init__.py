"""``outerloop explain``: a run's decisions replayed from its ledger facts.

``facts`` finds and reads the ledger lines about one run; ``timeline`` folds them, in
the fold's own order and with the fold's own ``apply_event``, and says at each fact
what was decided; ``render`` prints the timeline for people or as JSON.
"""
