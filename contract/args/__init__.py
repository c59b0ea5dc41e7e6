"""One module per workload's argument dataclass, and :mod:`contract.args.base` (the checker and
the binding they share)."""
