"""Capacity: Kueue queues in front of the Ray objects and GKE's Dynamic Workload Scheduler.

One concept folder (design.md "Capacity"):

* :mod:`components.config.capacity` (the config floor) - the ``capacity:`` block of the stack
  file (pydantic);
* :mod:`components.plan.flavors` (the plan floor) - the ResourceFlavor builder: the plan carries
  every pool's flavor (:attr:`components.plan.plan.Plan.resource_flavors`);
* :mod:`components.capacity.render` - pure render: the plan's ResourceFlavors, ClusterQueues,
  LocalQueues, WorkloadPriorityClasses, AdmissionChecks and ProvisioningRequestConfigs, Kueue's
  Helm values;
* :mod:`components.capacity.rules` - Kueue's rules for queued Ray jobs and the DWS / flex-start
  limits on the stack model, each citing its source;
* :mod:`components.capacity.checks` - the same on the rendered objects: Kueue's webhook rules
  for RayJobs / RayClusters, the carried Kueue CRDs, admission against the queues' quota;
* :mod:`components.capacity.preview` - the offline admission preview (``raygke queue``);
* :mod:`components.capacity.component` - the Pulumi ComponentResource (the only file here that
  imports ``pulumi``).
"""
