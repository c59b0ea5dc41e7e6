"""GCS fault tolerance of the RayServices: the ``gcs_fault_tolerance`` block
(:mod:`components.config.gcsft`), its derived names (:mod:`components.plan.gcsft_names`),
the pure pieces of the head pods and the Redis objects (:mod:`.render`), the stack rules
(:mod:`.rules`) and the Memorystore for Redis with its private services access, CMEK and
Secret Manager password (:mod:`.component`)."""
