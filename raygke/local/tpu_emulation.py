"""Emulate the hosts of a TPU slice on this machine, the way a GKE TPU host advertises itself.

On GKE, each host (pod) of a TPU slice runs a Ray worker node whose environment the KubeRay TPU
webhook fills with ``TPU_NAME`` (same for every host of the slice), ``TPU_WORKER_ID`` (0..hosts-1),
``TPU_ACCELERATOR_TYPE`` (pod type, ``v6e-16``), ``TPU_TOPOLOGY`` (``4x4``) and
``TPU_WORKER_HOSTNAMES``; GKE itself sets ``TPU_SKIP_MDS_QUERY``. Ray's
``TPUAcceleratorManager`` (``ray/_private/accelerators/tpu.py``, Ray 2.60) reads exactly those
variables when the node has a ``TPU`` resource and derives:

* resources: ``TPU`` (chips on the host), ``accelerator_type:TPU-V6E``, ``<TPU_NAME>: 1`` and,
  on worker 0 only, ``TPU-<pod type>-head: 1``
  (``get_current_node_additional_resources``, ``ResourceAndLabelSpec._resolve_accelerator_resources``);
* labels: ``ray.io/accelerator-type``, ``ray.io/tpu-slice-name``, ``ray.io/tpu-worker-id``,
  ``ray.io/tpu-topology``, ``ray.io/tpu-pod-type`` (``get_current_node_accelerator_labels``).

Ray Train's ``JaxTrainer`` (``ScalingConfig(use_tpu=True, topology, accelerator_type)``) reserves a
multi-host slice through ``ray.util.tpu.SlicePlacementGroup``: a placement group on
``TPU-<pod type>-head`` with label selector ``ray.io/tpu-worker-id=0, ray.io/tpu-pod-type=...``,
then one bundle per host with ``ray.io/tpu-slice-name=<slice>``. A :class:`NodeLaunch` carries
the same resources, labels and env explicitly, so the emulated node looks the same to that code
whether it is started with ``ray start`` (env-based detection also runs and agrees) or with
``ray.cluster_utils.Cluster.add_node`` (where env detection does not apply per node).

Spec: ``GEN:TOPOLOGY`` (a catalog slice, e.g. ``v5e:2x2``, ``v6e:4x4``: hosts and chips per host
from ``components.catalog``) or ``GEN:TOPOLOGY@HOSTS`` — TEST-ONLY shape: the slice's chips
split over ``HOSTS`` emulated hosts (e.g. ``v5e:4x4@2``: 2 hosts x 8 chips, a real multi-host
reservation with 2 Ray nodes instead of 4). No real TPU host has that shape; use it for cheap
multi-host tests on a small machine. For v5e/v6e Ray treats 1x1/2x2/2x4 as single-host topologies
(no head reservation), so ``2x4@2`` schedules two bundles without the slice-head step.

What the emulation does NOT do: there are no TPU chips. ``JAX_PLATFORMS=cpu`` makes each JAX
process use one CPU device; see ``workloads/train_lm_jax.py`` for what differs in training.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from components.catalog import CatalogError, TpuSlice, tpu_slice

_SPEC = re.compile(r"^(?P<gen>[a-z0-9]+):(?P<topo>\d+x\d+)(?:@(?P<hosts>\d+))?$")

LABEL_ACCELERATOR_TYPE = "ray.io/accelerator-type"
LABEL_SLICE_NAME = "ray.io/tpu-slice-name"
LABEL_WORKER_ID = "ray.io/tpu-worker-id"
LABEL_TOPOLOGY = "ray.io/tpu-topology"
LABEL_POD_TYPE = "ray.io/tpu-pod-type"


@dataclass(frozen=True)
class EmulatedSlice:
    """A parsed spec: the catalog slice and the (possibly test-only) host split."""

    slice: TpuSlice
    hosts: int
    chips_per_host: int

    @property
    def test_only(self) -> bool:
        """True when the host split differs from the catalog's (``@HOSTS`` shapes)."""
        return self.hosts != self.slice.hosts


@dataclass
class NodeLaunch:
    """One emulated TPU host: what ``ray start`` needs to advertise it.

    Attributes:
        resources: Ray custom resources (``TPU``, ``accelerator_type:TPU-...``, ``<TPU_NAME>``,
            and ``TPU-<pod type>-head`` on worker 0 only).
        env: environment of the ``ray start`` process (inherited by its workers).
        labels: Ray node labels (``ray.io/...``), as Ray derives them from ``env``.
        num_cpus: logical CPUs the node advertises.
    """

    resources: dict[str, float]
    env: dict[str, str]
    labels: dict[str, str]
    num_cpus: int = 1
    name: str = field(default="")

    def ray_start_args(self, address: str, ports: Mapping[str, int] | None = None) -> list[str]:
        """``ray start`` arguments joining ``address`` as this node (run it with :attr:`env`).

        ``ports`` maps ``ray start`` port options (``node-manager-port``,
        ``dashboard-agent-listen-port``, ...) to values, to keep off ports in use.
        """
        from raygke.local.cluster import ray_command

        args = [
            *ray_command(),
            "start",
            f"--address={address}",
            f"--num-cpus={self.num_cpus}",
            "--num-gpus=0",
            f"--resources={json.dumps(self.resources, sort_keys=True)}",
            "--labels=" + ",".join(f"{k}={v}" for k, v in sorted(self.labels.items())),
        ]
        args += [f"--{k}={v}" for k, v in (ports or {}).items()]
        return args


def parse_spec(spec: str) -> EmulatedSlice:
    """Parse ``GEN:TOPOLOGY[@HOSTS]``.

    Raises:
        CatalogError: malformed spec, unknown generation/topology, or chips not divisible by
            HOSTS; the message names the spec and what is valid.
    """
    m = _SPEC.match(spec.strip().lower())
    if not m:
        raise CatalogError(f"TPU spec {spec!r} is not GEN:TOPOLOGY[@HOSTS], e.g. v5e:2x2, v6e:4x4")
    sl = tpu_slice(m["gen"], m["topo"])
    hosts = int(m["hosts"]) if m["hosts"] else sl.hosts
    if hosts < 1 or sl.chips % hosts:
        raise CatalogError(f"TPU spec {spec!r}: {sl.chips} chips do not split over {hosts} hosts")
    return EmulatedSlice(sl, hosts, sl.chips // hosts)


def emulated_tpu_nodes(
    spec: str, slices: int = 1, num_cpus: int = 1, name_prefix: str = "raygke-local-tpu"
) -> list[NodeLaunch]:
    """One :class:`NodeLaunch` per emulated host of ``slices`` slices of ``spec``.

    Host ``i`` of slice ``s`` gets ``TPU_NAME=<name_prefix>-<s>``, ``TPU_WORKER_ID=i``; worker 0
    of each slice carries the ``TPU-<pod type>-head`` resource.

    Raises:
        CatalogError: see :func:`parse_spec`.
    """
    es = parse_spec(spec)
    sl = es.slice
    accel = sl.generation.ray_accelerator_type
    nodes = []
    for s in range(slices):
        tpu_name = f"{name_prefix}-{s}"
        hostnames = ",".join(f"{tpu_name}-w{i}" for i in range(es.hosts))
        for i in range(es.hosts):
            resources: dict[str, float] = {
                "TPU": float(es.chips_per_host),
                f"accelerator_type:{accel}": 1.0,
                tpu_name: 1.0,
            }
            if i == 0:
                resources[sl.head_resource] = 1.0
            env = {
                "TPU_NAME": tpu_name,
                "TPU_WORKER_ID": str(i),
                "TPU_ACCELERATOR_TYPE": sl.pod_type,
                "TPU_TOPOLOGY": sl.topology,
                "TPU_WORKER_HOSTNAMES": hostnames,
                "TPU_SKIP_MDS_QUERY": "true",
                "JAX_PLATFORMS": "cpu",
            }
            labels = {
                LABEL_ACCELERATOR_TYPE: accel,
                LABEL_SLICE_NAME: tpu_name,
                LABEL_WORKER_ID: str(i),
                LABEL_TOPOLOGY: sl.topology,
                LABEL_POD_TYPE: sl.pod_type,
            }
            nodes.append(NodeLaunch(resources, env, labels, num_cpus, f"{tpu_name}-w{i}"))
    return nodes


def scaling_for_spec(spec: str, slices: int = 1) -> dict[str, Any]:
    """``ScalingConfig`` kwargs for ``slices`` emulated slices of ``spec``.

    For a catalog shape this is exactly ``TpuSlice.scaling_config(slices)`` (what the GKE job
    gets); for a test-only ``@HOSTS`` shape, ``num_workers`` / ``TPU`` per worker follow the split.
    """
    es = parse_spec(spec)
    kwargs = es.slice.scaling_config(slices)
    if es.test_only:
        kwargs["num_workers"] = es.hosts * slices
        kwargs["resources_per_worker"] = {"TPU": es.chips_per_host}
    return kwargs


def tpu_job_args(state: Mapping[str, Any]) -> dict[str, Any]:
    """Job args for ``raygke local run <train> --accelerator tpu`` on the emulated slice(s).

    Args:
        state: the local environment's state; reads ``state["tpu"]`` (the ``--tpu`` spec given to
            ``raygke local up``, or a dict with ``spec`` and optional ``slices``) and optional
            ``state["tpu_slices"]``.

    Returns:
        ``{"scaling": ScalingConfig kwargs}``. No ``peak_flops_per_device``: the emulated hosts
        compute on CPU, so a TPU peak would give a meaningless MFU.

    Raises:
        ValueError: the local environment was started without ``--tpu``.
    """
    tpu = state.get("tpu")
    if not tpu:
        raise ValueError(
            "the local environment has no emulated TPU slice; run "
            "`raygke local up --tpu GEN:TOPOLOGY` (e.g. v5e:2x2) first"
        )
    if isinstance(tpu, Mapping):
        spec, slices = str(tpu["spec"]), int(tpu.get("slices", 1))
    else:
        spec, slices = str(tpu), int(state.get("tpu_slices", 1))
    return {"scaling": scaling_for_spec(spec, slices)}
