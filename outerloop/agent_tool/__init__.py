"""The agent's side of the channel.

``syscall.py`` is copied into every workspace as ``.outerloop/syscall`` and run by the
agent with whatever ``python3`` it has, so it uses only the standard library and imports
nothing from outerloop. The kernel imports its pure rule checks (``request_problems``
and friends) from the installed package, never from the workspace copy, so the rules
the agent sees and the rules the kernel enforces are the same text.
"""
