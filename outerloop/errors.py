"""Errors a user can meet. Each message names the thing and the fix.

The CLI prints an ``OuterloopError`` on one line and exits non-zero without a
traceback (``--debug`` shows one). Anything else escaping is a bug.
"""


class OuterloopError(Exception):
    """Base class: the message is shown to the user as is."""

    exit_code = 1


class ConfigError(OuterloopError):
    """The home, ``outerloop.toml``, an environment override or a key file is wrong."""


class ContractError(OuterloopError):
    """A target's ``.outerloop.yaml`` does not validate."""


class ComputeError(OuterloopError):
    """A scheduler command failed or refused (the message carries its own words)."""


class ComputeUnavailable(ComputeError):
    """The scheduler could not be asked (missing, timed out): defer, never conclude."""


class ForgeError(OuterloopError):
    """The code host refused or failed a request."""


class ForgeUnavailable(ForgeError):
    """The code host could not be reached or rate-limited us: defer this tick."""


class NotFound(OuterloopError):
    """A named thing (run, issue, pull request, job) does not exist."""


class DeploymentError(OuterloopError):
    """A run's job finds that the deployment (the operator's settings, the cluster)
    keeps the run from going on: the scheduler refuses a job the run needs, a harness
    the settings name cannot start. The job exits ``infra.DEPLOY_EXIT`` saying so; the
    kernel makes the run wait for the operator's fix (never ending it, never costing a
    claim)."""

    exit_code = 78


class ForgeRefused(ForgeError):
    """The code host refused for a reason only a person can remove; ``cause`` names it
    (a ``retry_rule.Cause``: the step waits on a human, retried slowly, never dropped)."""

    cause = ""


class ForgeForbidden(ForgeRefused):
    """The code host refused the kernel's rights (401, 403 not a rate limit, a push
    refused for permission): a person must grant them or fix the token."""

    cause = "rights"


class BranchMoved(ForgeRefused):
    """A fast-forward-only push was refused: the branch holds commits the pushed one
    does not contain (someone else moved it)."""

    cause = "moved"


class ForgeConflict(ForgeRefused):
    """The code host refused for a conflict (409, a merge that does not apply)."""

    cause = "conflict"
