"""Values a stack file does not hold: the Pulumi ESC environments it imports and the ``--set
KEY=VALUE`` overrides of ``raygke check``, ``synth``, ``diff`` and ``cost``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from components import catalog
from components.config.stack import StackConfig
from components.kernel.base import PROJECT_NAMESPACE, StackConfigError, StackFileError
from components.kernel.problems import ENTRY_KEYS
from components.kernel.stackyaml import read_stack_yaml

# ------------------------------------------------------------------------ ESC and --set values
#
# A stack file may import Pulumi ESC environments (``environment: [name, ...]`` beside
# ``config:``); their ``pulumiConfig`` values become config at `pulumi up` time and are not in the
# file (https://www.pulumi.com/docs/esc/integrations/infrastructure/pulumi-iac/). Offline, such
# keys are either given with ``--set KEY=VALUE`` or reported as expected from the environment.


def stack_environments(text: str, source: str | None = None) -> tuple[str, ...]:
    """The ESC environments a stack file imports (``environment:`` as a list of names, one name,
    or ``{imports: [...]}``); ``()`` when none.

    Raises:
        StackFileError / StackConfigError: as :func:`read_stack_yaml`, or ``environment:`` of another
            shape.
    """
    doc = read_stack_yaml(text, source)
    env = doc.get("environment") if isinstance(doc, Mapping) else None
    if env is None:
        return ()
    if isinstance(env, Mapping):
        env = env.get("imports", [])
    if isinstance(env, str):
        env = [env]
    if not isinstance(env, list) or not all(isinstance(e, str) and e for e in env):
        raise StackFileError(
            [f"environment: {env!r} is not a list of ESC environment names"], source
        )
    return tuple(env)


def required_keys() -> tuple[str, ...]:
    """Top-level stack keys without a default (``project``, ``region``, ``zones``)."""
    return tuple(n for n, f in StackConfig.model_fields.items() if f.is_required())


class SetError(StackConfigError):
    """A ``--set KEY=VALUE`` that cannot be applied (its key goes through a value of another
    shape, or names a list entry the file does not have): a usage error (``raygke`` exits 2)."""

    exit_code = 2


# ``--set`` keys: a top-level key, then ``.key`` per mapping level and ``[name]`` or ``[index]``
# (or ``.index``) per list entry: the path shape problems are printed with
# (``node_pools[tpu].max_nodes``), so a path from ``raygke check`` can be given back to ``--set``.
_SET_KEY = re.compile(r"[^.\[\]\s]+(?:\.[^.\[\]\s]+|\[[^\[\]]+\])*")
_SET_PART = re.compile(r"\.?([^.\[\]]+)|\[([^\[\]]+)\]")


def set_key_parts(key: str) -> list[tuple[str, str]] | None:
    """``node_pools[tpu].max_nodes`` -> ``[("key", "node_pools"), ("item", "tpu"), ("key",
    "max_nodes")]``; a digits-only ``.0`` is a ``key`` part that :func:`apply_overrides` reads as
    an index where the value is a list. None when ``key`` is not of that shape (empty parts,
    unbalanced brackets, spaces)."""
    if not _SET_KEY.fullmatch(key):
        return None
    return [("key", k) if k else ("item", i.strip("'\"")) for k, i in _SET_PART.findall(key)]


def parse_set(items: list[str]) -> dict[str, Any]:
    """``["project=my-proj", "zones=[us-east5-a]", "cluster.name=ray",
    "node_pools[tpu].max_slices=2"]`` -> overrides, each value read as YAML 1.2 (as in a stack
    file). A key may carry the ``ray-gke:`` prefix; a dotted key sets a key inside a mapping, and
    ``[name]`` (or ``[index]``, ``.index``) a list entry (:func:`apply_overrides`).

    Raises:
        StackConfigError: an item has no ``=``, a key not of that shape, or a value that is not YAML.
    """
    out: dict[str, Any] = {}
    problems: list[str] = []
    for item in items:
        key, eq, raw = item.partition("=")
        key = key.strip().removeprefix(PROJECT_NAMESPACE + ":")
        if not eq or not key or set_key_parts(key) is None:
            problems.append(
                f"--set {item!r}: expected KEY=VALUE, KEY a stack path (e.g. --set "
                "project=my-project, --set cluster.name=ray, --set node_pools[tpu].max_slices=2)"
            )
            continue
        try:
            out[key] = read_stack_yaml(raw) if raw.strip() else ""
        except (StackFileError, StackConfigError) as e:
            problems.append(f"--set {key}: {'; '.join(e.problems)}")
    if problems:
        raise StackConfigError(problems)
    return out


def _entry_index(entries: list[Any], name: str) -> int | None:
    """The index of the entry of ``entries`` named ``name`` (by the first of
    :data:`~components.kernel.problems.ENTRY_KEYS` it has, as problem paths name entries), else
    ``name`` as an index (``0``, ``-1``) when it is one."""
    for key in ENTRY_KEYS:
        for i, entry in enumerate(entries):
            if isinstance(entry, Mapping) and str(entry.get(key)) == name:
                return i
    if re.fullmatch(r"-?\d+", name) and -len(entries) <= int(name) < len(entries):
        return int(name) % len(entries)
    return None


def _entry_names(entries: list[Any]) -> str:
    names = []
    for i, entry in enumerate(entries):
        named = (
            [entry.get(k) for k in ENTRY_KEYS if entry.get(k)] if isinstance(entry, Mapping) else []
        )
        names.append(str(named[0]) if named else str(i))
    return ", ".join(names) if names else "none (the list is empty)"


def apply_overrides(
    data: Mapping[str, Any], overrides: Mapping[str, Any], source: str | None = None
) -> dict[str, Any]:
    """A copy of ``data`` with ``overrides`` (key -> value, keys as :func:`parse_set` accepts
    them) set: ``cluster.name`` sets a key of a mapping (creating the mappings on the way),
    and so does ``[key]`` on a mapping (``nap.resource_limits[cpu]`` as problems print it, or a
    key with dots: ``...nominal[google.com/tpu]``); ``node_pools[tpu].max_nodes`` a key of the
    list entry named ``tpu`` (its ``name``, or a Kueue flavor's ``pool``),
    ``node_pools[0].max_nodes`` or ``node_pools.0.max_nodes`` of the first entry. An entry is
    never created: a list is given whole (``--set 'zones=[a, b]'``).

    Raises:
        SetError: a key goes through a value that is not a mapping or list, names an entry the
            list does not have, or indexes a list the file does not give.
    """
    import copy

    out = copy.deepcopy(dict(data))
    for key, value in overrides.items():
        set_key(out, key, value, source)
    return out


def set_key(data: dict[str, Any], key: str, value: Any, source: str | None = None) -> None:
    """Set ``key`` (as :func:`parse_set` accepts it) to ``value`` in ``data`` itself (plain
    mappings or ruamel's round-trip ones, whose comments stay), as :func:`apply_overrides`
    does.

    Raises:
        SetError: as :func:`apply_overrides`.
    """
    parts = set_key_parts(key) or [("key", key)]
    node: Any = data
    for i, (kind, name) in enumerate(parts):
        last = i == len(parts) - 1
        where = _set_label(parts[:i]) or "the stack"
        if isinstance(node, list) and (kind == "item" or re.fullmatch(r"-?\d+", name)):
            index = _entry_index(node, name)
            if index is None:
                raise SetError(
                    [
                        f"--set {key}: {where} has no entry {name!r}; its entries: "
                        f"{_entry_names(node)} (by name or index)"
                    ],
                    source,
                )
            if last:
                node[index] = value
            else:
                node = node[index]
        elif isinstance(node, dict) and (kind == "key" or not re.fullmatch(r"-?\d+", name)):
            # ``.name``, or ``[name]`` as problems print a mapping's key (``[google.com/tpu]``)
            if last:
                node[name] = value
            elif node.get(name) is None:
                if parts[i + 1][0] == "item" or re.fullmatch(r"-?\d+", parts[i + 1][1]):
                    raise SetError(
                        [
                            f"--set {key}: {_set_label(parts[: i + 1])} is not in the file, so "
                            "it has no entry to set; give the whole list: --set "
                            f"'{_set_label(parts[: i + 1])}=[...]'"
                        ],
                        source,
                    )
                node[name] = {}
            node = node[name]
        elif isinstance(node, list):
            raise SetError(
                [
                    f"--set {key}: {where} is a list; name an entry as {where}[<name>] or "
                    f"{where}[<index>] (its entries: {_entry_names(node)})"
                ],
                source,
            )
        else:
            what = "a mapping" if isinstance(node, dict) else f"{type(node).__name__} {node!r}"
            raise SetError(
                [f"--set {key}: {where} is {what}, not a list: it has no entry [{name}]"]
                if isinstance(node, dict)
                else [f"--set {key}: {where} is not a mapping or a list (it is {what})"],
                source,
            )


def _set_label(parts: list[tuple[str, str]]) -> str:
    """``[("key", "node_pools"), ("item", "tpu")]`` -> ``node_pools[tpu]``."""
    return "".join(f".{n}" if k == "key" else f"[{n}]" for k, n in parts).lstrip(".")


def esc_stand_ins(data: Mapping[str, Any], keys: list[str] | tuple[str, ...]) -> dict[str, Any]:
    """Placeholder values for required ``keys`` an ESC environment provides, consistent with the
    rest of ``data`` (a region taken from any zone the file names), so the checks of the other
    keys can run. Never deployed: only ``raygke check`` uses them, and says so."""
    zones = [z for z in (data.get("zones") or []) if isinstance(z, str)]
    for pool in data.get("node_pools") or []:
        if isinstance(pool, Mapping):
            zones += [z for z in (pool.get("zones") or []) if isinstance(z, str)]
    region = data.get("region")
    if not isinstance(region, str):
        region = zones[0].rpartition("-")[0] if zones else "us-central1"
    letters = catalog.GCP_REGIONS.get(region) or "a"
    stand_ins = {
        "project": "esc-placeholder",
        "region": region,
        "zones": sorted(set(zones)) or [f"{region}-{letters[0]}"],
    }
    return {k: stand_ins[k] for k in keys if k in stand_ins}
