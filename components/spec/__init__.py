"""The stack file's typed model (layer 1 of ``components/``): pydantic models split by concern, the
resolver from declared pools to capacity, the cross-field rules and the loader.

Nothing here imports ``pulumi``: the model is what ``raygke check``, the offline render and the
Pulumi program all start from. Public names are re-exported here, so callers write
``from components.spec import StackConfig, load_stack_file``.
"""

from components.spec.base import (
    GKE_NAME_MAX,
    K8S_NAME_MAX,
    OTHER_NAMESPACES,
    PROJECT_NAMESPACE,
    ConfigError,
    StackFileError,
)
from components.spec.cluster import ClusterConfig, MaintenanceWindow, NapConfig, SystemPool
from components.spec.loader import (
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
from components.spec.network import AuthorizedNetwork, NetworkConfig
from components.spec.pools import (
    CpuPool,
    GpuPool,
    GpuSpec,
    NodePool,
    Provisioning,
    TpuPool,
    TpuSpec,
)
from components.spec.ray import (
    DEFAULT_JOB_TTL_SECONDS,
    KUBERAY_CHART_VERSIONS,
    HeadConfig,
    JobConfig,
    KubeRayConfig,
    RayClusterConfig,
    RayConfig,
    RayImages,
    WorkerGroupConfig,
)
from components.spec.resolve import (
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
)
from components.spec.rules import RULES, Rule, rule_problems
from components.spec.stack import LocalConfig, StackConfig
from components.spec.storage import (
    BucketConfig,
    BucketRole,
    BucketsConfig,
    SecretConfig,
    WorkloadIdentityConfig,
)

__all__ = [
    "DEFAULT_JOB_TTL_SECONDS",
    "GKE_NAME_MAX",
    "K8S_NAME_MAX",
    "KUBERAY_CHART_VERSIONS",
    "OTHER_NAMESPACES",
    "PROJECT_NAMESPACE",
    "RULES",
    "AuthorizedNetwork",
    "BucketConfig",
    "BucketRole",
    "BucketsConfig",
    "ClusterConfig",
    "ConfigError",
    "CpuPool",
    "GpuPool",
    "GpuSpec",
    "GroupTarget",
    "HeadConfig",
    "JobConfig",
    "JobTarget",
    "KubeRayConfig",
    "LocalConfig",
    "MaintenanceWindow",
    "NapConfig",
    "NetworkConfig",
    "NodePool",
    "Provisioning",
    "RayClusterConfig",
    "RayConfig",
    "RayImages",
    "ResolveError",
    "Rule",
    "SecretConfig",
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
    "read_stack_yaml",
    "required_keys",
    "resolve_cluster",
    "resolve_group",
    "resolve_identity",
    "resolve_job",
    "resolve_pool",
    "rule_problems",
    "stack_data_from_yaml",
    "stack_environments",
    "validate",
]
