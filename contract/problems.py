"""The one problem type of the project: :class:`Problem`, the line a check prints, carrying the
stack field it is about, the rule that found it and its severity.

Standard library only, on the lowest floor (``contract/``), so that every layer can make one: the
workloads' argument checks (:mod:`contract.args.base`), the catalog, the components' checks and
rules, ``raygke``. :mod:`components.kernel.problems` re-exports it beside the one rule type
(:class:`components.kernel.problems.Rule`) and describes who makes Problems.
"""

from __future__ import annotations

import re
from typing import Any

SEVERITIES = ("error", "warning")


class Problem(str):
    """One problem of a stack: the readable line ``raygke check`` prints, carrying the stack
    field it is about and the rule that found it.

    A Problem *is* its printed line (a ``str`` subclass, immutable like one), so every consumer
    of problem lines - ``--format text``, the policy pack, ``StackConfigError.problems``, tests - reads
    it unchanged, while ``--format json|github`` read :attr:`path` and :attr:`rule`.

    Attributes:
        path: the stack field it is about, as ``node_pools[tpu].tpu.topology``: top-level key,
            then ``.key`` per mapping level and ``[name]`` per list entry (the entry's ``name``
            where list entries have one, else its index); ``""`` when it is about the file as a
            whole (a YAML error) or no one field (a render that fails).
        message: the readable line (it names the field in its words); ``str(problem)``.
        rule: the id of the rule or validator that found it (a rule function's name, ``field``
            for a pydantic field error, ``crd-schema``, ``operator``, ``names``, ...).
        severity: ``error`` (refused) or ``warning``.
        line, column: the 1-based position in the stack file where the producer knows it and
            the file cannot be walked by :attr:`path` (a key given twice: the YAML is not
            loadable, so ``raygke check --format json|github`` takes the position from here);
            None otherwise (the position is found from :attr:`path`, :mod:`raygke.report`).
        object_field: the field of a *rendered object* it is about, a dotted path into the
            object (``spec.rayClusterSpec.workerGroupSpecs[1].replicas``), given by the checks of
            rendered objects (the CRD schema check, :func:`components.kernel.crdschema.validate_object`;
            the KubeRay operator rules, :mod:`components.raycrs.operator`; the feature-gate check,
            :func:`components.raycrs.gates.gate_problems`), so that
            :func:`components.stack.checks.check_manifests` finds the stack entry (the worker
            group) from the data, never from the words; ``""`` otherwise. It is not :attr:`path`:
            ``path`` is a field of the *stack file* (``--format github`` walks the file by it),
            and the object's field stays apart until the runner sets the stack's.
    """

    path: str
    rule: str
    severity: str
    line: int | None
    column: int | None
    object_field: str

    def __new__(
        cls,
        path: str,
        message: str,
        rule: str = "",
        severity: str = "error",
        *,
        line: int | None = None,
        column: int | None = None,
        object_field: str = "",
    ) -> Problem:
        if severity not in SEVERITIES:
            raise ValueError(f"severity {severity!r} is not one of {', '.join(SEVERITIES)}")
        self = super().__new__(cls, path_colon(path, message))
        object.__setattr__(self, "path", path)
        object.__setattr__(self, "rule", rule)
        object.__setattr__(self, "severity", severity)
        object.__setattr__(self, "line", line)
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "object_field", object_field)
        return self

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Problem is immutable")

    def __reduce__(self) -> tuple[Any, ...]:
        return (
            _rebuild,
            (
                self.path,
                self.message,
                self.rule,
                self.severity,
                self.position,
                self.object_field,
            ),
        )

    def __repr__(self) -> str:
        at = f", line={self.line!r}, column={self.column!r}" if self.line is not None else ""
        if self.object_field:
            at += f", object_field={self.object_field!r}"
        return (
            f"Problem(path={self.path!r}, message={self.message!r}, rule={self.rule!r}, "
            f"severity={self.severity!r}{at})"
        )

    @property
    def position(self) -> tuple[int, int] | None:
        """(line, column), 1-based, when the producer gave them; else None."""
        if self.line is None:
            return None
        return self.line, self.column or 1

    def changed(self, **changes: Any) -> Problem:
        """This problem with the attributes ``changes`` names (``message``, ``path``, ...) set."""
        fields = {"path": self.path, "message": self.message, "rule": self.rule}
        fields |= {"severity": self.severity, "line": self.line, "column": self.column}
        fields |= {"object_field": self.object_field}
        fields |= changes
        message = fields.pop("message")
        return Problem(fields.pop("path"), message, **fields)

    @property
    def message(self) -> str:
        """The printed line."""
        return str.__str__(self)

    def with_rule(self, rule: str) -> Problem:
        """This problem with ``rule`` set when it has none."""
        return self if self.rule or not rule else self.changed(rule=rule)

    def with_path(self, path: str) -> Problem:
        """This problem with ``path`` set when it has none."""
        return self if self.path or not path else self.changed(path=path)

    def as_dict(self) -> dict[str, Any]:
        """``{"path", "message", "rule", "severity"}`` (``--format json`` adds the position)."""
        return {
            "path": self.path,
            "message": self.message,
            "rule": self.rule,
            "severity": self.severity,
        }


_LEAD = re.compile(r"([\w-]+(?:\.[\w.-]+|\[[^\]\s]+\])+) (?=['\"\d{\[(A-Z-])")


def path_colon(path: str, message: str) -> str:
    """``message`` in the one line shape ``<field>: <text>``: a message that opens with its
    ``path`` (or an ancestor of it, a list entry as ``[name]`` or ``.name``) followed by a space
    and a value (a quote, digit, ``{``, ``[``, ``(``, ``-`` or a capital: ``'q'``, ``1001``,
    ``STRICT_PACK``), as ``jobs[x].queue 'q' is not declared`` of path ``jobs[x].queue``, gets the
    colon after that field (``jobs[x].queue: 'q' is not declared``), as field errors and most
    rules write it. A sentence (``jobs[x].worker_group is not set ...``), a bare word
    (``capacity rules ...``) or any other opening is kept as written.

    >>> path_colon("jobs[x].queue", "jobs[x].queue 'q' is not declared")
    "jobs[x].queue: 'q' is not declared"
    >>> path_colon("jobs[x].queue", "jobs[x]: queue 'q' is not declared")
    "jobs[x]: queue 'q' is not declared"
    """
    m = _LEAD.match(message) if path else None
    if m is None:
        return message
    lead = [p.strip("[]") for p in path_parts(m.group(1))]
    if lead != [p.strip("[]") for p in path_parts(path)][: len(lead)]:
        return message
    return f"{m.group(1)}: {message[m.end() :]}"


def _rebuild(
    path: str,
    message: str,
    rule: str,
    severity: str,
    position: tuple[int, int] | None,
    object_field: str = "",
) -> Problem:
    """Unpickling (:meth:`Problem.__reduce__`)."""
    line, column = position or (None, None)
    return Problem(
        path, message, rule, severity, line=line, column=column, object_field=object_field
    )


def at(path: str, message: str, rule: str = "") -> Problem:
    """A problem of ``path`` whose printed line is ``message`` (the rule id set by the runner)."""
    return Problem(path, message, rule)


def in_object(object_field: str, message: str, rule: str = "", severity: str = "error") -> Problem:
    """A problem a check of a rendered object found at ``object_field`` (a path into the object,
    :attr:`Problem.object_field`), printed ``message``; its stack :attr:`~Problem.path` is set by
    the runner (:func:`components.stack.checks.check_manifests`)."""
    return Problem("", message, rule, severity, object_field=object_field)


def field_line(path: str, text: str, rule: str = "") -> Problem:
    """A problem printed ``<path>: <text>`` (the common line shape)."""
    return Problem(path, f"{path}: {text}" if path else text, rule)


_SEGMENT = re.compile(r"([^.\[\]]+)|\[([^\]]*)\]")


def path_parts(path: str) -> list[str]:
    """``node_pools[tpu].tpu.topology`` -> ``["node_pools", "[tpu]", "tpu", "topology"]``: keys
    plain, list entries in brackets (their name or index; a quoted name unquoted)."""
    out: list[str] = []
    for key, item in _SEGMENT.findall(path):
        if key:
            out.append(key.strip("'\""))
        else:
            name = item
            if len(name) >= 2 and name[0] == name[-1] and name[0] in "'\"":
                name = name[1:-1]
            out.append(f"[{name}]")
    return out
