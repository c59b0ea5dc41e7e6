"""Pure builders for the stack outputs that come from config alone (see ``docs/outputs.md``).

Outputs that follow from config are computed here rather than read from resource outputs, so a
first ``pulumi preview`` (where a resource's computed outputs are unknown) and a consumer's
``StackReference`` already see them: bucket URLs (``gs://<name>``, names chosen by
:func:`components.plan.naming.bucket_name`) and service account emails
(``<account id>@<project>.iam.gserviceaccount.com``,
https://cloud.google.com/iam/docs/service-account-overview#identifiers).
"""

from __future__ import annotations

from typing import Any

from components.config.nodepools import GpuPool, TpuPool
from components.config.stack import StackConfig
from components.plan import naming
from components.plan.plan import plan

# The version of the outputs contract (docs/outputs.md). Adding an output keeps it; renaming or
# removing one, or changing its type, raises it, so a consumer can refuse a stack it does not know.
CONTRACT_VERSION = "1"


def config_outputs(cfg: StackConfig) -> dict[str, Any]:
    """The stack outputs that follow from config alone, known at the first preview.

    Keys: ``contract_version`` (:data:`CONTRACT_VERSION`), ``bucket_urls`` and ``bucket_names``
    (purpose -> ``gs://`` URL / name), ``service_accounts`` (workload identity -> GSA email),
    ``node_service_account`` (email), ``kuberay_mode``, ``node_pools``
    (:func:`accelerator_summary`).
    """
    ctx = plan(cfg).context
    return {
        "contract_version": CONTRACT_VERSION,
        "bucket_urls": {p: ctx.bucket_url(p) for p in naming.BUCKET_PURPOSES},
        "bucket_names": {p: ctx.buckets[p] for p in naming.BUCKET_PURPOSES},
        "service_accounts": {
            wi.name: naming.gsa_email(cfg.project, wi) for wi in cfg.workload_identities
        },
        "node_service_account": (
            f"{naming.node_service_account_id(ctx.cluster)}@{cfg.project}.iam.gserviceaccount.com"
        ),
        "kuberay_mode": cfg.kuberay.mode,
        "node_pools": accelerator_summary(cfg),
    }


def accelerator_summary(cfg: StackConfig) -> dict[str, dict[str, Any]]:
    """Config pool name -> accelerator summary.

    Keys: ``kind`` (cpu|tpu|gpu), ``machine_type``, ``zones``, ``gke_node_pools`` (GKE pool names),
    and for TPU ``accelerator`` (GKE label), ``topology``, ``chips_per_host``, ``hosts_per_slice``,
    ``chips_per_slice``, ``max_slices``; for GPU ``accelerator``, ``gpus_per_node``, ``max_nodes``;
    for CPU ``max_nodes``.
    """
    out: dict[str, dict[str, Any]] = {}
    pool_specs = plan(cfg).pool_specs
    for p in cfg.node_pools:
        specs = pool_specs.get(p.name, ())
        row: dict[str, Any] = {
            "kind": p.kind,
            "machine_type": p.machine_type,
            "zones": specs[0].zones if specs else cfg.pool_zones(p),
            "gke_node_pools": [s.name for s in specs],
        }
        if isinstance(p, TpuPool):
            s = p.slice
            row.update(
                accelerator=s.generation.gke_accelerator,
                topology=s.topology,
                chips_per_host=s.chips_per_host,
                hosts_per_slice=s.hosts,
                chips_per_slice=s.chips,
                max_slices=p.max_slices,
            )
        elif isinstance(p, GpuPool):
            row.update(accelerator=p.gpu.type, gpus_per_node=p.gpu.count, max_nodes=p.max_nodes)
        else:
            row.update(max_nodes=p.max_nodes)
        out[p.name] = row
    return out
