"""What a planned change does to running work: the ``disruption`` of each change in ``raygke diff``.

Pure data in, data out (no Pulumi): the two renders' records (``resources.json`` of
:mod:`raygke.synth`) and one change's operation and changed input paths give a list of
:class:`Disruption` - what stops, restarts, is recreated, re-runs or drains - empty when running
work is untouched. ``raygke diff`` attaches it to each change (``disruption`` in ``--format
json``) and ``--exit-code`` tells a disruptive plan apart (:data:`EXIT_DISRUPTIVE`).

Rules (each with its source):

* **Kubernetes provider** (``pulumi:providers:kubernetes``): with ``clusterIdentifier`` set the
  provider is replaced only when that value changes, every other configuration change updates it
  in place (``Provider.cluster_identifier``, pulumi_kubernetes 4.34.2 ``provider.py``); a replaced
  provider replaces every object it manages (:func:`raygke.diff.replacement.recreated_by`). Without it, a
  kubeconfig change (CA rotation, endpoint switch) replaces the provider, which an offline render
  cannot see (the kubeconfig is secret): flagged by :func:`raygke.diff.review_flags.provider_flags`.
* **RayJob**: a replacement deletes the running job and submits it again (``replace_on_changes``
  on ``spec``; KubeRay does not re-run an updated RayJob, kuberay#1776; and on its
  ``kueue.x-k8s.io/queue-name`` label, which Kueue refuses to change on a running job); a job
  with its own ``rayClusterSpec`` also loses that cluster. A delete stops it.
* **RayCluster**: a replace or delete deletes every pod, and the RayJobs that select it
  (``clusterSelector: {ray.io/cluster: <name>}``) lose their cluster. An update recreates every
  pod when ``spec.upgradeStrategy.type`` is ``Recreate`` and the spec changes outside what
  KubeRay v1.7.0 leaves out of the hash it compares with the head pod's
  ``ray.io/upgrade-strategy-recreate-hash`` annotation (``shouldRecreatePodsForUpgrade`` in
  raycluster_controller.go, ``GenerateHashWithoutReplicasAndWorkersToDelete`` in utils/util.go,
  ``UpgradeStrategyRecreateHashKey`` in utils/constant.go): the replica counts,
  ``workersToDelete``, the pod templates' tolerations and scheduling gates and
  ``upgradeStrategy`` (:data:`raygke.diff.replacement.RAY_SPEC_HASH_MUTED`, the one table
  ``raygke diff`` reads too). Turning ``Recreate`` on counts as recreating: the head pod keeps
  the hash of the spec it was created with, so changes made while ``Recreate`` was off recreate
  every pod then. Without ``Recreate`` running pods keep
  their template (a note, not a disruption). A removed worker group loses its pods, a lowered
  ``maxReplicas`` scales the group down to it (``GetWorkerGroupDesiredReplicas`` clamps to
  ``[minReplicas, maxReplicas]``), and a ``replicas`` set on an autoscaled group resets the
  autoscaler's count (kuberay#4149).
* **RayService**: a change of ``rayClusterConfig`` that changes the same hash (``suspend`` left
  out as well, :data:`raygke.diff.replacement.RAY_SERVICE_HASH_MUTED`) is upgraded by ``upgradeStrategy.type``
  (KubeRay v1.7.0 ``ValidateRayServiceSpec``: ``NewCluster`` - the default - brings up a second
  RayCluster, moves traffic when it is ready and deletes the old one; ``NewClusterWithIncremental
  Upgrade`` moves traffic step by step through the Gateway; ``None`` applies nothing to the running
  cluster). A ``serveConfigV2``-only change is applied in place: Serve redeploys the changed
  applications, their replicas restart one by one
  (https://docs.ray.io/en/latest/serve/production-guide/kubernetes.html#in-place-update-to-ray-serve-applications).
  A replace or delete stops the service.
* **Node pools**: a replacement drains and deletes every node (a TPU pool loses its slice: every
  pod on it stops). An update of node settings that GKE applies by recreating the nodes with the
  pool's upgrade strategy (machine type, disk, image type, image streaming ``gcfsConfig``, kubelet
  and Linux node config, workload metadata, node version) drains the nodes
  (https://cloud.google.com/kubernetes-engine/docs/concepts/managing-clusters#manual-changes-strategy);
  labels on the GCE resources, taints-free autoscaling limits and resource labels do not.
  A multi-host TPU slice is recreated as a whole (surge needs a second slice:
  https://cloud.google.com/kubernetes-engine/docs/concepts/tpus#node-pool-upgrades).
* **Cluster**: a replace or delete takes every node and object with it; a control-plane version
  change is followed by node auto-upgrades that drain every pool in the maintenance window
  (https://cloud.google.com/kubernetes-engine/docs/concepts/cluster-upgrades).
* **KubeRay operator** (``helm.sh/v3 Release``): an update restarts the operator pod
  (reconciliation pauses, Ray pods keep running; after its own version changes KubeRay skips one
  ``Recreate`` round, ``shouldRecreatePodsForUpgrade``); a delete stops reconciling.
* **CustomResourceDefinition / Namespace**: deleting one deletes every object of that kind / in
  that namespace.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from typing import Any

from raygke.diff.replacement import (
    CLUSTER,
    RAY_SERVICE_HASH_MUTED,
    RAYCLUSTER,
    RAYJOB,
    RAYSERVICE,
    bare_path,
    dig,
    ray_spec_hashed,
)

EXIT_DISRUPTIVE = 4  # ``raygke diff --exit-code``: 0 no change, 1 changes, 4 disruptive changes
# ``raygke diff --exit-code``: a side could not be rendered (its stack is invalid there), so
# there is no plan; without --exit-code that is 1, as for every command, which --exit-code
# gives to "changes"
EXIT_NO_PLAN = 5

NODEPOOL = "gcp:container/nodePool:NodePool"
RELEASE = "kubernetes:helm.sh/v3:Release"
CRD = "kubernetes:apiextensions.k8s.io/v1:CustomResourceDefinition"
NAMESPACE = "kubernetes:core/v1:Namespace"

# Node pool inputs GKE applies by recreating the nodes with the pool's upgrade strategy.
NODE_RECREATING = (
    "nodeConfig.machineType",
    "nodeConfig.diskSizeGb",
    "nodeConfig.diskType",
    "nodeConfig.imageType",
    "nodeConfig.gcfsConfig",
    "nodeConfig.kubeletConfig",
    "nodeConfig.linuxNodeConfig",
    "nodeConfig.workloadMetadataConfig",
    "nodeConfig.gvnic",
    "version",
)


@dataclass(frozen=True)
class Disruption:
    """One effect of a change on running work.

    Attributes:
        target: what is hit, ``"<Kind> <namespace>/<name>"`` or ``"node pool <name>"``.
        effect: ``deleted`` | ``recreated`` | ``re-run`` | ``interrupted`` | ``scaled-down`` |
            ``drained`` | ``restarted`` | ``upgrade-new-cluster`` | ``upgrade-incremental`` |
            ``rolling-restart``.
        detail: one sentence: why, with the rule's source.
    """

    target: str
    effect: str
    detail: str

    def to_json(self) -> dict[str, str]:
        """``{"target", "effect", "detail"}``."""
        return asdict(self)


# ---------------------------------------------------------------------------------------- helpers


def _under(path: str, prefix: str) -> bool:
    b = bare_path(path)
    return b == prefix or b.startswith(prefix + ".")


def k8s_target(record: dict[str, Any]) -> str:
    """``"RayCluster ray/training"`` for a Kubernetes record (kind from the type token)."""
    kind = record["type"].rsplit(":", 1)[-1]
    meta = dig(record, "inputs", "metadata") or {}
    ns = meta.get("namespace")
    name = meta.get("name") or record.get("name")
    return f"{kind} {ns}/{name}" if ns else f"{kind} {name}"


def _pool_target(record: dict[str, Any]) -> str:
    return f"node pool {dig(record, 'inputs', 'name') or record.get('name')}"


def _jobs_on(cluster: dict[str, Any], records: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """The RayJobs whose ``clusterSelector`` picks the RayCluster record ``cluster``."""
    name = dig(cluster, "inputs", "metadata", "name")
    ns = dig(cluster, "inputs", "metadata", "namespace")
    return sorted(
        (
            r
            for r in records
            if r["type"] == RAYJOB
            and dig(r, "inputs", "spec", "clusterSelector", "ray.io/cluster") == name
            and dig(r, "inputs", "metadata", "namespace") == ns
        ),
        key=lambda r: r["name"],
    )


def _interrupted(cluster: dict[str, Any], records: Iterable[dict[str, Any]], why: str) -> list:
    return [
        Disruption(k8s_target(j), "interrupted", f"runs on {k8s_target(cluster)}, whose {why}")
        for j in _jobs_on(cluster, records)
    ]


def _ray_pod_templates(record: dict[str, Any]) -> list[dict[str, Any]]:
    """The worker pod templates of a RayCluster / RayJob (own cluster) / RayService record."""
    spec = dig(record, "inputs", "spec") or {}
    cluster = spec.get("rayClusterSpec") or spec.get("rayClusterConfig") or spec
    return [g.get("template") or {} for g in cluster.get("workerGroupSpecs") or []]


def pool_selects(pool: dict[str, Any], selector: dict[str, str]) -> bool:
    """Whether a pod ``nodeSelector`` lands on the node pool record ``pool``: the pool's node
    labels (``nodeConfig.labels``) plus those GKE sets itself (``cloud.google.com/gke-nodepool``,
    ``gke-accelerator`` from the guest accelerator, ``gke-tpu-topology`` from the placement
    policy; https://cloud.google.com/kubernetes-engine/docs/how-to/tpus)."""
    inputs = pool.get("inputs") or {}
    labels = dict(dig(inputs, "nodeConfig", "labels") or {})
    labels["cloud.google.com/gke-nodepool"] = inputs.get("name")
    accels = dig(inputs, "nodeConfig", "guestAccelerators") or []
    if accels:
        labels["cloud.google.com/gke-accelerator"] = accels[0].get("type")
    topo = dig(inputs, "placementPolicy", "tpuTopology")
    if topo:
        labels["cloud.google.com/gke-tpu-topology"] = topo
    known = {
        "cloud.google.com/gke-nodepool",
        "cloud.google.com/gke-accelerator",
        "cloud.google.com/gke-tpu-topology",
    }
    keys = [k for k in selector if k in labels or k in known]
    return bool(keys) and all(labels.get(k) == selector[k] for k in keys)


def _ray_on_pool(pool: dict[str, Any], records: Iterable[dict[str, Any]]) -> list[str]:
    out = []
    for r in records:
        if r["type"] in (RAYCLUSTER, RAYJOB, RAYSERVICE) and any(
            pool_selects(pool, dig(t, "spec", "nodeSelector") or {}) for t in _ray_pod_templates(r)
        ):
            out.append(k8s_target(r))
    return sorted(out)


def _is_tpu(pool: dict[str, Any]) -> bool:
    mt = dig(pool, "inputs", "nodeConfig", "machineType") or ""
    return mt.startswith("ct") or bool(dig(pool, "inputs", "placementPolicy", "tpuTopology"))


def autoscaler_owned_paths(record: dict[str, Any]) -> list[str]:
    """The fields the Ray autoscaler owns that a RayCluster / RayService record sets itself:
    ``workerGroupSpecs[i].replicas`` of a cluster with ``enableInTreeAutoscaling`` (the
    autoscaler patches ``replicas`` and ``scaleStrategy.workersToDelete``: ray
    ``autoscaler/_private/kuberay/node_provider.py``). Non-empty means a ``pulumi up`` resets the
    autoscaler's count (kuberay#4149) or conflicts with it under server-side apply."""
    spec = dig(record, "inputs", "spec") or {}
    base, cluster = "spec", spec
    if record["type"] == RAYSERVICE:
        base, cluster = "spec.rayClusterConfig", spec.get("rayClusterConfig") or {}
    if not cluster.get("enableInTreeAutoscaling"):
        return []
    out = []
    for i, g in enumerate(cluster.get("workerGroupSpecs") or []):
        for key in ("replicas", "scaleStrategy"):
            if key in g:
                out.append(f"{base}.workerGroupSpecs[{i}].{key}")
    return out


# --------------------------------------------------------------------------------------- rules


def assess(
    op: str,
    old: dict[str, Any] | None,
    new: dict[str, Any] | None,
    paths: list[str],
    base: list[dict[str, Any]],
    head: list[dict[str, Any]],
    reasons: list[str] | None = None,
) -> list[Disruption]:
    """The :class:`Disruption` list of one change.

    Args:
        op: ``create`` | ``update`` | ``replace`` | ``delete``.
        old / new: the base and head records (None for a create / delete).
        paths: the changed input paths (``spec.workerGroupSpecs[0].maxReplicas``).
        base / head: all records of each side (to find the jobs on a cluster, the Ray objects
            on a pool, the objects under a provider).
        reasons: what forces a replacement (shown for a cascade).
    """
    if op == "create":
        return []
    rec = new if new is not None else old
    assert rec is not None
    typ = rec["type"]
    fn = _RULES.get(typ)
    if fn is None:
        if op in ("replace", "delete") and typ == CRD:
            kind = dig(old, "inputs", "spec", "names", "kind")
            return [
                Disruption(
                    f"every {kind}",
                    "deleted",
                    "deleting a CustomResourceDefinition deletes all its objects "
                    "(https://kubernetes.io/docs/tasks/extend-kubernetes/custom-resources/"
                    "custom-resource-definitions/#delete-a-customresourcedefinition)",
                )
            ]
        if op in ("replace", "delete") and typ == NAMESPACE:
            return [
                Disruption(
                    k8s_target(rec), "deleted", "deleting a namespace deletes every object in it"
                )
            ]
        return []
    return fn(op, old, new, paths, base, head, reasons or [])


def _rayjob(op, old, new, paths, base, head, reasons) -> list[Disruption]:
    rec = old or new
    if op == "delete":
        return [Disruption(k8s_target(rec), "deleted", "the RayJob and its run are deleted")]
    if op != "replace":
        return []
    own = dig(old, "inputs", "spec", "rayClusterSpec") is not None
    detail = (
        "the RayJob is deleted and submitted again: the job restarts (from its last checkpoint "
        "where the workload resumes); KubeRay does not re-run an updated RayJob (kuberay#1776)"
    )
    if own:
        detail += "; its own RayCluster is deleted and created again"
    return [Disruption(k8s_target(rec), "re-run", detail)]


def _spec_of(record: dict[str, Any] | None) -> dict[str, Any]:
    return dig(record, "inputs", "spec") or {}


def worker_groups(spec: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``groupName`` -> worker group of a Ray cluster spec."""
    return {g.get("groupName"): g for g in spec.get("workerGroupSpecs") or []}


def _raycluster(op, old, new, paths, base, head, reasons) -> list[Disruption]:
    rec = old or new
    target = k8s_target(rec)
    if op in ("replace", "delete"):
        why = "; ".join(reasons) if reasons else op
        return [
            Disruption(target, "deleted", f"the RayCluster is {op}d ({why}): every Ray pod stops"),
            *_interrupted(old, head if op == "replace" else base, f"pods are deleted ({op})"),
        ]
    if op != "update":
        return []
    out: list[Disruption] = []
    o, n = _spec_of(old), _spec_of(new)
    strategy = dig(n, "upgradeStrategy", "type")
    hashed = ray_spec_hashed(paths)
    if strategy == "Recreate" and dig(o, "upgradeStrategy", "type") != "Recreate":
        # Turning Recreate on: KubeRay mutes upgradeStrategy in its hash, but compares the hash
        # of the spec now with the one the head pod was created with, so any change made while
        # Recreate was off (invisible to a diff of two renders) recreates every pod now.
        hashed = [p for p in paths if _under(p, "spec.upgradeStrategy")] + hashed
    if strategy == "Recreate" and hashed:
        out.append(
            Disruption(
                target,
                "recreated",
                "upgradeStrategy Recreate: KubeRay deletes and recreates every pod when the spec "
                f"changes ({', '.join(bare_path(p) for p in hashed[:3])}"
                f"{'...' if len(hashed) > 3 else ''}; shouldRecreatePodsForUpgrade)",
            )
        )
        out += _interrupted(new, head, "pods are recreated (upgradeStrategy Recreate)")
    og, ng = worker_groups(o), worker_groups(n)
    for name in sorted(set(og) - set(ng), key=str):
        out.append(
            Disruption(
                f"{target} group {name}",
                "deleted",
                "the worker group is removed: KubeRay deletes its pods",
            )
        )
    for name in sorted(set(og) & set(ng), key=str):
        a, b = og[name].get("maxReplicas"), ng[name].get("maxReplicas")
        if isinstance(a, int) and isinstance(b, int) and b < a:
            out.append(
                Disruption(
                    f"{target} group {name}",
                    "scaled-down",
                    f"maxReplicas {a} -> {b}: workers above {b} are deleted "
                    "(GetWorkerGroupDesiredReplicas clamps to maxReplicas)",
                )
            )
    out += _replicas_reset(new, target)
    return out


def _replicas_reset(new: dict[str, Any] | None, target: str) -> list[Disruption]:
    if new is None:
        return []
    owned = [p for p in autoscaler_owned_paths(new) if p.endswith(".replicas")]
    if not owned:
        return []
    return [
        Disruption(
            target,
            "scaled-down",
            f"sets {', '.join(owned)} on an autoscaled cluster: the apply resets the Ray "
            "autoscaler's worker count under running work (kuberay#4149)",
        )
    ]


def _rayservice(op, old, new, paths, base, head, reasons) -> list[Disruption]:
    rec = old or new
    target = k8s_target(rec)
    if op in ("replace", "delete"):
        return [Disruption(target, "deleted", f"the RayService is {op}d: the service stops")]
    if op != "update":
        return []
    out: list[Disruption] = []
    hashed = ray_spec_hashed(paths, "spec.rayClusterConfig", RAY_SERVICE_HASH_MUTED)
    strategy = dig(new, "inputs", "spec", "upgradeStrategy", "type") or "NewCluster"
    if hashed:
        if strategy == "NewCluster":
            out.append(
                Disruption(
                    target,
                    "upgrade-new-cluster",
                    "rayClusterConfig changed, upgradeStrategy NewCluster: KubeRay brings up a "
                    "second RayCluster, moves traffic when it serves, then deletes the old one "
                    "(needs room for both clusters)",
                )
            )
        elif strategy == "NewClusterWithIncrementalUpgrade":
            out.append(
                Disruption(
                    target,
                    "upgrade-incremental",
                    "rayClusterConfig changed: a second RayCluster takes traffic step by step "
                    "through the Gateway (NewClusterWithIncrementalUpgrade)",
                )
            )
    elif any(_under(p, "spec.serveConfigV2") for p in paths):
        apps = sorted(
            {
                m.group(1)
                for p in paths
                if (m := re.match(r"spec\.serveConfigV2\.applications\[(\d+)\]", p))
            }
        )
        names = []
        cfg = dig(new, "inputs", "spec", "serveConfigV2")
        for i in apps:
            names.append(_serve_app_name(cfg, int(i)) or f"applications[{i}]")
        out.append(
            Disruption(
                target,
                "rolling-restart",
                "serveConfigV2 changed: Serve redeploys "
                + (f"application(s) {', '.join(names)}" if names else "the applications")
                + " in place; their replicas restart one by one while requests are served",
            )
        )
    out += _replicas_reset(new, target)
    return out


def _serve_app_name(text: Any, i: int) -> str | None:
    import yaml

    try:
        doc = yaml.safe_load(text) if isinstance(text, str) else None
        return str(doc["applications"][i]["name"])
    except (yaml.YAMLError, KeyError, IndexError, TypeError):
        return None


def _nodepool(op, old, new, paths, base, head, reasons) -> list[Disruption]:
    rec = old or new
    target = _pool_target(rec)
    on = _ray_on_pool(rec, head if op != "delete" else base)
    users = f" (Ray pods of {', '.join(on)})" if on else ""
    if op in ("replace", "delete"):
        tpu = "; the TPU slice is lost: every pod on it stops" if _is_tpu(rec) else ""
        why = f" ({'; '.join(reasons)})" if reasons else ""
        return [
            Disruption(
                target,
                "recreated" if op == "replace" else "deleted",
                f"every node is drained and deleted{why}{tpu}{users}",
            )
        ]
    if op != "update":
        return []
    hits = sorted({bare_path(p) for p in paths if any(_under(p, f) for f in NODE_RECREATING)})
    if not hits:
        return []
    if dig(rec, "inputs", "placementPolicy", "tpuTopology"):
        how = "a multi-host TPU slice is recreated as a whole: every pod on it stops"
    elif _is_tpu(rec):
        how = "TPU nodes are drained and recreated: the pods on them stop"
    else:
        how = "nodes are drained and recreated by the pool's upgrade strategy (surge by default)"
    return [Disruption(target, "drained", f"{', '.join(hits)} changed: {how}{users}")]


def _cluster(op, old, new, paths, base, head, reasons) -> list[Disruption]:
    rec = old or new
    name = dig(rec, "inputs", "name") or rec["name"]
    if op in ("replace", "delete"):
        return [
            Disruption(
                f"cluster {name}",
                "deleted",
                f"the GKE cluster is {op}d: every node pool, pod and Kubernetes object goes with it",
            )
        ]
    if op == "update" and any(_under(p, "minMasterVersion") for p in paths):
        return [
            Disruption(
                f"cluster {name}",
                "drained",
                "control-plane version change: node auto-upgrade then drains every pool in the "
                "maintenance window (TPU slices are recreated whole)",
            )
        ]
    return []


def _release(op, old, new, paths, base, head, reasons) -> list[Disruption]:
    rec = old or new
    target = f"KubeRay operator ({dig(rec, 'inputs', 'name') or rec['name']})"
    if op in ("replace", "delete"):
        return [
            Disruption(
                target,
                "deleted",
                f"the operator is {op}d: Ray objects are not reconciled meanwhile",
            )
        ]
    if op == "update" and any(_under(p, "version") or _under(p, "values") for p in paths):
        return [
            Disruption(
                target,
                "restarted",
                "the operator pod restarts (Ray pods keep running; reconciliation pauses until "
                "it is back; after its own version changes KubeRay skips one Recreate round)",
            )
        ]
    return []


_RULES = {
    RAYJOB: _rayjob,
    RAYCLUSTER: _raycluster,
    RAYSERVICE: _rayservice,
    NODEPOOL: _nodepool,
    CLUSTER: _cluster,
    RELEASE: _release,
}
