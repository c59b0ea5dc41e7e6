"""The stack as a whole: the top-level model, the resolver from declared pools to capacity, the
cross-field rules, the loader and the check driver.

Nothing here imports ``pulumi``: the model is what ``raygke check``, the offline render and the
Pulumi program all start from. Public names are re-exported here, so callers write
``from components.stack import StackConfig, load_stack_file``; lazily (PEP 562), because each
concept's model imports ``components.stack.base``, and importing every concept here eagerly would
be an import circle.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from components.cluster.model import ClusterConfig, MaintenanceWindow, NapConfig, SystemPool
    from components.network.model import AuthorizedNetwork, FlowLogsConfig, NetworkConfig
    from components.nodepools.model import (
        CpuPool,
        GpuPool,
        GpuSpec,
        NodePool,
        Provisioning,
        TpuPool,
        TpuSpec,
    )
    from components.raycrs.model import (
        DEFAULT_JOB_TTL_SECONDS,
        IMAGE_KINDS,
        KUBERAY_CHART_VERSIONS,
        HeadConfig,
        JobConfig,
        KubeRayConfig,
        PrebuiltImage,
        RayClusterConfig,
        RayConfig,
        RayImages,
        WorkerGroupConfig,
    )
    from components.raycrs.serve_model import UPGRADE_TYPES, IncrementalUpgradeConfig, ServiceConfig
    from components.stack.base import (
        GKE_NAME_MAX,
        K8S_NAME_MAX,
        OTHER_NAMESPACES,
        PROJECT_NAMESPACE,
        ConfigError,
        StackFileError,
        quantity_bytes,
    )
    from components.stack.loader import (
        apply_overrides,
        esc_stand_ins,
        format_validation_error,
        load_stack_file,
        parse_set,
        read_stack_yaml,
        required_keys,
        stack_data_from_yaml,
        stack_environments,
        validate,
    )
    from components.stack.model import LocalConfig, StackConfig
    from components.stack.resolve import (
        GroupTarget,
        JobTarget,
        ResolveError,
        group_max_replicas,
        job_runs_as,
        nap_needs,
        own_cluster_group,
        pool_capacity,
        resolve_cluster,
        resolve_group,
        resolve_identity,
        resolve_job,
        resolve_pool,
        resolve_service,
    )
    from components.stack.rules import RULES, Rule, rule_problems
    from components.storage.model import (
        BucketConfig,
        BucketRole,
        BucketsConfig,
        KmsConfig,
        SecretConfig,
        WorkloadIdentityConfig,
    )

# public name -> the module that defines it
_EXPORTS: dict[str, str] = {
    "AuthorizedNetwork": "components.network.model",
    "BucketConfig": "components.storage.model",
    "BucketRole": "components.storage.model",
    "BucketsConfig": "components.storage.model",
    "ClusterConfig": "components.cluster.model",
    "ConfigError": "components.stack.base",
    "CpuPool": "components.nodepools.model",
    "DEFAULT_JOB_TTL_SECONDS": "components.raycrs.model",
    "FlowLogsConfig": "components.network.model",
    "GKE_NAME_MAX": "components.stack.base",
    "GpuPool": "components.nodepools.model",
    "GpuSpec": "components.nodepools.model",
    "GroupTarget": "components.stack.resolve",
    "HeadConfig": "components.raycrs.model",
    "IMAGE_KINDS": "components.raycrs.model",
    "IncrementalUpgradeConfig": "components.raycrs.serve_model",
    "JobConfig": "components.raycrs.model",
    "JobTarget": "components.stack.resolve",
    "K8S_NAME_MAX": "components.stack.base",
    "KUBERAY_CHART_VERSIONS": "components.raycrs.model",
    "KmsConfig": "components.storage.model",
    "KubeRayConfig": "components.raycrs.model",
    "LocalConfig": "components.stack.model",
    "MaintenanceWindow": "components.cluster.model",
    "NapConfig": "components.cluster.model",
    "NetworkConfig": "components.network.model",
    "NodePool": "components.nodepools.model",
    "OTHER_NAMESPACES": "components.stack.base",
    "PROJECT_NAMESPACE": "components.stack.base",
    "PrebuiltImage": "components.raycrs.model",
    "Provisioning": "components.nodepools.model",
    "RULES": "components.stack.rules",
    "RayClusterConfig": "components.raycrs.model",
    "RayConfig": "components.raycrs.model",
    "RayImages": "components.raycrs.model",
    "ResolveError": "components.stack.resolve",
    "Rule": "components.stack.rules",
    "SecretConfig": "components.storage.model",
    "ServiceConfig": "components.raycrs.serve_model",
    "StackConfig": "components.stack.model",
    "StackFileError": "components.stack.base",
    "SystemPool": "components.cluster.model",
    "TpuPool": "components.nodepools.model",
    "TpuSpec": "components.nodepools.model",
    "UPGRADE_TYPES": "components.raycrs.serve_model",
    "WorkerGroupConfig": "components.raycrs.model",
    "WorkloadIdentityConfig": "components.storage.model",
    "apply_overrides": "components.stack.loader",
    "esc_stand_ins": "components.stack.loader",
    "format_validation_error": "components.stack.loader",
    "group_max_replicas": "components.stack.resolve",
    "job_runs_as": "components.stack.resolve",
    "load_stack_file": "components.stack.loader",
    "nap_needs": "components.stack.resolve",
    "own_cluster_group": "components.stack.resolve",
    "parse_set": "components.stack.loader",
    "pool_capacity": "components.stack.resolve",
    "quantity_bytes": "components.stack.base",
    "read_stack_yaml": "components.stack.loader",
    "required_keys": "components.stack.loader",
    "resolve_cluster": "components.stack.resolve",
    "resolve_group": "components.stack.resolve",
    "resolve_identity": "components.stack.resolve",
    "resolve_job": "components.stack.resolve",
    "resolve_pool": "components.stack.resolve",
    "resolve_service": "components.stack.resolve",
    "rule_problems": "components.stack.rules",
    "stack_data_from_yaml": "components.stack.loader",
    "stack_environments": "components.stack.loader",
    "validate": "components.stack.loader",
}

__all__ = [
    "DEFAULT_JOB_TTL_SECONDS",
    "GKE_NAME_MAX",
    "IMAGE_KINDS",
    "K8S_NAME_MAX",
    "KUBERAY_CHART_VERSIONS",
    "OTHER_NAMESPACES",
    "PROJECT_NAMESPACE",
    "RULES",
    "UPGRADE_TYPES",
    "AuthorizedNetwork",
    "BucketConfig",
    "BucketRole",
    "BucketsConfig",
    "ClusterConfig",
    "ConfigError",
    "CpuPool",
    "FlowLogsConfig",
    "GpuPool",
    "GpuSpec",
    "GroupTarget",
    "HeadConfig",
    "IncrementalUpgradeConfig",
    "JobConfig",
    "JobTarget",
    "KmsConfig",
    "KubeRayConfig",
    "LocalConfig",
    "MaintenanceWindow",
    "NapConfig",
    "NetworkConfig",
    "NodePool",
    "PrebuiltImage",
    "Provisioning",
    "RayClusterConfig",
    "RayConfig",
    "RayImages",
    "ResolveError",
    "Rule",
    "SecretConfig",
    "ServiceConfig",
    "StackConfig",
    "StackFileError",
    "SystemPool",
    "TpuPool",
    "TpuSpec",
    "WorkerGroupConfig",
    "WorkloadIdentityConfig",
    "apply_overrides",
    "esc_stand_ins",
    "format_validation_error",
    "group_max_replicas",
    "job_runs_as",
    "load_stack_file",
    "nap_needs",
    "own_cluster_group",
    "parse_set",
    "pool_capacity",
    "quantity_bytes",
    "read_stack_yaml",
    "required_keys",
    "resolve_cluster",
    "resolve_group",
    "resolve_identity",
    "resolve_job",
    "resolve_pool",
    "resolve_service",
    "rule_problems",
    "stack_data_from_yaml",
    "stack_environments",
    "validate",
]


def __getattr__(name: str) -> Any:
    """The public name ``name`` from the module that defines it (raises ``AttributeError``)."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))
