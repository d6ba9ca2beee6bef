"""The registry and `parity.translate` must agree: for every known mismatch of a torch.nn layer,
translating the entry's own PyTorch configuration gives a pair that agrees, forward and grads, when
the entry has a fix; when it has none, the mismatch shows (or translate refuses explicitly)."""

import pytest

import parity
from parity.mismatch_checks.pairs import input_specs, resolve
from parity.registry import load


def _layer_entries():
    for entry in load().entries:
        spec = entry.selftest
        if spec is None or spec.optimizer is not None or not entry.torch.startswith("torch.nn."):
            continue
        if entry.kind in ("unsupported", "precision") or spec.differs_in in ("raises", "init", "zero_fraction"):
            continue
        yield pytest.param(entry, id=entry.id)


def _translate_and_check(entry):
    spec = entry.selftest
    module = resolve(entry.torch)(**dict(spec.torch_kwargs))
    if spec.batches is not None:  # a loss shown in training: the translated loss trains the same
        import torch

        torch.manual_seed(0)
        features = spec.batches[0][0]["randn"][-1]
        model = torch.nn.Linear(features, features)
        parity.check_training(
            parity.translate(model),
            model,
            [input_specs(b) for b in spec.batches],
            loss=module,
            steps=len(spec.batches),
            optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
        )
        return
    cell = parity.translate(module)
    parity.check(
        cell,
        module,
        input_specs(spec.fixed_inputs or spec.inputs),
        train=spec.train,
        grads=spec.grads,
        reference="float64",
    )


@pytest.mark.parametrize("entry", [p for p in _layer_entries() if p.values[0].selftest.fixed])
def test_translation_applies_the_fix(entry):
    _translate_and_check(entry)  # a known fix exists: translate must apply it, not refuse


@pytest.mark.parametrize("entry", [p for p in _layer_entries() if not p.values[0].selftest.fixed])
def test_without_a_known_fix_the_mismatch_shows(entry):
    with pytest.raises((parity.ParityMismatch, parity.ParityUnsupported)):
        _translate_and_check(entry)


def test_replacement_cells_are_the_ones_translate_builds():
    """A fix that names a Cell of parity's own names the Cell `parity.translate` builds for that
    layer: one implementation serves both, and the registry's self-test proves it."""
    own = [e for e in load().entries if e.replacement and e.replacement.startswith("parity.")]
    assert {e.replacement.rpartition(":")[2] for e in own} == {
        "ELU",
        "SELU",
        "Softplus",
        "Tanh",
        "Tanhshrink",
        "Mish",
        "EmbeddingPaddingIdx",
        "CrossEntropyLossInt64",
        "BCEWithLogitsLoss",
        "Adam",
        "AdamW",
        "SGD",
        "CroppingPad",
    }
    for entry in own:
        cell_class = resolve(entry.replacement)
        assert cell_class.__module__.startswith("parity.translation."), entry.id
        if entry.selftest.optimizer is not None:  # an optimizer's fix is the one check_training translates to
            import torch

            from parity.translation.optim import translate_optimizer

            weight = torch.nn.Parameter(torch.zeros(2))
            built = translate_optimizer(
                resolve(entry.torch)([weight], **dict(entry.selftest.torch_kwargs)), lambda p: []
            )
            assert type(built) is cell_class, entry.id
            continue
        module = resolve(entry.torch)(**dict(entry.selftest.torch_kwargs))
        if entry.family == "nn":  # a mint entry's selftest may use kwargs the nn fix handles plainly
            assert isinstance(parity.translate(module), cell_class), entry.id
