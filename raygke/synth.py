"""Offline render of a stack: the real Pulumi program (``__main__.py``) under Pulumi's mocks.

No ``pulumi`` CLI, no credentials, no network: :func:`synth` sets the stack's config, installs
:class:`raygke.mocks.SynthMocks` (realistic, deterministic outputs: ids, self links, endpoints, emails, project
numbers) with :func:`pulumi.runtime.set_mocks`, runs the program in this process and writes

* ``<out>/resources.json``: ``[{"type", "name", "urn", "parent", "inputs", "options"}]`` sorted by
  type and name, ``inputs`` as the engine receives them (camelCase property names); ``parent`` is
  ``"<type>::<name>"`` of the parent resource (the stack for top-level resources); ``urn`` the
  resource's URN (what ``raygke diff`` matches on). ``options`` are the resource options the engine
  receives with the registration (the gRPC ``RegisterResourceRequest`` that the SDK sends the
  monitor, ``pulumi/proto/pulumi/resource.proto``), so a render shows what review needs:
  ``{"protect": bool, "ignore_changes": [str], "replace_on_changes": [str],
  "delete_before_replace": bool, "retain_on_delete": bool, "depends_on": ["<type>::<name>"],
  "provider": "<type>::<name>" | None}`` (``depends_on``: every dependency the engine records,
  explicit ``depends_on`` and the resources whose outputs are inputs, sorted).
* ``<out>/manifests/``: every Kubernetes object and custom resource as YAML
  (``<kind>-<namespace>-<name>.yaml``) and, per Helm release, ``helm-<release>-values.yaml`` and
  ``helm-<release>-release.yaml`` (chart, version, repository, namespace).
* ``<out>/outputs.json``: the stack outputs.

Secret values (the kubeconfig) appear as ``"[secret]"`` in both files.

Two runs on the same config write identical bytes. It can run several times in one process.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import runpy
import shutil
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import yaml
from pulumi.runtime import rpc
from pulumi.runtime import settings as psettings
from pulumi.runtime.stack import run_pulumi_func
from pulumi.runtime.sync_await import _sync_await

from components.kernel.base import PROJECT_NAMESPACE
from components.kernel.problems import Problem
from components.kuberay import render as kuberay_render
from components.stack.loader import read_stack_yaml
from raygke.console import gc_paused
from raygke.mocks import RecordingMonitor, SynthMocks, no_stack_traces
from raygke.stacks import pools_table, stack_name_for

ROOT = Path(__file__).resolve().parent.parent
PROGRAM = ROOT / "__main__.py"
SECRET = "[secret]"


def _plain(value: Any) -> Any:
    """Engine values -> JSON-able plain data (assets by content hash, resources by URN)."""
    if isinstance(value, dict):
        if value.get(rpc._special_sig_key) == rpc._special_secret_sig:
            return SECRET
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    if isinstance(value, pulumi.StringAsset):
        return {"asset": "string", "sha256": hashlib.sha256(value.text.encode()).hexdigest()}
    if isinstance(value, pulumi.FileAsset | pulumi.FileArchive):
        p = Path(str(value.path))
        return {"asset": type(value).__name__, "path": _rel(p)}
    if isinstance(value, pulumi.RemoteAsset | pulumi.RemoteArchive):
        return {"asset": type(value).__name__, "uri": value.uri}
    if isinstance(value, pulumi.AssetArchive):
        return {"archive": {k: _plain(v) for k, v in sorted(value.assets.items())}}
    if isinstance(value, pulumi.Resource):
        return {"resource": type(value).__name__}
    return str(value)


def _rel(p: Path) -> str:
    try:
        return p.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        return p.as_posix()


def config_entries(data: dict[str, Any], gcp: dict[str, Any] | None = None) -> dict[str, str]:
    """``{"ray-gke:<key>": value}`` as Pulumi passes config to a program: strings raw, the rest
    as JSON."""
    out: dict[str, str] = {}
    for k, v in sorted(data.items()):
        out[f"{PROJECT_NAMESPACE}:{k}"] = v if isinstance(v, str) else json.dumps(v)
    for k, v in sorted((gcp or {}).items()):
        out[f"gcp:{k}"] = v if isinstance(v, str) else json.dumps(v)
    return out


def read_stack_config(path: Path) -> dict[str, str]:
    """All ``config:`` entries of a ``Pulumi.<stack>.yaml`` file, as Pulumi passes them."""
    doc = read_stack_yaml(path.read_text(), str(path)) or {}
    out: dict[str, str] = {}
    for k, v in (doc.get("config") or {}).items():
        if isinstance(v, dict) and set(v) == {"value"}:
            v = v["value"]
        out[str(k)] = v if isinstance(v, str) else json.dumps(v)
    return out


def program_config(path: Path, overrides: Mapping[str, Any] | None = None) -> dict[str, str]:
    """The config the program runs on: the stack file's entries (:func:`read_stack_config`) with
    ``--set`` ``overrides`` (:func:`components.stack.loader.parse_set`: dotted key -> value) applied to
    the project's ``ray-gke:`` keys, as :func:`components.stack.loader.load_stack_file` applies them.

    ``project`` and ``region`` overrides also set ``gcp:project`` / ``gcp:region``: the two
    must not differ (:class:`components.config.stack.StackConfig`), and the Google provider creates every
    resource that names no project in ``gcp:project``
    (https://www.pulumi.com/registry/packages/gcp/installation-configuration/), so an override of
    one alone would render (and deploy) into the file's project. Other ``gcp:``, ``kubernetes:``
    and ``pulumi:`` entries are kept.

    Raises:
        components.kernel.base.StackConfigError / StackFileError: as ``load_stack_file`` (validate first).
    """
    entries = read_stack_config(path)
    if not overrides:
        return entries
    from components.stack.loader import apply_overrides, stack_data_from_yaml

    text = path.read_text(encoding="utf-8")
    data = apply_overrides(stack_data_from_yaml(text, str(path)), overrides, str(path))
    gcp = {k.split(":", 1)[1]: v for k, v in entries.items() if k.startswith("gcp:")}
    for key in ("project", "region"):
        if key in overrides:
            gcp[key] = data[key]
    kept = {k: v for k, v in entries.items() if not k.startswith((f"{PROJECT_NAMESPACE}:", "gcp:"))}
    return {**kept, **config_entries(data, gcp)}


@dataclass
class SynthResult:
    """What :func:`synth` rendered.

    Attributes:
        resources: the records written to ``resources.json``.
        outputs: stack outputs (secret ones replaced by ``"[secret]"``).
        manifests: file names written under ``manifests/``.
    """

    resources: list[dict[str, Any]]
    outputs: dict[str, Any]
    manifests: list[str] = field(default_factory=list)

    def by_type(self) -> dict[str, int]:
        """Resource count per type, sorted by type."""
        return dict(sorted(Counter(r["type"] for r in self.resources).items()))


def run_program(
    config: dict[str, str], stack: str, program: Path = PROGRAM, *, crd_specs: str = "full"
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Run ``program`` under :class:`SynthMocks` with ``config``; return (records, outputs).

    ``crd_specs``: ``"full"`` renders the KubeRay CustomResourceDefinitions (helm mode) as
    deployed; ``"digest"`` gives each CRD's ``spec`` as
    :func:`components.kuberay.render.crd_spec_digest` (group, names, version names, sha256 of
    the whole spec) for callers that read no CRD schema (the policy pack's GCP rules, prices):
    the three schemas are ~6 MB that Pulumi's SDK would otherwise serialise, most of a helm-mode
    render's time (4 s -> 0.5 s for ``Pulumi.dev.yaml``). Every other record is the same.

    Raises whatever the program raises (e.g. ``pulumi.RunError`` on an invalid config);
    ValueError for another ``crd_specs``.
    """
    with kuberay_render.crd_specs(crd_specs), no_stack_traces(), gc_paused():
        return _run_program(config, stack, program)


# What the program logs (pulumi.log) under mocks: the stack's warnings and problems, which the
# raygke command that runs it has printed already from its own load of the stack file, so they go
# to this logger, not to the terminal a second time (Python's last-resort handler).
PROGRAM_LOG = logging.getLogger("raygke.program")
PROGRAM_LOG.propagate = False
PROGRAM_LOG.addHandler(logging.NullHandler())


def _run_program(
    config: dict[str, str], stack: str, program: Path
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    project = config.get(f"{PROJECT_NAMESPACE}:project") or config.get("gcp:project") or "project"
    mocks = SynthMocks(project)
    monitor = RecordingMonitor(mocks)
    pulumi.runtime.set_all_config(dict(config))
    psettings.ROOT.set(None)
    psettings.SETTINGS.rpc_manager.clear()
    psettings.SETTINGS.outputs.clear()
    pulumi.runtime.set_mocks(
        mocks,
        project=PROJECT_NAMESPACE,
        stack=stack,
        preview=False,
        monitor=monitor,
        logger=PROGRAM_LOG,
    )
    root = psettings.get_root_resource()
    _sync_await(run_pulumi_func(lambda: runpy.run_path(str(program), run_name="__main__")))

    async def _resolve() -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key in sorted(root.outputs):
            o = pulumi.Output.from_input(root.outputs[key])
            secret = await o.is_secret()
            out[key] = SECRET if secret else _plain(await o.future())
        return out

    outputs = _sync_await(_resolve())
    records = [{**r, "inputs": _plain(r["inputs"])} for r in monitor.records]
    records.sort(key=lambda r: (r["type"], r["name"]))
    return records, outputs


# libyaml's emitter when present (about 10x faster than the pure-Python one; same YAML).
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _yaml(data: Any) -> str:
    return yaml.dump(data, Dumper=_DUMPER, sort_keys=True, default_flow_style=False)


def _manifest_files(records: list[dict[str, Any]]) -> dict[str, str]:
    files: dict[str, str] = {}
    for r in records:
        t, i = r["type"], r["inputs"]
        if t == "kubernetes:helm.sh/v3:Release":
            rel = i.get("name", r["name"])
            files[f"helm-{rel}-values.yaml"] = _yaml(i.get("values") or {})
            meta = {
                k: i.get(k)
                for k in ("name", "chart", "version", "namespace", "repositoryOpts")
                if i.get(k) is not None
            }
            files[f"helm-{rel}-release.yaml"] = _yaml(meta)
        elif t.startswith("kubernetes:") and not t.startswith("pulumi:providers"):
            meta = i.get("metadata") or {}
            kind = str(i.get("kind") or t.rsplit(":", 1)[-1]).lower()
            ns = meta.get("namespace") or "cluster"
            fname = f"{kind}-{ns}-{meta.get('name', r['name'])}.yaml"
            files[fname] = _yaml(i)
    return files


CRD_TYPE = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"


def _compact(record: dict[str, Any]) -> dict[str, Any]:
    """A record as written to ``resources.json``: a CustomResourceDefinition's ``spec`` (the
    carried KubeRay CRD, ~2 MB of schema each) becomes its group, names, versions and the sha256
    of the full spec, so a changed CRD still shows in a diff of two renders without burying the
    rest."""
    spec = record.get("inputs", {}).get("spec")
    if record.get("type") != CRD_TYPE or not isinstance(spec, dict):
        return record
    digest = hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()
    summary = {
        "group": spec.get("group"),
        "names": spec.get("names"),
        "versions": [v.get("name") for v in spec.get("versions", [])],
        "sha256": digest,
    }
    return {**record, "inputs": {**record["inputs"], "spec": summary}}


def write(
    out: Path, records: list[dict[str, Any]], outputs: dict[str, Any], *, manifests: bool = True
) -> list[str]:
    """Write ``resources.json``, ``outputs.json`` and ``manifests/`` under ``out`` (replacing an
    earlier render); return the manifest file names.

    ``manifests=False``: ``records`` come from a ``crd_specs="digest"`` run (their CRD specs are
    already what :func:`_compact` makes of a full one); no ``manifests/`` is written (an earlier
    one is removed) and ``[]`` is returned."""
    out.mkdir(parents=True, exist_ok=True)
    mdir = out / "manifests"
    if mdir.exists():
        shutil.rmtree(mdir)
    compacted = [_compact(r) for r in records] if manifests else records
    (out / "resources.json").write_text(json.dumps(compacted, indent=2, sort_keys=True) + "\n")
    (out / "outputs.json").write_text(json.dumps(outputs, indent=2, sort_keys=True) + "\n")
    if not manifests:
        return []
    mdir.mkdir()
    files = _manifest_files(records)
    for fname, text in sorted(files.items()):
        (mdir / fname).write_text(text)
    return sorted(files)


def synth(
    path: Path,
    out: Path,
    stack: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    *,
    manifests: bool = True,
) -> SynthResult:
    """Render the stack file ``path``, with ``--set`` ``overrides`` (:func:`program_config`), into
    ``out`` (see the module docstring).

    ``manifests=False`` (``raygke synth --resources-only``, what ``raygke diff`` reads): only
    ``resources.json`` and ``outputs.json``, the same bytes, from a run that renders the CRDs as
    their digests (:func:`run_program` ``crd_specs="digest"``): a helm-mode stack's render takes
    about a second instead of five.

    Raises:
        components.kernel.base.StackConfigError: the config is invalid (checked before the program runs).
    """
    from components.stack.loader import load_stack_file

    # raises StackConfigError with the same problem lines as `raygke check`
    load_stack_file(path, overrides)
    config = program_config(path, overrides)
    crd_specs = "full" if manifests else "digest"
    records, outputs = run_program(config, stack or stack_name_for(path), crd_specs=crd_specs)
    written = write(out, records, outputs, manifests=manifests)
    return SynthResult(records, outputs, written)


def print_summary(result: SynthResult, out: Path, console: Any) -> None:
    """Print resources by type, node pools with chips/hosts, and the outputs (rich console)."""
    from raygke.console import print_table
    from raygke.console import table as make_table

    types = make_table(f"{len(result.resources)} resources", ("type",), ("count",))
    for t, c in result.by_type().items():
        types.add_row(t, str(c))
    print_table(types, console)
    print_table(pools_table(result.outputs.get("node_pools") or {}), console)
    for key, value in result.outputs.items():
        if key != "node_pools":
            console.print(f"{key}: {json.dumps(value, sort_keys=True)}", markup=False)
    console.print(
        f"wrote {out}/resources.json, {out}/outputs.json, {len(result.manifests)} manifests"
    )


def policy_problems(path: Path, stack: str | None = None) -> list[Problem]:
    """The policy pack's GCP rules (:data:`components.security.policy.GCP_RULES`) over the program
    run under mocks on the stack file ``path``, one ``<rule>: <resource>: <message>`` line each,
    as Problems (rule ``policy``) of the stack block the resource is declared by
    (:func:`resource_field`). Its Kubernetes rules (:mod:`components.security.rules`) run in
    :func:`components.stack.checks.check_stack` over the same objects, rendered without Pulumi.

    The config must be valid (checked first); a program error propagates.
    """
    from components.security.policy import (
        GCP_RULES,
        display_name,
        resources_from_records,
        run_rules,
    )
    from components.stack.loader import stack_data_from_yaml

    # the GCP rules read no CRD schema (components/security/policy.py RULES, scope "gcp")
    records, _ = run_program(
        read_stack_config(path), stack or stack_name_for(path), crd_specs="digest"
    )
    data = stack_data_from_yaml(path.read_text(encoding="utf-8"), str(path))
    resources = resources_from_records(records)
    named = {display_name(r): r for r in resources}
    out = []
    for v in run_rules(resources, GCP_RULES):
        r = named.get(v.resource)
        field = resource_field(r.type, r.name, r.props, data) if r else ""
        out.append(v.as_problem(field))
    return out


# The stack block that declares each GCP resource type of the program (components/*/component.py).
_TYPE_FIELDS = {
    "gcp:container/cluster:Cluster": "cluster",
    "gcp:compute/": "network",
    "gcp:kms/": "kms",
    "gcp:secretmanager/": "secrets",
    "gcp:serviceaccount/": "workload_identities",
    "gcp:projects/iAMMember:IAMMember": "workload_identities",
    "gcp:storage/bucketIAMMember:BucketIAMMember": "workload_identities",
    "gcp:storage/": "buckets",
    "gcp:artifactregistry/": "ray.images",
}


def resource_field(rtype: str, name: str, props: Mapping[str, Any], data: Mapping[str, Any]) -> str:
    """The stack path of the block that declares a rendered GCP resource: a node pool's config
    entry (``node_pools[tpu-v6e-4x4]`` for its GKE pools ``tpu-v6e-4x4-0``, ``-1``;
    ``cluster.system_pool``), a bucket's ``buckets.<kind>`` (Pulumi name ``storage-<kind>``), else
    the block of its type (:data:`_TYPE_FIELDS`); ``""`` for a resource no stack key declares
    (enabled APIs, dashboards). ``data``: the stack file's keys (``stack_data_from_yaml``)."""
    if rtype == "gcp:container/nodePool:NodePool":
        gke = str(props.get("name") or "")
        for pool in data.get("node_pools") or []:
            own = str(pool.get("name", "")) if isinstance(pool, Mapping) else ""
            if own and (gke == own or re.fullmatch(re.escape(own) + r"-\d+", gke)):
                return f"node_pools[{own}]"
        return "cluster.system_pool" if gke == "system" else "node_pools"
    if rtype == "gcp:storage/bucket:Bucket" and name.startswith("storage-"):
        return f"buckets.{name.removeprefix('storage-')}"
    return next((f for t, f in _TYPE_FIELDS.items() if rtype.startswith(t)), "")
