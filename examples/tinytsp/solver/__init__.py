"""The tinytsp solver package: ``solve(points) -> tour`` (indices into ``points``)."""

from solver.tour import solve

__all__ = ["solve"]
