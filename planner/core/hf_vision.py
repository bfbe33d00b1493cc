"""Multimodal wrappers: the text model under `text_config`, and the vision tower's parameters counted from
`vision_config` (planner.core.hf_config)."""

from __future__ import annotations


def _vision_params(vc: dict) -> int:
    """Vision tower + projector from vision_config (a ViT of `depth` blocks: qkv+proj and a 2-matrix MLP with biases,
    two LayerNorms; patch embedding; learned positions; Qwen-VL's patch merger or a projection to the text width)."""
    h = int(vc.get("hidden_size") or 0)
    depth = int(vc.get("depth") or vc.get("num_hidden_layers") or 0)
    if not h or not depth:
        return 0
    inner = int(vc.get("intermediate_size") or 4 * h)
    block = 4 * h * h + 4 * h + 2 * h * inner + inner + h + 4 * h
    patch = int(vc.get("patch_size") or 14)
    embed = int(vc.get("in_channels") or vc.get("num_channels") or 3) * int(vc.get("temporal_patch_size") or 1)
    embed = embed * patch * patch * h + h
    positions = int(vc.get("num_position_embeddings") or vc.get("position_embedding_size") or 0) * h
    out = int(vc.get("out_hidden_size") or 0)
    merge = int(vc.get("spatial_merge_size") or 0)
    if out and merge:  # Qwen-VL merger: LayerNorm, then merged → merged → text width
        merged = h * merge * merge
        projector = 2 * h + merged * merged + merged + merged * out + out
    else:
        projector = 0
    return depth * block + embed + positions + projector


def _text_and_vision(cfg: dict) -> tuple[dict, int]:
    """A multimodal wrapper's text config (its own keys over the wrapper's), and the vision tower's parameters."""
    text = cfg.get("text_config")
    if not isinstance(text, dict):
        return cfg, 0
    merged = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_config", "audio_config")}
    merged.update({k: v for k, v in text.items() if v is not None})
    merged["model_type"] = str(cfg.get("model_type") or text.get("model_type"))
    merged.setdefault("torch_dtype", text.get("dtype") or cfg.get("dtype"))
    if "tie_word_embeddings" in cfg and "tie_word_embeddings" not in text:
        merged["tie_word_embeddings"] = cfg["tie_word_embeddings"]
    vision = cfg.get("vision_config")
    return merged, _vision_params(vision) if isinstance(vision, dict) else 0
