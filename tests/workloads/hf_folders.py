"""Tiny Hugging Face causal-LM folders the fine-tuning tests build themselves (nothing
downloads): a GPT-2 and a Llama config with random weights and a byte-level BPE tokenizer
trained here on a few lines of text."""

from __future__ import annotations

from pathlib import Path

TEXT = [
    "def add(x, y):\n    return x + y\n",
    "the quick brown fox jumps over the lazy dog\n",
    "class Point:\n    def __init__(self, x):\n        self.x = x\n",
] * 20


def tokenizer(eos: str) -> object:
    """A byte-level BPE tokenizer (about 300 ids) as a ``PreTrainedTokenizerFast``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=300,
        special_tokens=[eos],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(TEXT, trainer=trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, bos_token=eos)


def make_folder(kind: str, out: Path, positions: int = 64) -> Path:
    """``out`` holding a tiny ``kind`` (``gpt2`` | ``llama``) causal LM and its tokenizer."""
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

    tok = tokenizer("<|endoftext|>" if kind == "gpt2" else "</s>")
    vocab = len(tok)
    if kind == "gpt2":
        cfg = GPT2Config(
            vocab_size=vocab,
            n_positions=positions,
            n_embd=32,
            n_layer=2,
            n_head=2,
            resid_pdrop=0.0,  # no dropout: a resumed step is the same step
            embd_pdrop=0.0,
            attn_pdrop=0.0,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.eos_token_id,
        )
    else:
        cfg = LlamaConfig(
            vocab_size=vocab,
            # heads of 32 units, the smallest vLLM's CPU attention takes (the fine-tuned
            # folder is served in tests/raygke/local/test_commands.py); grouped-query attention
            hidden_size=64,
            intermediate_size=96,
            num_hidden_layers=2,
            num_attention_heads=2,
            num_key_value_heads=1,
            max_position_embeddings=positions,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.eos_token_id,
        )
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out
