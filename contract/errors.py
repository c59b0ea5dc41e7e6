"""The one base of the project's configuration errors.

A :class:`ConfigurationError` says that something the user gave (a stack file, a ``--set``, a
workload's arguments, a quantity, a reference, a skip list, a diff side) or the environment
the user runs a command in (the local Ray cluster, ``raygke local``'s ``LocalError``; a
submission's cluster, ``raygke submit``'s ``SubmitError``) is wrong, in words that name it; it is
never a bug. ``components.kernel.base.StackConfigError`` is the one that carries a stack file's
problems one by one. Every configuration error of the project derives from it (it lives
here, on the lowest floor, so that ``contract``, the catalog, the components, the workloads and
``raygke`` can all raise one), so ``raygke`` handles them in one place
(:func:`raygke.cli.main`: ``error: <message>`` on stderr and exit :attr:`~ConfigurationError.exit_code`),
while any other exception stays an internal error (exit 3).
"""

from __future__ import annotations


class ConfigurationError(ValueError):
    """Something the user configured is wrong; ``str(e)`` says what, naming it.

    A ``ValueError`` (a value the user gave is wrong), so the callers that turn a ``ValueError``
    into a problem line keep doing so.

    Attributes:
        exit_code: the exit code of ``raygke`` when the error reaches its command line
            (:mod:`raygke.console`): 1, the configuration is invalid; 2, a usage error (an
            option, a ``--set`` or a file that cannot be used as given).
    """

    exit_code: int = 1
