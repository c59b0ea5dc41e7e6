"""What the infrastructure tells a Ray process about its bucket mounts (standard library only).

``RAYGKE_HNS_MOUNTS``: the mount paths (``os.pathsep``-separated) of Cloud Storage FUSE volumes
whose bucket has hierarchical namespace, where a directory rename is one atomic operation
(https://cloud.google.com/storage/docs/hns-overview; Cloud Storage FUSE renames a folder of an
HNS bucket with the atomic ``RenameFolder`` call:
https://cloud.google.com/storage/docs/cloud-storage-fuse/semantics, "Rename directories"). The
pod template sets it (:mod:`components.storage.fuse`); :mod:`workloads.checkpoint` reads it to
choose how a checkpoint is committed.
"""

from __future__ import annotations

HNS_MOUNTS_ENV = "RAYGKE_HNS_MOUNTS"
