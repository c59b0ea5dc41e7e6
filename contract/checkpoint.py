"""Where a trainer's checkpoint keeps what other tools read (standard library only).

A finished training run's final checkpoint folder (``<storage_path>/<name>/checkpoint_<step>``,
:mod:`workloads.checkpoint`) holds, beside the framework's own files, a Hugging Face model folder
``<checkpoint>/hf/`` (``config.json``, ``model.safetensors``, ``generation_config.json``,
``tokenizer.json``, ``tokenizer_config.json``; :mod:`workloads.hf_export`) that
``transformers.AutoModelForCausalLM.from_pretrained`` and vLLM load as they are. The serving side
(infrastructure and workloads) finds it through :data:`HF_SUBDIR`.
"""

from __future__ import annotations

HF_SUBDIR = "hf"  # <checkpoint>/hf/: the Hugging Face model folder of a finished run
