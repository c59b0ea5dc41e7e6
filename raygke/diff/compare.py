"""``raygke diff``: the plan between two offline renders of a stack, in Pulumi's terms.

Both sides are rendered by ``raygke synth`` (the real program under mocks, :mod:`raygke.synth`),
each by its own tree's code: the base revision is checked out with ``git worktree add --detach``
into a temporary folder and rendered there by ``python -m raygke synth`` with ``PYTHONPATH`` at that
tree; the head is the working tree (or a second revision, the same way). Resources are matched by
URN and each gets one operation, as ``pulumi preview`` would show it:

* ``create`` / ``delete``: the URN exists on one side only.
* ``replace``: an input changed that the provider cannot update in place
  (:mod:`raygke.diff.replacement`, with the field that forces it), or one listed in the
  resource's ``replace_on_changes`` option. ``delete_before_replace`` is shown; a RayJob replacement
  is a "job re-run" (KubeRay does not re-run an updated RayJob, kuberay#1776).
* ``update``: other input changes, or a changed resource option (``protect``, ``ignore_changes``,
  ``replace_on_changes``, ``delete_before_replace``, ``retain_on_delete``, ``provider``). Paths under
  the resource's ``ignore_changes`` are left out, as the engine does.
* ``same``: counted only.
* recreated dependents: a replaced resource replaces what lives inside it
  (:func:`raygke.diff.replacement.recreated_by`): a replaced cluster replaces its
  Kubernetes provider, hence every object that provider manages; node pools, keys, IAM members and
  bucket objects of a replaced parent. Their reason reads ``recreated: ...``.

``--config FILE`` diffs a stack file in the repository against its version at ``--base`` (default
``main``); ``--set`` values apply to the head side only (:func:`raygke.diff.sides.plan_sides`).
This module compares two renders (:func:`compare`); :mod:`raygke.diff.sides` renders the sides and
:mod:`raygke.diff.formats` prints the plan.

Flags on an operation: a replace/delete of a resource with ``protect`` (the engine refuses it), of a
cluster with ``deletionProtection`` (the provider refuses it), of a bucket without ``forceDestroy``
(fails if the bucket holds objects) or with it (``data loss``: the bucket and its objects are
deleted), and a replace of a fixed-name resource without
``delete_before_replace`` whose name and scope (project, location, key ring, namespace...) stay
the same (create-before-delete fails with "already exists").

Values shown are masked when the render marked them secret (``"[secret]"``) or the key looks like a
credential; long values are shortened to their start and a sha256 prefix.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

from components.kernel.problems import Problem
from contract.errors import ConfigurationError
from raygke.diff import disruption as dis
from raygke.diff import upgrades
from raygke.diff.replacement import (
    RAYCLUSTER,
    RERUN_TYPES,
    SCOPE_INPUTS,
    bare_path,
    path_matches,
    ray_pod_changes,
    recreated_by,
    ref,
    rule_for,
)
from raygke.diff.review_flags import maintenance_flags, provider_flags, upgrade_flags

SECRET = "[secret]"
SECRET_KEYS = ("kubeconfig", "password", "token", "secret_data", "secretData", "privateKey")
OPTION_KEYS = (
    "protect",
    "ignore_changes",
    "replace_on_changes",
    "delete_before_replace",
    "retain_on_delete",
    "provider",
)
MAX_VALUE = 200

SYMBOLS = {"create": "+", "update": "~", "replace": "+-", "delete": "-"}
ORDER = ("create", "update", "replace", "delete")


class DiffError(ConfigurationError):
    """A side cannot be rendered; ``str(e)`` is one line, ``exit_code`` the exit code: 2 (usage:
    not a git work tree, a revision that names no commit), 1 (the stack does not render)."""

    def __init__(self, message: str, code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = code


@dataclass
class FieldChange:
    """One changed input (or ``options.<name>``) path with old and new values (masked)."""

    path: str
    old: Any
    new: Any
    forces_replacement: bool = False
    added: bool = False  # the path is absent from the old inputs (``old`` is None)
    removed: bool = False  # the path is absent from the new inputs (``new`` is None)


@dataclass
class Change:
    """The operation on one resource.

    Attributes:
        urn, type, name: the resource.
        op: ``create`` | ``update`` | ``replace`` | ``delete``.
        fields: the changed paths (empty for create/delete).
        reasons: for a replace, what forces it (``"nodeConfig.spot (node_config.spot, ForceNew)"``).
        delete_before_replace: the replace deletes the old resource first.
        rerun: a RayJob replacement: the job runs again.
        flags: review warnings (protection, name clash).
        notes: what the operation does not do (a RayCluster template update reaches no running
            pod).
        disruption: what the change stops or restarts in running work
            (:class:`raygke.diff.disruption.Disruption` as ``{"target", "effect",
            "detail"}``); empty when nothing running is touched.
    """

    urn: str
    type: str
    name: str
    op: str
    fields: list[FieldChange] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    delete_before_replace: bool = False
    rerun: bool = False
    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    disruption: list[dict[str, str]] = field(default_factory=list)


# Shown on a RayCluster update that changes what only recreated pods get
# (:func:`raygke.diff.replacement.ray_pod_changes`).
TEMPLATE_NOTE = (
    "running Ray pods keep their old pod template: KubeRay recreates them on a template change "
    "only with spec.upgradeStrategy.type Recreate (KubeRay ValidateRayClusterUpgradeOptions)"
)


@dataclass
class Plan:
    """All changes between two renders, plus the unchanged count and the sides' labels."""

    stack: str
    base: str
    head: str
    changes: list[Change]
    unchanged: int
    cost: dict[str, Any] | None = None
    # what ``raygke check --no-policy`` refuses in the head side (its problem lines): a change
    # that renders but that the cluster or Kueue would never run (:func:`raygke.diff.sides.check_tree`)
    refused: list[Problem] = field(default_factory=list)
    # the stack file is the same on both sides: every change comes from ray-gke itself (its
    # images, the workloads archive, its renders), docs/upgrading.md
    product_upgrade: bool = False

    def product_line(self) -> str | None:
        """The line that names a product upgrade (None when the stack file changed)."""
        if not self.product_upgrade or not self.changes:
            return None
        return (
            "Product upgrade: the stack file is the same on both sides, so every change below "
            "comes from ray-gke itself (its images, the workloads archive, its renders); "
            "docs/upgrading.md says what an upgrade may change"
        )

    def disruptive(self) -> bool:
        """Whether any change stops or restarts running work (a non-empty ``disruption``)."""
        return any(c.disruption for c in self.changes)

    def counts(self) -> dict[str, int]:
        """``{op: count}`` for the four operations (zeros included)."""
        return {op: sum(c.op == op for c in self.changes) for op in ORDER}

    def summary(self) -> str:
        """``Resources: + 1 to create, ~ 2 to update, +-1 to replace, - 1 to delete, 3 unchanged``
        (only the non-zero operations; ``Resources: no changes, N unchanged`` when none)."""
        counts = self.counts()
        parts = [
            f"{SYMBOLS[op]:<2}{n} to {op}" if op == "replace" else f"{SYMBOLS[op]} {n} to {op}"
            for op, n in counts.items()
            if n
        ]
        if not parts:
            return f"Resources: no changes, {self.unchanged} unchanged"
        return f"Resources: {', '.join(parts)}, {self.unchanged} unchanged"

    def to_json(self) -> dict[str, Any]:
        """The plan as JSON-able data (``format json``)."""
        from dataclasses import asdict

        return {
            "stack": self.stack,
            "base": self.base,
            "head": self.head,
            "counts": {**self.counts(), "unchanged": self.unchanged},
            "summary": self.summary(),
            "disruptive": self.disruptive(),
            "changes": [asdict(c) for c in self.changes],
            "cost": self.cost,
            "refused": [p.as_dict() for p in self.refused],
            "product_upgrade": self.product_upgrade,
        }


# ---------------------------------------------------------------------------------------------
# comparing two renders


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested inputs -> ``{dotted.path: leaf}``; list items get ``[i]`` (stripped for matching)."""
    out: dict[str, Any] = {}
    if isinstance(value, dict) and value and value != {}:
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}.{k}" if prefix else str(k)))
    elif isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
        for i, v in enumerate(value):
            out.update(_flatten(v, f"{prefix}[{i}]"))
    else:
        out[prefix] = value
    return out


def _masked(path: str, value: Any) -> Any:
    if value == SECRET or any(k.lower() in path.lower() for k in SECRET_KEYS):
        return SECRET if value is not None else None
    if isinstance(value, str) and len(value) > MAX_VALUE:
        digest = hashlib.sha256(value.encode()).hexdigest()[:12]
        return f"{value[:40]}... ({len(value)} chars, sha256 {digest})"
    return value


def _structured(value: Any) -> Any:
    """A long string that holds a document, parsed so its changed leaves can be named: a YAML or
    JSON mapping/list (a RayService's ``serveConfigV2``, a RayJob's ``runtimeEnvYAML``), or a
    command line as ``{"argv[i]": token}`` with JSON-object tokens parsed (a RayJob's
    ``entrypoint``); None for anything else."""
    if not isinstance(value, str) or (len(value) <= MAX_VALUE and "\n" not in value):
        return None
    try:
        doc = yaml.safe_load(value)
    except yaml.YAMLError:
        doc = None
    if isinstance(doc, (dict, list)):
        return doc
    try:
        argv = shlex.split(value)
    except ValueError:
        return None
    if len(argv) < 2:
        return None
    out: dict[str, Any] = {}
    for i, token in enumerate(argv):
        try:
            out[f"argv[{i}]"] = json.loads(token) if token.startswith("{") else token
        except ValueError:
            out[f"argv[{i}]"] = token
    return out


ABSENT: Any = type("Absent", (), {"__repr__": lambda self: "ABSENT"})()
"""The side of :func:`changed_inputs` a path is missing from (a leaf added or removed)."""


def changed_inputs(old: dict[str, Any], new: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    """``[(path, old, new)]`` of the leaves that differ between two input dicts (sorted), a side
    without the path :data:`ABSENT`. A long string holding a document (:func:`_structured`) is
    compared leaf by leaf under its path, so
    ``spec.serveConfigV2.applications[0].args.max_batch_size: 16 -> 32`` shows instead of two
    shortened strings."""
    a, b = _flatten(old), _flatten(new)
    out = []
    for path in sorted(set(a) | set(b)):
        va, vb = a.get(path, ABSENT), b.get(path, ABSENT)
        if va == vb:
            continue
        sa, sb = _structured(va), _structured(vb)
        if sa is not None and sb is not None:
            out += [
                (f"{path}.{sub}" if sub else path, x, y)
                for sub, x, y in changed_inputs({"": sa}, {"": sb})
            ]
            continue
        out.append((path, va, vb))
    return out


def _options(record: dict[str, Any]) -> dict[str, Any]:
    opts = record.get("options") or {}
    return {k: opts.get(k) for k in OPTION_KEYS}


def compare(
    base: list[dict[str, Any]],
    head: list[dict[str, Any]],
    stack: str,
    base_label: str = "base",
    head_label: str = "head",
) -> Plan:
    """The :class:`Plan` from the ``base`` records to the ``head`` records (``resources.json`` of
    :mod:`raygke.synth`; records without ``urn``/``options``, from older renders, are matched by
    type and name and taken to have default options)."""

    by_urn = all("urn" in r for r in [*base, *head])

    def key(r: dict[str, Any]) -> str:
        return r["urn"] if by_urn else f"{r['type']}::{r['name']}"

    olds = {key(r): r for r in base}
    news = {key(r): r for r in head}
    changes: list[Change] = []
    unchanged = 0
    for urn in sorted(set(olds) | set(news)):
        o, n = olds.get(urn), news.get(urn)
        if o is None:
            assert n is not None
            changes.append(Change(urn, n["type"], n["name"], "create"))
            continue
        if n is None:
            c = Change(urn, o["type"], o["name"], "delete")
            c.flags = _guards(o, "delete")
            changes.append(c)
            continue
        c = _compare_one(urn, o, n)
        if c is None:
            unchanged += 1
        else:
            changes.append(c)
    unchanged -= _recreate_dependents(changes, olds, news)
    _annotate_disruption(changes, olds, news)
    changes.sort(key=lambda c: (ORDER.index(c.op), c.type, c.name))
    return Plan(stack, base_label, head_label, changes, unchanged)


def _annotate_disruption(
    changes: list[Change], olds: dict[str, dict[str, Any]], news: dict[str, dict[str, Any]]
) -> None:
    """Each change's ``disruption`` (:func:`raygke.diff.disruption.assess`), the
    provider-identity flag and a RayService upgrade without room for its second cluster
    (:mod:`raygke.diff.review_flags`)."""
    base, head = list(olds.values()), list(news.values())
    for c in changes:
        o, n = olds.get(c.urn), news.get(c.urn)
        paths = [f.path for f in c.fields]
        found = upgrades.detailed(dis.assess(c.op, o, n, paths, base, head, c.reasons), n, head)
        c.disruption = [d.to_json() for d in found]
        if any(d.effect == "recreated" for d in found):  # Recreate: the template does reach them
            c.notes = [x for x in c.notes if x != TEMPLATE_NOTE]
        if n is not None:
            extra = provider_flags(n) + upgrade_flags(c.op, o, n, found, head)
            extra += maintenance_flags(c.op, o, n)
            c.flags += [f for f in extra if f not in c.flags]


def _compare_one(urn: str, o: dict[str, Any], n: dict[str, Any]) -> Change | None:
    typ = n["type"]
    oo, no = _options(o), _options(n)
    ignored = no.get("ignore_changes") or []
    diffs = [
        (p, a, b)
        for p, a, b in changed_inputs(o.get("inputs") or {}, n.get("inputs") or {})
        if not any(path_matches(bare_path(p), ig) for ig in ignored)
    ]
    # A render from before options were recorded has none: its options are not compared.
    opt_diffs = (
        [(f"options.{k}", oo[k], no[k]) for k in OPTION_KEYS if oo[k] != no[k]]
        if "options" in o and "options" in n
        else []
    )
    if not diffs and not opt_diffs:
        return None
    rule = rule_for(typ)
    reasons: list[str] = []
    forcing: set[str] = set()
    for p, _, _ in diffs:
        bare = bare_path(p)
        for f in rule.fields if rule else ():
            if path_matches(bare, f.path):
                forcing.add(p)
                why = f"{f.path} ({f.attribute}: ForceNew)"
                if why not in reasons:
                    reasons.append(why)
        for r in no.get("replace_on_changes") or []:
            if path_matches(bare, r):
                forcing.add(p)
                why = f"{r} (replace_on_changes)"
                if why not in reasons:
                    reasons.append(why)
    op = "replace" if forcing else "update"
    c = Change(urn, typ, n["name"], op)
    if op == "update" and typ == RAYCLUSTER and ray_pod_changes([p for p, _, _ in diffs]):
        c.notes.append(TEMPLATE_NOTE)
    c.fields = [
        FieldChange(
            p,
            None if a is ABSENT else _masked(p, a),
            None if b is ABSENT else _masked(p, b),
            p in forcing,
            added=a is ABSENT,
            removed=b is ABSENT,
        )
        for p, a, b in diffs
    ] + [FieldChange(p, a, b) for p, a, b in opt_diffs]
    if op == "replace":
        c.reasons = reasons
        c.delete_before_replace = bool(no.get("delete_before_replace"))
        c.rerun = typ in RERUN_TYPES
        c.flags = _guards(o, "replace")
        name_input = rule.name_input if rule else None
        if name_input and not c.delete_before_replace:
            old_name = _flatten(o.get("inputs") or {}).get(name_input)
            new_name = _flatten(n.get("inputs") or {}).get(name_input)
            moved = not (rule and rule.global_name) and any(
                bare_path(p) in SCOPE_INPUTS for p, _, _ in diffs
            )
            if old_name is not None and old_name == new_name and not moved:
                c.flags.append(
                    f"fixed name {new_name!r} without delete_before_replace: the replacement is "
                    "created before the old one is deleted and fails with 'already exists'"
                )
    return c


def _recreate_dependents(
    changes: list[Change], olds: dict[str, dict[str, Any]], news: dict[str, dict[str, Any]]
) -> int:
    """Turn into replacements what a replaced resource takes with it
    (:func:`raygke.diff.replacement.recreated_by`), to a fixed point (a replaced cluster
    replaces its Kubernetes provider, which replaces every object it manages). ``changes`` is
    edited in place (updates become replacements, unchanged resources are added); returns how
    many unchanged resources became replacements."""
    by_urn = {c.urn: c for c in changes}
    children: dict[str, list[str]] = {}
    for u, r in news.items():
        opts = r.get("options") or {}
        for p in {*(opts.get("depends_on") or []), opts.get("provider")} - {None}:
            children.setdefault(p, []).append(u)
    queue = [c.urn for c in changes if c.op == "replace" and c.urn in news]
    added = 0
    while queue:
        parent = news[queue.pop(0)]
        for u in children.get(ref(parent), []):
            child = news[u]
            why = recreated_by(parent, child)
            c = by_urn.get(u)
            if why is None or (c is not None and c.op in ("create", "delete")):
                continue
            if c is not None and c.op == "replace":  # replaced anyway: say it is lost with it too
                if f"recreated: {why}" not in c.reasons:
                    c.reasons.append(f"recreated: {why}")
                continue
            if c is None:
                if u not in olds:
                    continue
                c = Change(u, child["type"], child["name"], "replace")
                changes.append(c)
                by_urn[u] = c
                added += 1
            c.op = "replace"
            c.reasons.append(f"recreated: {why}")
            c.rerun = child["type"] in RERUN_TYPES
            c.delete_before_replace = bool(
                (child.get("options") or {}).get("delete_before_replace")
            )
            c.flags = _guards(olds[u], "replace")
            queue.append(u)
    return added


def _guards(o: dict[str, Any], op: str) -> list[str]:
    """What would refuse deleting the base resource ``o`` (for a delete or replace)."""
    flags = []
    if (o.get("options") or {}).get("protect"):
        flags.append(f"blocked: the resource has `protect`; the {op} fails until it is removed")
    rule = rule_for(o["type"])
    inputs = o.get("inputs") or {}
    if rule and rule.deletion_guard and inputs.get(rule.deletion_guard):
        flags.append(
            f"blocked: {rule.deletion_guard} is true; the provider refuses the {op} until a "
            "`pulumi up` sets it false"
        )
    if o["type"] == "gcp:storage/bucket:Bucket":
        name = inputs.get("name") or o["name"]
        if inputs.get("forceDestroy"):
            flags.append(
                f"data loss: the {op} deletes bucket {name} with every object in it "
                "(forceDestroy is true); copy what you need first (gcloud storage cp -r)"
            )
        else:
            flags.append(f"the {op} fails if bucket {name} holds objects (forceDestroy is false)")
    if o["type"] == "gcp:kms/keyRing:KeyRing":
        flags.append("KMS key rings cannot be deleted: the ring stays in the project")
    return flags
