"""One problem type for every validator and one rule type (:class:`Rule`). :class:`Problem` (and
:func:`at`, :func:`in_object`, :func:`path_colon`, :func:`path_parts`) lives in
:mod:`contract.problems`, standard library only, and is re-exported here. The producer sets the
``path`` it checked; nothing recovers a field from a message's words.
Sources: docs/sources.md#kernel-problems
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from contract.problems import (
    SEVERITIES,
    Problem,
    at,
    field_line,
    in_object,
    path_colon,
    path_parts,
)

__all__ = [
    "ENTRY_KEYS",
    "SEVERITIES",
    "Problem",
    "Rule",
    "at",
    "field_line",
    "in_object",
    "lines",
    "path_colon",
    "path_parts",
    "problem_of",
    "problems_of",
]

# The keys that name a list entry in a path (``node_pools[tpu]``), in order: most entries have a
# ``name``; a Kueue flavor of a cluster queue is named by its ``pool`` (components.config.capacity).
ENTRY_KEYS = ("name", "pool")


def problem_of(item: Problem | str, path: str = "", rule: str = "") -> Problem:
    """``item`` as a :class:`Problem`: a Problem keeps its own path (its rule filled when unset);
    a plain line gets ``path`` and ``rule``. Checkers yield Problems (tests/test_checker_shape.py);
    this is for what takes lines from outside them: :class:`components.kernel.base.StackConfigError`
    (a validator's message) and :func:`raygke.report.records`."""
    if isinstance(item, Problem):
        return item.with_path(path).with_rule(rule)
    return Problem(path, str(item), rule)


def problems_of(items: Iterable[Problem | str], path: str = "", rule: str = "") -> list[Problem]:
    """:func:`problem_of` over several."""
    return [problem_of(i, path, rule) for i in items]


def lines(problems: Iterable[Problem | str]) -> list[str]:
    """The printed lines of ``problems`` (``--format text``)."""
    return [str.__str__(p) for p in problems]


@dataclass(frozen=True)
class Rule:
    """A rule: a named check and what it applies to.

    The one rule type of the project, for its three families of rules:

    * the stack's cross-field rules (:data:`components.stack.rules.RULES`): ``needs``, the stack
      keys the check reads (it runs only when they validated); the check is handed its
      parameters by name (:func:`components.plan.plan.rule_inputs`: ``p`` the Plan, any other
      name that stack block) and yields Problems;
    * the KubeRay operator rules (:mod:`components.raycrs.operator`, built as
      ``Rule(check, kinds, since)``): ``kinds``, the custom-resource kinds it applies to;
      ``since``, the first carried KubeRay version with it; ``check(view)`` returns
      Problems made by :func:`in_object` (each with the object field it is about);
    * the policy pack's secure-default rules (:data:`components.security.policy.RULES`):
      ``rule_id`` (the policy name, ``bucket-cmek``), ``description``, ``kind`` (``resource``:
      ``check(Resource) -> Problems``; ``stack``: ``check(resources) -> Violations``, each a
      Problem and the resource it is about) and
      ``scope`` (``gcp`` or ``kubernetes``).

    Attributes:
        check: the function.
        kinds: Kubernetes kinds it applies to (operator rules).
        since: first KubeRay version carrying it (operator rules).
        needs: stack keys (top-level, or dotted into a block) the check reads (stack rules).
        rule_id: the id its problems carry and its name; default the check function's name.
        description: what it enforces, in words; default the name with spaces.
        kind: ``resource`` or ``stack`` (policy rules).
        scope: ``gcp`` or ``kubernetes`` (policy rules).
        path: the stack field its Problems that have none get (default: its one ``needs``).
    """

    check: Callable[..., Any]
    kinds: tuple[str, ...] = ()
    since: str = "1.6.2"
    needs: frozenset[str] = field(default_factory=frozenset)
    rule_id: str = ""
    description: str = ""
    kind: str = ""
    scope: str = "gcp"
    path: str = ""

    @property
    def name(self) -> str:
        """The rule's id: :attr:`rule_id`, else the check function's name
        (``nap_limits_cover_pools``)."""
        return self.rule_id or getattr(self.check, "__name__", "rule")

    @property
    def id(self) -> str:
        """The id its problems carry (:attr:`name`)."""
        return self.name

    @property
    def summary(self) -> str:
        """The rule in words: its name with spaces (``nap limits cover pools``)."""
        return self.name.replace("_", " ")

    def blocked_by(self, broken: Iterable[str]) -> str | None:
        """The first invalid path of ``broken`` (dotted, e.g. ``cluster.min_master_version``)
        that this rule reads (equal to, inside or around one of ``needs``), else None."""
        for b in sorted(broken):
            for n in self.needs:
                if n == b or n.startswith(b + ".") or b.startswith(n + "."):
                    return b
        return None

    def problems(self, *args: Any, **kwargs: Any) -> list[Problem]:
        """Run the check on ``args`` and ``kwargs``: its Problems, each carrying this rule's id
        where it has none (and :attr:`path`, or the one of ``needs`` when there is one, where it
        has no path)."""
        default = self.path or (next(iter(self.needs)) if len(self.needs) == 1 else "")
        return [p.with_path(default).with_rule(self.id) for p in self.check(*args, **kwargs) or ()]
