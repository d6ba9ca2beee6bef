"""The fault pairs' sizes, constants and injectable faults, without importing a framework: the
catalogue (``cases/faults/catalogue.py``) reads them here, so that listing it imports neither;
``cases/faults/models.py`` builds the pairs from them."""

WEIGHT_SEED = 20240
EPS = 1e-5
WRONG_EPS = 1e-1
MS_BN_MOMENTUM = 0.9  # MindSpore keeps 0.9 of the old running value ...
TORCH_BN_MOMENTUM = 1.0 - MS_BN_MOMENTUM  # ... PyTorch weighs the new batch value by 0.1
WRONG_MS_BN_MOMENTUM = 0.5
CLIP = 1.0
RESIDUAL_SCALE = 0.5  # the faulty block adds half its shortcut
D_MODEL, D_FF, D_IN, SEQ_LEN, N_OUT = 16, 32, 8, 6, 4
DEEP_DEPTH, DEEP_WIDTH, DEEP_FAULT_AT = 12, 16, 9
DEEP_FAULT_SCALE = 1.0 + 1e-4  # a tiny genuine fault: 1e-4 relative on one layer's output

RESNET_FAULTS = {
    "padding": "layer1.conv2 pads (top 0, bottom 2, left 1, right 1) instead of 1 all round",
    "bn_eps": "layer2.bn2 has eps 1e-1 instead of 1e-5",
    "bn_swap_gamma_beta": "layer2.bn1 scales by beta and shifts by gamma",
    "bn_momentum": "layer1.bn1 has MindSpore momentum 0.5 (PyTorch 0.5) instead of 0.9 (PyTorch 0.1)",
    "custom_bprop": "clip's bprop masks the clamped region instead of passing the gradient straight through",
    "residual_scale": "layer2 adds 0.5 x its shortcut (functional code in the block)",
}
TRANSFORMER_FAULTS = {
    "ln_eps": "blocks.1.ln1 has epsilon 1e-1 instead of 1e-5",
    "ln_swap_gamma_beta": "blocks.0.ln2 scales by beta and shifts by gamma",
    "gelu_tanh": "blocks.0.ffn.act uses the tanh approximation; PyTorch uses exact erf",
    "transposed_weight": "blocks.1.attn.proj multiplies by weight.T instead of weight",
    "dropped_bias": "blocks.0.ffn.fc2 keeps its bias parameter but never adds it",
    "positional_shift": "the top-level code adds the positional table shifted by one position",
    "attention_scale": "blocks.0.attn scales scores by 1/d instead of 1/sqrt(d) (functional code)",
}
DEEP_FAULTS = {"tiny_scale": f"blocks.{DEEP_FAULT_AT}.fc output scaled by 1 + 1e-4"}
