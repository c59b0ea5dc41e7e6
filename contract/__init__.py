"""What the infrastructure and the workloads agree on (standard library only; ships in the Ray image)."""
