"""Deprecated spellings of a stack file, read as today's with a warning.

A renamed workload (:data:`contract.registry.RENAMED`) is accepted under its old name for at
least one release: the loader rewrites it, and its arguments, to the new workload's before
validation (:func:`modernized`) and ``raygke check`` prints one warning per rewrite;
``raygke migrate`` applies the same rewrite to the file itself (:func:`modernize`), keeping its
comments and order. docs/upgrading.md states the policy (the Kubernetes API deprecation policy
is the model: https://kubernetes.io/docs/reference/using-api/deprecation-policy/).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, MutableMapping
from typing import Any

from components.kernel.problems import ENTRY_KEYS, Problem
from contract.registry import RENAMED

RULE = "deprecated"
"""The rule id of a deprecation warning."""

_BLOCKS = ("services", "jobs")


def _entries(data: Mapping[str, Any]) -> list[tuple[str, MutableMapping[str, Any]]]:
    """``(stack path, entry)`` of every job and service that names a renamed workload."""
    out = []
    for block in _BLOCKS:
        entries = data.get(block)
        if not isinstance(entries, list):
            continue
        for i, entry in enumerate(entries):
            if isinstance(entry, MutableMapping) and _renamed(entry.get("workload")):
                name = next((entry[k] for k in ENTRY_KEYS if isinstance(entry.get(k), str)), i)
                out.append((f"{block}[{name}]", entry))
    return out


def _renamed(workload: Any) -> bool:
    return isinstance(workload, str) and workload in RENAMED


def _rename_key(mapping: MutableMapping[str, Any], old: str, new: str) -> None:
    """``old`` renamed ``new`` in place, at the same position (a ruamel ``CommentedMap`` keeps
    the comments of the entries around it)."""
    keys = list(mapping)
    comments = getattr(getattr(mapping, "ca", None), "items", {})
    comment = comments.pop(old, None)
    value = mapping.pop(old)
    at = keys.index(old)
    if hasattr(mapping, "insert"):
        mapping.insert(at, new, value)
        if comment is not None:
            comments[new] = comment
        return
    rest = [(k, mapping.pop(k)) for k in keys[at + 1 :]]
    mapping[new] = value
    mapping.update(rest)


def modernize(data: MutableMapping[str, Any]) -> list[Problem]:
    """Rewrite, in place, the deprecated spellings of ``data`` (a stack's keys without the
    ``ray-gke:`` prefix: plain mappings or ruamel's round-trip ones) to today's; one warning
    (a :class:`Problem`, severity ``warning``, rule :data:`RULE`) per rewrite, naming the new
    spelling."""
    notices: list[Problem] = []
    for where, entry in _entries(data):
        r = RENAMED[entry["workload"]]
        entry["workload"] = r.new
        notices.append(
            Problem(
                f"{where}.workload",
                f"{where}.workload: {r.old!r} is deprecated since {r.since} and read as "
                f"{r.new!r} ({r.why}); write workload: {r.new} (raygke migrate rewrites the "
                "file); a later release removes the old name",
                RULE,
                "warning",
            )
        )
        args = entry.get("args")
        if not isinstance(args, MutableMapping):
            continue
        for key in [k for k in args if isinstance(k, str)]:
            new = r.args.get(key)
            why = r.dropped.get(key)
            if why is None and (new is None or new == key):
                continue  # the same argument, or one the new workload's check will refuse
            if why is None and new in args:
                why = f"{new} is given too"
            if why is not None:
                del args[key]
                text = f"ignored ({why}); remove it"
            else:
                _rename_key(args, key, str(new))
                text = f"read as {r.new}'s {new}; write {new}"
            notices.append(
                Problem(
                    f"{where}.args.{key}",
                    f"{where}.args.{key}: {r.old}'s argument {key} is {text}",
                    RULE,
                    "warning",
                )
            )
    return notices


def modernized(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], list[Problem]]:
    """``data`` with today's spellings (a rewritten copy; ``data`` itself when nothing is
    deprecated) and the warnings (:func:`modernize`)."""
    if not _entries(data):
        return data, []
    out = copy.deepcopy(dict(data))
    return out, modernize(out)
