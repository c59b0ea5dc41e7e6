"""Write a synth render's Kubernetes objects as plain YAML for a Kubernetes scanner, and scan them
with checkov (``make scan``, run by ``.ci/run``)::

    python -m raygke.k8s_export --checkov .ci/checkov-venv/bin/checkov --out .raygke/scan dev prod

renders each stack under Pulumi's mocks (:func:`raygke.synth.run_program`), writes its objects
under ``<out>/<stack>/`` and runs ``checkov -d <out> --framework kubernetes`` with the committed
skip list ``.ci/checkov-skips.yaml``: each entry is a check id with ``why`` (required: the reason
it does not apply to Ray) and optionally ``only`` (pod name patterns, ``fnmatch``): a scoped skip
is written as checkov's own ``checkov.io/skip<N>: <ID>=<why>`` annotation on the matching
objects only (https://www.checkov.io/2.Basics/Suppressing%20and%20Skipping%20Policies.html), an
unscoped one is passed as ``--skip-check``. The exit status is checkov's: any failed check that
the list does not explain fails CI.

Every ``kubernetes:*`` object of the render (custom resource definitions and Helm releases left
out: KubeRay's CRDs and chart are not ours) becomes ``<kind>-<namespace>-<name>.yaml``; and since
a scanner does not know KubeRay's custom resources, every pod a RayCluster / RayJob / RayService
makes (head and worker groups of each Ray cluster, a RayJob's submitter:
:func:`components.security.rules.pod_templates`) is also written as the ``v1`` Pod it becomes,
``pod-<namespace>-<cr name>-<group>.yaml``. A head pod with ``enableInTreeAutoscaling`` gets the
autoscaler sidecar KubeRay adds: the Ray image (or ``autoscalerOptions.image``),
``autoscalerOptions.securityContext`` and ``autoscalerOptions.resources``, by default 500m CPU
and 512Mi memory as request and limit (KubeRay API reference, ``AutoscalerOptions``:
https://ray-project.github.io/kuberay/reference/api/#autoscaleroptions).
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from components.security.policy import Resource, resources_from_records
from components.security.rules import RAY_KINDS, pod_templates, ray_cluster_specs
from contract.errors import ConfigurationError

ROOT = Path(__file__).resolve().parent.parent
SKIPS_FILE = ROOT / ".ci" / "checkov-skips.yaml"
SKIPPED_TYPES = ("kubernetes:apiextensions.k8s.io/", "kubernetes:helm.sh/")
AUTOSCALER_DEFAULT_RESOURCES = {
    "requests": {"cpu": "500m", "memory": "512Mi"},
    "limits": {"cpu": "500m", "memory": "512Mi"},
}
_SLUG = re.compile(r"[^a-z0-9-]+")


def _slug(text: str) -> str:
    return _SLUG.sub("-", text.lower()).strip("-")


def _group(where: str) -> str:
    """``spec.rayClusterSpec.workerGroupSpecs[cpu].template`` -> ``worker-cpu``;
    ``...headGroupSpec.template`` -> ``head``; ``spec.submitterPodTemplate`` -> ``submitter``."""
    last = where.removesuffix(".template").rsplit(".", 1)[-1]
    if last.startswith("workerGroupSpecs["):
        return "worker-" + _slug(last[len("workerGroupSpecs[") : -1])
    return {"headGroupSpec": "head", "submitterPodTemplate": "submitter"}.get(last, _slug(last))


def _autoscaler(spec: dict[str, Any], head: dict[str, Any]) -> dict[str, Any]:
    opts = spec.get("autoscalerOptions") or {}
    containers = (head.get("spec") or {}).get("containers") or [{}]
    out: dict[str, Any] = {
        "name": "autoscaler",
        "image": opts.get("image") or containers[0].get("image"),
        "imagePullPolicy": opts.get("imagePullPolicy") or "IfNotPresent",
        "resources": opts.get("resources") or AUTOSCALER_DEFAULT_RESOURCES,
    }
    if opts.get("securityContext"):
        out["securityContext"] = opts["securityContext"]
    return out


def pods_of(r: Resource) -> list[dict[str, Any]]:
    """The ``v1`` Pods a Ray custom resource makes (see the module docstring); ``[]`` for any
    other resource."""
    if r.props.get("kind") not in RAY_KINDS:
        return []
    meta = r.props.get("metadata") or {}
    name, ns = str(meta.get("name", r.name)), meta.get("namespace")
    autoscaled = {
        f"{where}.headGroupSpec.template": spec
        for where, spec in ray_cluster_specs(r.props)
        if spec.get("enableInTreeAutoscaling") is True
    }
    pods = []
    for where, _, tpl in pod_templates(r.props):
        tmeta = tpl.get("metadata") or {}
        spec = json.loads(json.dumps(tpl.get("spec") or {}))
        if where in autoscaled:
            spec["containers"] = [*spec.get("containers", []), _autoscaler(autoscaled[where], tpl)]
        group = _group(where)
        pod_meta: dict[str, Any] = {"name": f"{name}-{group}"[:253]}
        if ns:
            pod_meta["namespace"] = ns
        for key in ("labels", "annotations"):
            if tmeta.get(key):
                pod_meta[key] = tmeta[key]
        pods.append({"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": spec})
    return pods


def export(records: list[dict[str, Any]], out: Path, skips: list[Skip] | None = None) -> list[str]:
    """Write the objects and pods of ``records`` (synth records) under ``out`` (emptied first),
    scoped skips (:func:`annotate`) applied; return the file names written."""
    out.mkdir(parents=True, exist_ok=True)
    for old in out.glob("*.yaml"):
        old.unlink()
    files: dict[str, dict[str, Any]] = {}
    for r in resources_from_records(records):
        if not r.type.startswith("kubernetes:") or r.type.startswith(SKIPPED_TYPES):
            continue
        meta = r.props.get("metadata") or {}
        kind = str(r.props.get("kind") or r.type.rsplit(":", 1)[-1])
        ns = meta.get("namespace") or "cluster"
        files[f"{_slug(kind)}-{ns}-{meta.get('name', r.name)}.yaml"] = r.props
        for pod in pods_of(r):
            files[f"pod-{ns}-{pod['metadata']['name']}.yaml"] = pod
    for fname, doc in files.items():
        doc = annotate(json.loads(json.dumps(doc)), skips or [])
        (out / fname).write_text(yaml.safe_dump(doc, sort_keys=True))
    return sorted(files)


@dataclass(frozen=True)
class Skip:
    """One entry of the skip list: ``check`` id, ``why`` it does not apply to Ray, and ``only``
    (object name patterns; empty: every object)."""

    check: str
    why: str
    only: tuple[str, ...] = ()


class SkipListError(ConfigurationError):
    """The skip list is unreadable or an entry lacks its reason."""


def read_skips(path: Path = SKIPS_FILE) -> list[Skip]:
    """The skip list (see the module docstring).

    Raises:
        SkipListError: unreadable YAML, not a mapping of check ids, or an entry without a
            non-empty ``why``, one line naming the entry.
    """
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as e:
        raise SkipListError(f"{path}: {e}") from None
    if not isinstance(data, dict):
        raise SkipListError(f"{path}: expected a mapping of check ids, got {type(data).__name__}")
    out = []
    for check, entry in data.items():
        why = entry.get("why") if isinstance(entry, dict) else None
        if not isinstance(why, str) or not why.strip():
            raise SkipListError(f"{path}: {check}: every skipped check needs a 'why'")
        only = entry.get("only") or []
        if not isinstance(only, list) or not all(isinstance(o, str) for o in only):
            raise SkipListError(f"{path}: {check}.only: expected a list of name patterns")
        out.append(Skip(str(check), " ".join(why.split()), tuple(only)))
    return out


def annotate(doc: dict[str, Any], skips: list[Skip]) -> dict[str, Any]:
    """``doc`` with a ``checkov.io/skip<N>`` annotation for each scoped skip matching its name."""
    meta = doc.setdefault("metadata", {})
    name = str(meta.get("name", ""))
    scoped = [s for s in skips if s.only and any(fnmatch.fnmatch(name, p) for p in s.only)]
    if scoped:
        ann = meta.setdefault("annotations", {})
        for i, s in enumerate(scoped, 1):
            ann[f"checkov.io/skip{i}"] = f"{s.check}={s.why}"
    return doc


def render_stack(stack: str) -> list[dict[str, Any]]:
    """Synth records of ``Pulumi.<stack>.yaml`` (the real program under mocks)."""
    from raygke.synth import read_stack_config, run_program

    records, _ = run_program(read_stack_config(ROOT / f"Pulumi.{stack}.yaml"), stack)
    return records


def main(argv: list[str] | None = None) -> int:
    """Export (and with ``--checkov``, scan) the Kubernetes objects of the named stacks; exit 2
    on a usage error or a bad skip list, else 0 or checkov's status."""
    ap = argparse.ArgumentParser(prog="python -m raygke.k8s_export", description=__doc__)
    ap.add_argument("stacks", nargs="+", help="stack names (Pulumi.<name>.yaml)")
    ap.add_argument("--out", type=Path, default=Path(".raygke/scan"), help="output folder")
    ap.add_argument("--skips", type=Path, default=SKIPS_FILE, help="the skip list")
    ap.add_argument("--checkov", help="checkov executable; without it, only export")
    args = ap.parse_args(argv)
    try:
        skips = read_skips(args.skips)
    except SkipListError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    for stack in args.stacks:
        if not (ROOT / f"Pulumi.{stack}.yaml").is_file():
            print(f"error: no stack file Pulumi.{stack}.yaml", file=sys.stderr)
            return 2
        files = export(render_stack(stack), args.out / stack, skips)
        pods = sum(f.startswith("pod-") for f in files)
        print(f"{stack}: {len(files)} Kubernetes objects ({pods} pods from Ray pod templates)")
    if not args.checkov:
        return 0
    cmd = [
        args.checkov,
        "-d",
        str(args.out),
        "--framework",
        "kubernetes",
        "--compact",
        "--quiet",
        "--skip-download",
    ]
    unscoped = [s.check for s in skips if not s.only]
    if unscoped:
        cmd += ["--skip-check", ",".join(unscoped)]
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
