"""Ray's ports and the pod labels of the stack's Ray objects: what the Ray pods
(:mod:`components.raycrs.pod`), the Ray namespace's NetworkPolicies
(:mod:`components.kuberay.namespace`), the PodMonitorings (:mod:`components.monitoring.render`),
the Serve ingress and the clients all name, so none of them imports another concept for it.

Facts used (sources):

* Head ports: Ray's defaults, GCS 6379, dashboard / Jobs API 8265, Ray client 10001
  (https://docs.ray.io/en/latest/cluster/kubernetes/user-guides/config.html), and each Ray
  node's metrics agent on 8080, KubeRay's ``DefaultMetricsPort`` (ray-operator
  ``controllers/ray/utils/constant.go``), which KubeRay passes to ``ray start`` as
  ``--metrics-export-port``.
* Serve: 8000, KubeRay constant.go ``DefaultServingPort``.
* TPU ports: 8471 TPU runtime between the hosts of a slice and 8431 TPU runtime metrics
  (https://cloud.google.com/kubernetes-engine/docs/how-to/tpus, multi-host workload example);
  8081 the multi-slice (megascale) coordinator, ``DEFAULT_MEGASCALE_PORT`` in
  ``ray/_private/accelerators/tpu.py``.
* ``ray.io/cluster``: the label KubeRay puts on every pod of a RayCluster (constant.go
  ``RayClusterLabelKey``). The ``ray-gke`` labels are the stack's own: a RayJob's own cluster
  (whose RayCluster name KubeRay generates), the cluster a submitter submits to, a service's
  pods (whose RayCluster name changes on every upgrade); NetworkPolicies and PodMonitorings
  select on them.
"""

from __future__ import annotations

HEAD_PORTS = {"gcs-server": 6379, "dashboard": 8265, "client": 10001, "metrics": 8080}
DASHBOARD_PORT = HEAD_PORTS["dashboard"]
CLIENT_PORT = HEAD_PORTS["client"]
METRICS_PORT = HEAD_PORTS["metrics"]  # KubeRay constant.go DefaultMetricsPort
SERVE_PORT = 8000  # Ray Serve HTTP; KubeRay constant.go DefaultServingPort
TPU_RUNTIME_PORT = 8471
TPU_METRICS_PORT = 8431
MEGASCALE_PORT = 8081

CLUSTER_LABEL = "ray.io/cluster"  # KubeRay constant.go RayClusterLabelKey
JOB_CLUSTER_LABEL = "ray-gke.io/job-cluster"  # the pods of a RayJob's own cluster: the job
SUBMITTER_LABEL = "ray-gke.io/submits-to"  # a submitter or client pod: the cluster it calls
SERVICE_LABEL = "ray-gke/service"  # the pods of a RayService: the service
PART_OF = "ray-gke"  # the value of app.kubernetes.io/part-of on everything the stack renders
