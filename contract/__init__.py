"""The contract between the infrastructure (``components/``, ``raygke``) and the Ray workloads
(``workloads/``): what both sides must agree on, standard library only. It ships beside
``workloads/`` in the job's ``working_dir`` archive (``components/raycrs/archive.py``).
"""
