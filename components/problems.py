"""One problem type for every validator, and one rule type.

A :class:`Problem` is what any check of a stack finds: pydantic field errors (the loader), the
cross-field rules (:mod:`components.stack.rules`, :mod:`components.capacity.rules`,
:mod:`components.computeclass.rules`), the KubeRay operator rules and feature gates
(:mod:`components.raycrs.operator`, :mod:`components.raycrs.gates`), CRD schemas, names, images,
IAM, policy and workload arguments (:mod:`components.stack.checks`). The producer sets the
``path`` it checked; nothing recovers a field from a message's words. ``raygke check`` prints
``message`` (``--format text``), the problems as objects (``--format json``) or GitHub workflow
annotations at the line of ``path`` in the stack file (``--format github``; docs/checking.md).

The model follows pulumi-eks (validation errors collected with their property path, thrown once:
https://github.com/pulumi/pulumi-eks, ``nodejs/eks/nodes/``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

SEVERITIES = ("error", "warning")


@dataclass(frozen=True)
class Problem:
    """One problem of a stack.

    Attributes:
        path: the stack field it is about, as ``node_pools[tpu].tpu.topology``: top-level key,
            then ``.key`` per mapping level and ``[name]`` per list entry (the entry's ``name``
            where list entries have one, else its index); ``""`` when it is about the file as a
            whole (a YAML error) or about no one field (a render that fails).
        message: the readable line ``raygke check`` prints (it names the field in its words).
        rule: the id of the rule or validator that found it (a rule function's name, or
            ``field`` for a pydantic field error, ``crd-schema``, ``operator:<check>``, ...).
        severity: ``error`` (refused) or ``warning``.
    """

    path: str
    message: str
    rule: str = ""
    severity: str = "error"

    def __str__(self) -> str:
        return self.message

    def with_rule(self, rule: str) -> Problem:
        """This problem with ``rule`` set when it has none."""
        return self if self.rule else replace(self, rule=rule)

    def as_dict(self) -> dict[str, Any]:
        """``{"path", "message", "rule", "severity"}`` (``--format json`` adds the position)."""
        return {
            "path": self.path,
            "message": self.message,
            "rule": self.rule,
            "severity": self.severity,
        }


def at(path: str, message: str, rule: str = "") -> Problem:
    """A problem of ``path`` whose printed line is ``message`` (the rule id set by the runner)."""
    return Problem(path, message, rule)


def field_line(path: str, text: str, rule: str = "") -> Problem:
    """A problem printed ``<path>: <text>`` (the common line shape)."""
    return Problem(path, f"{path}: {text}" if path else text, rule)


def problem_of(item: Problem | str, path: str = "", rule: str = "") -> Problem:
    """``item`` as a :class:`Problem`: a Problem keeps its own path (its rule filled when unset);
    a plain line (a producer not yet giving paths, e.g. a rule added in the old style) gets
    ``path`` — the block its producer checks — and ``rule``."""
    if isinstance(item, Problem):
        return item.with_rule(rule)
    return Problem(path, str(item), rule)


def problems_of(items: Iterable[Problem | str], path: str = "", rule: str = "") -> list[Problem]:
    """:func:`problem_of` over several."""
    return [problem_of(i, path, rule) for i in items]


def lines(problems: Iterable[Problem | str]) -> list[str]:
    """The printed lines of ``problems`` (``--format text``)."""
    return [str(p) for p in problems]


@dataclass(frozen=True)
class Rule:
    """A rule: a named check and what it applies to.

    The one rule type of the project: the stack's cross-field rules (``needs``: the stack keys it
    reads, so it runs only when they validated), the KubeRay operator rules (``kinds``: the
    custom-resource kinds it applies to; ``since``: the first carried KubeRay version with it)
    and the policy pack's rules (``id``, ``description``) are all Rules.

    Attributes:
        check: the function; what it takes depends on the family (a StackConfig, an operator
            object view, a list of manifests), it returns or yields Problems or lines.
        needs: stack keys (top-level, or dotted into a block) the check reads.
        kinds: Kubernetes kinds it applies to (operator rules).
        since: first KubeRay version carrying it (operator rules).
        rule_id: the id problems carry; default the check's name.
        description: what it enforces, in words (policy rules); default from the name.
        path: the stack field a line of the check is about when the check gives none.
    """

    check: Callable[..., Any]
    needs: frozenset[str] = field(default_factory=frozenset)
    kinds: tuple[str, ...] = ()
    since: str = "1.6.2"
    rule_id: str = ""
    description: str = ""
    path: str = ""

    @property
    def name(self) -> str:
        """The check function's name (``nap_limits_cover_pools``)."""
        return getattr(self.check, "__name__", "rule")

    @property
    def id(self) -> str:
        """The id its problems carry."""
        return self.rule_id or self.name

    @property
    def summary(self) -> str:
        """The rule in words: its name with spaces (``nap limits cover pools``)."""
        return self.description or self.name.replace("_", " ")

    def blocked_by(self, broken: Iterable[str]) -> str | None:
        """The first invalid path of ``broken`` (dotted, e.g. ``cluster.min_master_version``)
        that this rule reads (equal to, inside or around one of ``needs``), else None."""
        for b in sorted(broken):
            for n in self.needs:
                if n == b or n.startswith(b + ".") or b.startswith(n + "."):
                    return b
        return None

    def problems(self, *args: Any) -> list[Problem]:
        """Run the check on ``args``; every result a :class:`Problem` carrying this rule's id
        (a plain line gets :attr:`path`, or the first of ``needs``)."""
        default = self.path or (min(self.needs) if len(self.needs) == 1 else "")
        return problems_of(self.check(*args) or (), default, self.id)


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
