"""Trained-like norm statistics for a PyTorch model built with random weights, seeded.

A freshly built model hides the differences that matter most between ports: every BatchNorm has
running mean 0 and variance 1, every LayerNorm and RMSNorm scales by 1 and shifts by 0, and a layer
scale starts at 1e-6 (so the block it scales adds nearly nothing, whatever it computes).
:func:`perturb_norms` gives them what a trained model has:

* norm scales drawn from U(0.5, 1.5) and shifts from N(0, 0.2);
* layer scales (torchvision's ConvNeXt ``layer_scale``, timm's ``gamma``) from U(0.1, 1);
* BatchNorm running statistics measured on data (``calibrate``: a batch of N(0, 1) inputs of that
  shape, every BatchNorm in training mode with a cumulative average, the rest in eval mode), then
  each variance moved by a factor from U(0.5, 2) and each mean by N(0, 0.1) standard deviations: so
  every channel keeps a realistic scale through a deep network (statistics drawn at random instead
  blow activations up layer after layer, until float32 overflows) and no layer normalises exactly.

It changes the PyTorch side only; a check copies the weights to the MindSpore side, statistics
included. Deterministic: every value comes from a generator seeded with ``seed``, drawn module by
module in ``named_modules()`` order; PyTorch's global random state is left as it was.
"""

SCALE_NAMES = ("layer_scale", "gamma", "gamma_1", "gamma_2")  # torchvision's CNBlock, timm's LayerScale


def perturb_norms(module, seed: int = 0, calibrate=None):
    """Give ``module``'s norm layers and layer scales trained-like values, in place; returns it.
    ``calibrate``: the input shape to measure BatchNorm statistics on (required where it has any)."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    draw = _Draw(torch, generator)
    with torch.no_grad():
        for _, layer in module.named_modules():
            kind = type(layer).__name__
            if "Norm" in kind:
                _set(layer, "weight", lambda t: draw.uniform(t, 0.5, 1.5))
                _set(layer, "bias", lambda t: draw.normal(t, 0.2))
            else:
                for name in SCALE_NAMES:
                    _set(layer, name, lambda t: draw.uniform(t, 0.1, 1.0))
        norms = [m for m in module.modules() if _tracks_statistics(torch, m)]
        if norms:
            _calibrate(torch, module, norms, calibrate, generator)
            for norm in norms:
                std = norm.running_var.sqrt()
                norm.running_var.mul_(draw.uniform(norm.running_var, 0.5, 2.0).to(norm.running_var.dtype))
                norm.running_mean.add_(draw.normal(norm.running_mean, 0.1).to(std.dtype) * std)
    return module


class _Draw:
    def __init__(self, torch, generator):
        self.torch, self.generator = torch, generator

    def uniform(self, tensor, low, high):
        return self.torch.rand(tensor.shape, generator=self.generator, dtype=self.torch.float64) * (high - low) + low

    def normal(self, tensor, std):
        return self.torch.randn(tensor.shape, generator=self.generator, dtype=self.torch.float64) * std


def _tracks_statistics(torch, layer) -> bool:
    return isinstance(layer, torch.nn.modules.batchnorm._NormBase) and layer.running_var is not None


def _calibrate(torch, module, norms, shape, generator):
    """Running statistics of each BatchNorm in ``norms`` measured on one batch of N(0, 1) inputs."""
    if shape is None:
        raise ValueError(f"{type(module).__name__} has BatchNorm layers: pass calibrate=<input shape>")
    batch = torch.randn((8,) + tuple(shape[1:]), generator=generator)
    training, momenta = module.training, [n.momentum for n in norms]
    module.eval()
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # a cumulative average: after one batch, its statistics
        norm.train()
    try:
        module(batch)
    finally:
        for norm, momentum in zip(norms, momenta):
            norm.momentum = momentum
        module.train(training)


def _set(layer, name, draw):
    """Set ``layer``'s own parameter ``name`` (not a child's) to ``draw(parameter)``, if it has one."""
    parameter = layer._parameters.get(name)
    if parameter is not None:
        parameter.copy_(draw(parameter).to(parameter.dtype))
