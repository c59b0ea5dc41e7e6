"""What the infrastructure and the workloads agree on (standard library only; ships in the Ray
image beside ``workloads/``, in the job's ``working_dir`` archive: ``components/raycrs/archive.py``).
"""
