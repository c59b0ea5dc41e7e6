"""The stack file's typed model (layer 1 of ``components/``): pydantic models split by concern, the
resolver from declared pools to capacity, the cross-field rules and the loader.

Nothing here imports ``pulumi``: the model is what ``raygke check``, the offline render and the
Pulumi program all start from. Public names are re-exported here, so callers write
``from components.stack import StackConfig, load_stack_file``.
"""

from components.cluster.model import ClusterConfig, MaintenanceWindow, NapConfig, SystemPool
from components.images.model import IMAGE_KINDS, PrebuiltImage, RayImages
from components.kuberay.model import KUBERAY_CHART_VERSIONS, KubeRayConfig
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
    HeadConfig,
    JobConfig,
    RayClusterConfig,
    RayConfig,
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
