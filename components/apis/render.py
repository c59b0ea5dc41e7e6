"""The Google Cloud APIs the program enables (:data:`REQUIRED_APIS`, :data:`GCS_FT_APIS`) and which
resource types wait for which API (:func:`apis_for_type`): a resource created before its API is
enabled fails (``SERVICE_DISABLED``). Sources: docs/sources.md#apis-render
"""

from __future__ import annotations

# API service name -> why the stack needs it.
REQUIRED_APIS: dict[str, str] = {
    "container.googleapis.com": "the GKE cluster and node pools",
    "compute.googleapis.com": "the VPC, subnet, router, Cloud NAT and the nodes",
    "iam.googleapis.com": "service accounts and their IAM bindings",
    "iamcredentials.googleapis.com": "Workload Identity: pods get tokens for their Google "
    "service account",
    "cloudresourcemanager.googleapis.com": "project-level IAM bindings (node service account "
    "roles)",
    "cloudkms.googleapis.com": "the CMEK key rings and keys (GKE secrets, buckets)",
    "secretmanager.googleapis.com": "the stack's secrets and their reader bindings",
    "storage.googleapis.com": "the datasets, checkpoints and artifacts buckets",
    "artifactregistry.googleapis.com": "nodes pull images from Artifact Registry",
    "monitoring.googleapis.com": "GKE system metrics and Managed Service for Prometheus",
    "logging.googleapis.com": "GKE system and workload logs",
}

# APIs of GCS fault tolerance (components/gcsft), enabled only where it creates its Redis:
# Memorystore for Redis, and Service Networking for the private services access connection
# (https://cloud.google.com/memorystore/docs/redis/create-instance-gcloud,
# https://cloud.google.com/vpc/docs/configure-private-services-access).
GCS_FT_APIS: dict[str, str] = {
    "redis.googleapis.com": "the Memorystore for Redis of GCS fault tolerance",
    "servicenetworking.googleapis.com": "its private services access connection",
}

# Resource type token prefix -> the APIs a resource of that type calls (first match wins).
_TYPE_APIS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "gcp:container/",
        (
            "container.googleapis.com",
            "compute.googleapis.com",
            "iamcredentials.googleapis.com",
            "monitoring.googleapis.com",
            "logging.googleapis.com",
            "artifactregistry.googleapis.com",
        ),
    ),
    ("gcp:compute/", ("compute.googleapis.com",)),
    ("gcp:monitoring/", ("monitoring.googleapis.com",)),
    ("gcp:kms/", ("cloudkms.googleapis.com",)),
    ("gcp:serviceaccount/", ("iam.googleapis.com",)),
    ("gcp:projects/iAM", ("cloudresourcemanager.googleapis.com", "iam.googleapis.com")),
    ("gcp:secretmanager/", ("secretmanager.googleapis.com",)),
    # The one service identity the stack requests is Secret Manager's (resources/security.py):
    # generating a service's agent needs that service enabled
    # (https://cloud.google.com/secret-manager/docs/cmek).
    # and Memorystore's, with GCS fault tolerance (components/gcsft/component.py); a stack waits
    # only for the APIs it enables.
    ("gcp:projects/serviceIdentity:", ("secretmanager.googleapis.com", "redis.googleapis.com")),
    ("gcp:redis/", ("redis.googleapis.com",)),
    ("gcp:servicenetworking/", ("servicenetworking.googleapis.com", "compute.googleapis.com")),
    ("gcp:storage/", ("storage.googleapis.com",)),
    ("gcp:artifactregistry/", ("artifactregistry.googleapis.com",)),
)

SERVICE_TYPE = "gcp:projects/service:Service"


def apis_for_type(type_token: str) -> tuple[str, ...]:
    """The APIs a resource of Pulumi type ``type_token`` (e.g. ``gcp:container/cluster:Cluster``)
    needs enabled first; ``()`` for the API services themselves and for non-GCP types."""
    if type_token == SERVICE_TYPE:
        return ()
    for prefix, apis in _TYPE_APIS:
        if type_token.startswith(prefix):
            return apis
    return ()
