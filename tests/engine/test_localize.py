"""Per-layer localisation's arithmetic, on layer trees and arrays made here: layer alignment, verdicts,
settling containers, the first divergence, the recordings and the localiser. The adapters' capture
and ``parity.check(localize=...)`` on real pairs: tests/test_localize.py."""

from __future__ import annotations

import numpy as np
import pytest

from parity import Tolerance
from parity.engine.diagnosis.alignment import Alignment, align_layers, known_pairs, stateless
from parity.engine.diagnosis.recording import Localizer, Recording
from parity.engine.diagnosis.verdicts import AMPLIFICATION, LayerVerdict, first_divergence, settle
from parity.engine.diagnosis.verdicts import compare_call as judge

# -- align_layers ------------------------------------------------------------------------------


def kinds(*entries, root="Net"):
    """{path: (class name, built-in)} in definition order, the root first as the adapters give it."""
    return {"": (root, False), **{path: (name, builtin) for path, name, builtin in entries}}


def test_weights_pair_a_flat_conv_with_the_one_inside_a_block_of_the_same_path():
    # torchvision's features.0 is Conv2dNormActivation(conv, bn, act); mindcv's features.0 is the conv
    ms_kinds = kinds(
        ("features", "SequentialCell", True),
        ("features.0", "Conv2d", True),
        ("features.1", "BatchNorm2d", True),
        ("features.2", "ReLU", True),
    )
    torch_kinds = kinds(
        ("features", "Sequential", True),
        ("features.0", "Conv2dNormActivation", False),
        ("features.0.0", "Conv2d", True),
        ("features.0.1", "BatchNorm2d", True),
        ("features.0.2", "ReLU", True),
    )
    owners = [("features.0", "features.0.0"), ("features.1", "features.0.1")]
    known = known_pairs(ms_kinds, torch_kinds, owners)
    assert known == {"features": "features", "features.0": "features.0.0", "features.1": "features.0.1"}
    mapping = align_layers(ms_kinds, torch_kinds, known)
    assert mapping["features.0"] == "features.0.0" and mapping["features.1"] == "features.0.1"
    assert "features.0" not in mapping.values()  # the block stands for no MindSpore layer


def test_the_same_path_with_the_same_kind_comes_before_the_weights():
    # tied weights: MindSpore's lm_head shares the embedding's table, PyTorch names it once
    ms_kinds = kinds(("embed", "Embedding", True), ("lm_head", "Dense", True))
    torch_kinds = kinds(("embed", "Embedding", True), ("lm_head", "Linear", True))
    owners = [("lm_head", "embed"), ("embed", "embed")]
    assert known_pairs(ms_kinds, torch_kinds, owners) == {"embed": "embed", "lm_head": "lm_head"}


def test_the_same_path_pairs_a_leaf_with_a_leaf_of_another_kind_never_with_a_container():
    # a pooling written as another pooling is a fault at that place; a layer against a block is not one layer
    ms_kinds = kinds(("head", "Dense", True), ("pool", "AvgPool2d", True))
    torch_kinds = kinds(("head", "Sequential", True), ("head.0", "Linear", True), ("pool", "MaxPool2d", True))
    assert known_pairs(ms_kinds, torch_kinds, []) == {"pool": "pool"}


def test_align_keeps_known_pairs_and_pairs_their_parent():
    ms_kinds = kinds(("blk", "MSBlock", False), ("blk.dense", "Dense", True))
    torch_kinds = kinds(("layer", "Block", False), ("layer.proj", "Linear", True))
    assert align_layers(ms_kinds, torch_kinds, {"blk.dense": "layer.proj"}) == {
        "blk.dense": "layer.proj",
        "blk": "layer",
    }


def test_align_drops_known_pairs_naming_missing_layers():
    ms_kinds = kinds(("fc", "Dense", True))
    torch_kinds = kinds(("fc", "Linear", True))
    assert align_layers(ms_kinds, torch_kinds, {"fc": "gone", "gone": "fc"}) == {"fc": "fc"}


def test_align_leaves_a_parent_whose_children_disagree_unpaired():
    ms_kinds = kinds(("blk", "MSBlock", False), ("blk.a", "Dense", True), ("blk.b", "Dense", True))
    torch_kinds = kinds(("x", "Block", False), ("x.a", "Linear", True), ("y", "Block", False), ("y.b", "Linear", True))
    mapping = align_layers(ms_kinds, torch_kinds, {"blk.a": "x.a", "blk.b": "y.b"})
    assert "blk" not in mapping
    assert mapping == {"blk.a": "x.a", "blk.b": "y.b"}


def test_align_pairs_differently_named_siblings_by_structure():
    ms_kinds = kinds(("fc1", "Dense", True), ("act", "ReLU", True), ("fc2", "Dense", True))
    torch_kinds = kinds(("fc1", "Linear", True), ("relu", "ReLU", True), ("fc2", "Linear", True))
    mapping = align_layers(ms_kinds, torch_kinds, {"fc1": "fc1", "fc2": "fc2"})
    assert mapping == {"fc1": "fc1", "fc2": "fc2", "act": "relu"}


def test_align_pairs_sequential_cell_indices_with_ordered_dict_names():
    ms_kinds = kinds(("body", "SequentialCell", True), ("body.0", "Conv2d", True), ("body.1", "ReLU", True))
    torch_kinds = kinds(
        ("features", "Sequential", True), ("features.conv", "Conv2d", True), ("features.relu", "ReLU", True)
    )
    assert align_layers(ms_kinds, torch_kinds, {}) == {
        "body": "features",
        "body.0": "features.conv",
        "body.1": "features.relu",
    }


def test_align_counts_dense_and_linear_as_one_kind():
    # Unequal counts: only layers of the same kind are paired, so Dense must meet Linear.
    ms_kinds = kinds(("dense", "Dense", True))
    torch_kinds = kinds(("drop", "Dropout", True), ("proj", "Linear", True))
    assert align_layers(ms_kinds, torch_kinds, {}) == {"dense": "proj"}


def test_align_refuses_to_zip_built_in_layers_of_different_kinds():
    ms_kinds = kinds(("a", "ReLU", True), ("b", "Tanh", True))
    torch_kinds = kinds(("x", "Tanh", True), ("y", "Tanh", True))
    # Zipping would pair ReLU with Tanh: only the same-kind pairs, in order, remain.
    assert align_layers(ms_kinds, torch_kinds, {}) == {"b": "x"}


def test_align_zips_a_custom_layer_with_anything():
    ms_kinds = kinds(("a", "MyAct", False), ("b", "Tanh", True))
    torch_kinds = kinds(("x", "ReLU", True), ("y", "Tanh", True))
    assert align_layers(ms_kinds, torch_kinds, {}) == {"a": "x", "b": "y"}


def test_a_parent_pairs_with_the_layer_holding_the_same_paired_layers():
    # torchvision nests conv and norm in a block of their own where mindcv lists them
    ms_kinds = kinds(
        ("f", "SequentialCell", True),
        ("f.5", "Bottleneck", False),
        ("f.5.layers", "SequentialCell", True),
        ("f.5.layers.0", "Conv2d", True),
        ("f.5.layers.1", "BatchNorm2d", True),
        ("f.5.layers.2", "Conv2d", True),
    )
    torch_kinds = kinds(
        ("f", "Sequential", True),
        ("f.3", "InvertedResidual", False),
        ("f.3.block", "Sequential", True),
        ("f.3.block.0", "Conv2dNormActivation", False),
        ("f.3.block.0.0", "Conv2d", True),
        ("f.3.block.0.1", "BatchNorm2d", True),
        ("f.3.block.1", "Conv2dNormActivation", False),
        ("f.3.block.1.0", "Conv2d", True),
    )
    known = {"f.5.layers.0": "f.3.block.0.0", "f.5.layers.1": "f.3.block.0.1", "f.5.layers.2": "f.3.block.1.0"}
    mapping = align_layers(ms_kinds, torch_kinds, known)
    assert (mapping["f.5.layers"], mapping["f.5"], mapping["f"]) == ("f.3.block", "f.3", "f")


def test_align_pairs_nothing_twice():
    ms_kinds = kinds(
        ("a", "MSBlock", False),
        ("a.fc", "Dense", True),
        ("b", "MSBlock", False),
        ("b.fc", "Dense", True),
        ("head", "Dense", True),
    )
    torch_kinds = kinds(
        ("x", "Block", False), ("x.fc", "Linear", True), ("x.fc2", "Linear", True), ("head", "Linear", True)
    )
    mapping = align_layers(ms_kinds, torch_kinds, {"a.fc": "x.fc", "b.fc": "x.fc2", "head": "head"})
    assert len(set(mapping.values())) == len(mapping)
    # x holds what a and b hold together: neither stands for it (each holds half its weights)
    assert "a" not in mapping and "b" not in mapping


# -- judge -------------------------------------------------------------------------------------

TOL = Tolerance(0.0, 1e-3)
REF = np.array([3.0, 4.0])  # norm 5: an error of d on one element is a relative error of d / 5


def judged(in_diff, out_diff, noise=0.0, tol=TOL):
    ms_in, ms_out = REF + [in_diff, 0.0], REF + [out_diff, 0.0]
    return judge("forward", "fc", "fc", "Dense", "Linear", 0, [ms_in], [ms_out], [REF], [REF], tol, noise=noise)


def test_judge_agreeing_outputs_are_ok_up_to_a_margin_of_one():
    at_limit = judged(0.0, 0.5, tol=Tolerance(0.0, 0.5))
    assert at_limit.out_margin == 1.0 and at_limit.status == "ok"
    assert judged(0.0, 0.5000001, tol=Tolerance(0.0, 0.5)).status == "FAIL"


def test_judge_measures_relative_error_margin_and_greatest_difference():
    verdict = judged(0.05, 0.5)
    assert verdict.in_error == pytest.approx(0.05 / 5) and verdict.in_margin == pytest.approx(0.05 / 1e-3)
    assert verdict.out_error == pytest.approx(0.5 / 5) and verdict.out_margin == pytest.approx(0.5 / 1e-3)
    assert verdict.max_abs == pytest.approx(0.5)


def test_judge_blames_a_layer_fed_agreeing_inputs():
    assert judged(0.0, 0.01).status == "FAIL"


def test_judge_blames_a_layer_fed_differing_inputs_only_for_amplification():
    # in_error 0.01; out_error 0.08 is within AMPLIFICATION x 0.01, 0.12 is beyond it.
    assert AMPLIFICATION == 10.0
    assert judged(0.05, 0.4).status == "downstream"
    assert judged(0.05, 0.6).status == "FAIL"


def test_judge_adds_the_noise_floor_to_what_the_inputs_explain():
    verdict = judged(0.05, 0.6, noise=0.05)  # 0.12 <= 10 x 0.01 + 0.05
    assert verdict.status == "downstream" and verdict.noise == 0.05


def test_judge_an_output_of_another_shape_fails_infinitely():
    verdict = judge("forward", "fc", "fc", "Dense", "Linear", 0, [REF], [np.zeros(3)], [REF], [REF], TOL)
    assert verdict.out_margin == float("inf") and verdict.status == "FAIL"


# -- settle and first_divergence ---------------------------------------------------------------


def verdict(path, status="ok", *, call=0, in_margin=0.0, in_error=0.0, in_noise=0.0):
    return LayerVerdict(
        "forward",
        path,
        path,
        "Dense",
        "Linear",
        call,
        in_error,
        in_margin,
        0.0,
        0.0,
        0.0,
        status=status,
        in_noise=in_noise,
    )


def test_settle_a_container_whose_child_failed_only_contains_it():
    verdicts = [verdict("a.b.c", "FAIL"), verdict("a.b", "FAIL"), verdict("a", "FAIL")]
    settle(verdicts)
    assert [v.status for v in verdicts] == ["FAIL", "contains", "contains"]
    assert first_divergence(verdicts)[0] is verdicts[0]


def test_settle_a_sibling_with_a_longer_name_is_not_a_child():
    verdicts = [verdict("blk2.fc", "FAIL"), verdict("blk", "FAIL")]
    settle(verdicts)
    assert [v.status for v in verdicts] == ["FAIL", "FAIL"]


def test_settle_a_container_failing_with_agreeing_children_diverges_in_its_own_code():
    verdicts = [verdict("blk.fc"), verdict("blk.act"), verdict("blk", "FAIL")]
    settle(verdicts)
    assert verdicts[-1].status == "FAIL"
    where = "in the code of 'blk' between its sub-layers (after 'blk.act')"
    assert verdicts[-1].note == where
    assert first_divergence(verdicts) == (verdicts[-1], where)


def test_settle_names_the_first_sub_layer_fed_a_differing_input():
    verdicts = [
        verdict("blk.fc"),
        verdict("blk.act", "downstream", in_margin=5.0, in_error=0.1),
        verdict("blk.out", "downstream", in_margin=5.0, in_error=0.1),
        verdict("blk", "FAIL"),
    ]
    settle(verdicts)
    assert verdicts[-1].note == "in the code of 'blk' between its sub-layers (after 'blk.fc', before 'blk.act')"


def test_first_divergence_names_the_first_fail_with_its_types_and_call():
    verdicts = [verdict("fc"), verdict("fc", "FAIL", call=1), verdict("head", "FAIL")]
    assert first_divergence(verdicts) == (verdicts[1], "'fc (call 2)' (Dense <-> Linear)")


def test_first_divergence_without_a_fail_points_between_two_layers():
    verdicts = [verdict("A"), verdict("B", "downstream", in_margin=3.0, in_error=0.01), verdict("C", "downstream")]
    assert first_divergence(verdicts) == (verdicts[1], "between 'A' and 'B' (functional code, no sub-layer)")


def test_first_divergence_before_every_layer_is_in_the_inputs():
    verdicts = [verdict("A", in_margin=3.0, in_error=0.01)]
    assert first_divergence(verdicts) == (verdicts[0], "between the inputs and 'A' (functional code, no sub-layer)")


def test_first_divergence_ignores_input_errors_within_their_noise_floor():
    verdicts = [verdict("A"), verdict("B", in_margin=3.0, in_error=0.01, in_noise=0.02)]
    assert first_divergence(verdicts) == (None, "")


# -- Recording ---------------------------------------------------------------------------------


def arrays(*values):
    return [np.asarray(v, np.float32) for v in values]


def test_recording_numbers_the_calls_of_each_path():
    recording = Recording()
    for path in ("act", "fc", "act"):
        recording.forward(path, "ReLU", arrays(1), arrays(2))
    assert [(c.path, c.call) for c in recording.calls] == [("act", 0), ("fc", 0), ("act", 1)]
    assert recording.get("act", 1) is recording.calls[2]
    assert recording.get("act", 2) is None


def test_recording_backward_with_a_call_number_and_unmatched_paths():
    recording = Recording()
    recording.forward("act", "ReLU", arrays(1), arrays(2))
    recording.forward("act", "ReLU", arrays(3), arrays(4))
    recording.backward("act", arrays(10), arrays(20), call=0)
    recording.backward("fc", arrays(30), arrays(40), call=0)
    assert [(c.path, c.call) for c in recording.backward_order] == [("act", 0)]
    assert recording.get("act", 0).grad_inputs == arrays(10)
    assert recording.get("act", 1).grad_inputs is None
    assert recording.unmatched == ["fc"]


def test_recording_drops_the_arrays_once_its_callbacks_have_seen_them():
    seen = []
    recording = Recording(
        on_forward=lambda c: seen.append((c.inputs, c.outputs)),
        on_backward=lambda c: seen.append((c.grad_outputs, c.grad_inputs)),
    )
    recording.forward("fc", "Dense", arrays(1), arrays(2))
    recording.backward("fc", arrays(3), arrays(4), call=0)
    assert seen == [(arrays(1), arrays(2)), (arrays(4), arrays(3))]
    call = recording.calls[0]
    assert (call.inputs, call.outputs, call.grad_inputs, call.grad_outputs) == ([], [], [], [])


def test_recording_without_callbacks_keeps_the_arrays():
    recording = Recording()
    recording.forward("fc", "Dense", arrays(1), arrays(2))
    assert recording.calls[0].outputs == arrays(2)


# -- Localizer ---------------------------------------------------------------------------------


def torch_recorded(*paths):
    recording = Recording()
    for path in paths:
        recording.forward(path, "Linear", [REF.copy()], [REF.copy()])
    return recording


def test_localizer_releases_a_torch_call_once_compared():
    torch_recording = torch_recorded("t")
    asked = []
    localizer = Localizer(
        torch_recording, {"m": "t", "m2": "t"}.get, lambda names, dtype: asked.append((names, dtype)) or TOL
    )
    ms_recording = Recording(localizer.on_forward, localizer.on_backward)
    ms_recording.forward("m", "Dense", [REF.copy()], [REF + [0.1, 0.0]])
    assert torch_recording.get("t", 0).inputs is None and torch_recording.get("t", 0).outputs is None
    assert asked == [(("t", "m"), "float64")]
    ms_recording.forward("m2", "Dense", [REF.copy()], [REF.copy()])  # aligned with the same torch call
    first, second = localizer.forward
    assert (first.path, first.ms_path, first.torch_type, first.status) == ("t", "m", "Linear", "FAIL")
    assert (second.path, second.ms_path, second.status) == ("t", "m2", "unaligned")


def test_localizer_a_layer_with_no_counterpart_is_unaligned_under_its_own_name():
    localizer = Localizer(torch_recorded("t"), {}.get, lambda names, dtype: TOL)
    Recording(localizer.on_forward).forward("extra", "Dropout", [REF], [REF])
    assert [(v.path, v.ms_path, v.status) for v in localizer.forward] == [("extra", "extra", "unaligned")]


def test_localizer_backward_compares_gradients_in_and_out():
    torch_recording = torch_recorded("t")
    torch_recording.backward("t", [REF.copy()], [REF.copy()], call=0)  # grad_inputs, grad_outputs
    localizer = Localizer(torch_recording, {"m": "t"}.get, lambda names, dtype: TOL)
    ms_recording = Recording(localizer.on_forward, localizer.on_backward)
    ms_recording.forward("m", "Dense", [REF.copy()], [REF.copy()])
    ms_recording.backward("m", [REF + [0.5, 0.0]], [REF.copy()], call=0)  # the gradient flowing out differs
    assert [v.status for v in localizer.forward] == ["ok"]
    (back,) = localizer.backward
    assert (back.direction, back.status, back.in_error) == ("backward", "FAIL", 0.0)
    assert back.out_error == pytest.approx(0.5 / 5)
    assert torch_recording.get("t", 0).grad_inputs is None


def test_localizer_records_float64_noise_floors_and_uses_them():
    torch_recording = Recording()
    torch_recording.forward("t", "Linear", [REF + [0.2, 0.0]], [REF + [0.0, 0.5]])  # float32, off float64
    localizer = Localizer(torch_recording, {"m": "t"}.get, lambda names, dtype: TOL)
    recording64 = localizer.float64_recording()
    recording64.forward("t", "Linear", [REF.copy()], [REF.copy()])
    factor = localizer.noise_factor
    assert localizer.noise[("forward", "t", 0)] == pytest.approx((factor * 0.5 / 5, factor * 0.2 / 5))
    assert (recording64.calls[0].inputs, recording64.calls[0].outputs) == ([], [])
    # MindSpore as far off the float32 PyTorch output as the floor allows: downstream, not FAIL.
    Recording(localizer.on_forward).forward("m", "Dense", [REF + [0.2, 0.0]], [REF + [0.0, 0.5] + [0.5, 0.0]])
    (verdict,) = localizer.forward
    assert verdict.noise == pytest.approx(factor * 0.1) and verdict.in_noise == pytest.approx(factor * 0.04)
    assert verdict.status == "downstream"


# -- parameter-free layers paired by their place among the calls ----------------------------------

# A block whose GELU is ``act`` in MindSpore and ``mlp.1`` in PyTorch, between two Linears the weights pair.
MS_BLOCK = kinds(("fc1", "Dense", True), ("drop", "Dropout", True), ("act", "GELU", True), ("fc2", "Dense", True))
TORCH_BLOCK = kinds(
    ("mlp", "Sequential", True),
    ("mlp.0", "Linear", True),
    ("mlp.1", "GELU", True),
    ("mlp.2", "Linear", True),
)
WEIGHTS = (["fc1.weight", "fc2.weight"], ["mlp.0.weight", "mlp.2.weight"])


def by_place(ms_kinds, torch_kinds, mapping, weights=WEIGHTS):
    return Alignment(
        mapping, ms_kinds, torch_kinds, stateless(ms_kinds, weights[0]), stateless(torch_kinds, weights[1])
    )


def localized(alignment, torch_calls, ms_calls):
    """The forward verdicts of MindSpore's ``ms_calls`` ((path, type, output)) against PyTorch's."""
    torch_recording = Recording()
    for path, kind, out in torch_calls:
        torch_recording.forward(path, kind, [REF.copy()], [np.asarray(out, float)])
    localizer = Localizer(torch_recording, alignment, lambda names, dtype: TOL)
    ms_recording = Recording(localizer.on_forward)
    for path, kind, out in ms_calls:
        ms_recording.forward(path, kind, [REF.copy()], [np.asarray(out, float)])
    return [(v.ms_path, v.path, v.status) for v in localizer.forward]


def test_stateless_layers_hold_no_tensor_nor_have_a_sub_layer_that_does():
    found = stateless(TORCH_BLOCK, ["mlp.0.weight", "mlp.2.bias"])
    assert found == {"mlp.1"}  # "mlp" holds its Linears' tensors


def test_a_parameter_free_layer_pairs_by_its_place_between_paired_neighbours():
    alignment = by_place(MS_BLOCK, TORCH_BLOCK, {"fc1": "mlp.0", "fc2": "mlp.2"})
    torch_calls = [
        ("mlp.0", "Linear", REF),
        ("mlp.1", "GELU", REF),
        ("mlp.2", "Linear", REF),
        ("mlp", "Sequential", REF),
    ]
    ms_calls = [("fc1", "Dense", REF), ("drop", "Dropout", REF), ("act", "GELU", REF + [0.5, 0.0])]
    ms_calls += [("fc2", "Dense", REF)]
    assert localized(alignment, torch_calls, ms_calls) == [
        ("fc1", "mlp.0", "ok"),
        ("drop", "drop", "unaligned"),  # PyTorch has no Dropout there: not paired with the GELU
        ("act", "mlp.1", "FAIL"),
        ("fc2", "mlp.2", "ok"),
    ]
    assert alignment("act") == "mlp.1" and alignment("drop") is None


def test_calls_after_the_last_paired_call_pair_at_the_end():
    ms_kinds = kinds(("fc", "Dense", True), ("act", "Tanh", True))
    torch_kinds = kinds(("fc", "Linear", True), ("head", "Sequential", True), ("head.0", "Tanh", True))
    alignment = by_place(ms_kinds, torch_kinds, {"fc": "fc"}, (["fc.weight"], ["fc.weight"]))
    torch_calls = [("fc", "Linear", REF), ("head.0", "Tanh", REF), ("head", "Sequential", REF)]
    verdicts = localized(alignment, torch_calls, [("fc", "Dense", REF), ("act", "Tanh", REF)])
    assert verdicts == [("fc", "fc", "ok"), ("act", "head.0", "ok")]  # never the container "head"


def test_framework_layers_of_other_kinds_pair_only_alone_between_neighbours_with_one_shape():
    # a Sigmoid written for a Tanh is a fault at that place
    ms_kinds = kinds(("fc1", "Dense", True), ("act", "Sigmoid", True), ("fc2", "Dense", True))
    torch_kinds = kinds(("fc1", "Linear", True), ("tanh", "Tanh", True), ("fc2", "Linear", True))
    weights = (["fc1.weight", "fc2.weight"], ["fc1.weight", "fc2.weight"])
    torch_calls = [("fc1", "Linear", REF), ("tanh", "Tanh", REF), ("fc2", "Linear", REF)]
    ms_calls = [("fc1", "Dense", REF), ("act", "Sigmoid", REF + [1.0, 0.0]), ("fc2", "Dense", REF)]
    alignment = by_place(ms_kinds, torch_kinds, {"fc1": "fc1", "fc2": "fc2"}, weights)
    assert localized(alignment, torch_calls, ms_calls)[1] == ("act", "tanh", "FAIL")
    # another shape out, or a layer of the model's own (not the framework's): not one layer
    alignment = by_place(ms_kinds, torch_kinds, {"fc1": "fc1", "fc2": "fc2"}, weights)
    assert (
        localized(alignment, torch_calls, ms_calls[:1] + [("act", "Sigmoid", np.ones(3))] + ms_calls[2:])[1][1] == "act"
    )
    torch_kinds["tanh"] = ("MyTanh", False)
    alignment = by_place(ms_kinds, torch_kinds, {"fc1": "fc1", "fc2": "fc2"}, weights)
    assert localized(alignment, torch_calls, ms_calls)[1][1] == "act"


def test_a_leaf_inside_another_unpaired_layer_is_not_paired_with_a_layer_of_another_kind():
    # mindcv's Swish (x * sigmoid(x), its Sigmoid a sub-layer) against torchvision's SiLU
    ms_kinds = kinds(("conv", "Conv2d", True), ("act", "Swish", False), ("act.sigmoid", "Sigmoid", True))
    ms_kinds.update(kinds(("head", "Dense", True)))
    torch_kinds = kinds(("conv", "Conv2d", True), ("silu", "SiLU", True), ("head", "Linear", True))
    weights = (["conv.weight", "head.weight"], ["conv.weight", "head.weight"])
    alignment = by_place(ms_kinds, torch_kinds, {"conv": "conv", "head": "head"}, weights)
    torch_calls = [("conv", "Conv2d", REF), ("silu", "SiLU", REF), ("head", "Linear", REF)]
    ms_calls = [("conv", "Conv2d", REF), ("act.sigmoid", "Sigmoid", REF * 0.1), ("act", "Swish", REF)]
    ms_calls += [("head", "Dense", REF)]
    verdicts = localized(alignment, torch_calls, ms_calls)
    assert [v[:2] for v in verdicts[1:3]] == [("act.sigmoid", "act.sigmoid"), ("act", "act")]  # unpaired


def test_a_layer_paired_already_is_never_paired_by_place():
    ms_kinds = kinds(("fc1", "Dense", True), ("act", "ReLU", True), ("fc2", "Dense", True), ("relu", "ReLU", True))
    torch_kinds = kinds(("fc1", "Linear", True), ("relu", "ReLU", True), ("fc2", "Linear", True))
    weights = (["fc1.weight", "fc2.weight"], ["fc1.weight", "fc2.weight"])
    alignment = by_place(ms_kinds, torch_kinds, {"fc1": "fc1", "fc2": "fc2", "relu": "relu"}, weights)
    torch_calls = [("fc1", "Linear", REF), ("relu", "ReLU", REF), ("fc2", "Linear", REF)]
    ms_calls = [("fc1", "Dense", REF), ("act", "ReLU", REF), ("fc2", "Dense", REF), ("relu", "ReLU", REF)]
    assert localized(alignment, torch_calls, ms_calls)[1] == ("act", "act", "unaligned")


# -- one layout of the same values --------------------------------------------------------------


def test_outputs_in_one_layout_are_compared_through_it():
    from parity.engine.diagnosis.verdicts import _measure, pair_metrics

    flat, pooled = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3, 1, 1)
    error, margin, _, _ = _measure([flat], [pooled], Tolerance(1e-5, 1e-5), pair_metrics)
    assert error == 0.0 and margin == 0.0
    other = np.arange(6.0).reshape(3, 2)  # as many elements, another arrangement: shapes differ
    assert _measure([other], [pooled], Tolerance(1e-5, 1e-5), pair_metrics)[1] == float("inf")


def test_a_layer_holding_no_paired_layer_does_not_stand_for_one_holding_them():
    # mindcv's EfficientNet stem: conv, bn and a Swish side by side; torchvision's in one block
    ms_kinds = kinds(
        ("features", "SequentialCell", True),
        ("features.0", "Conv2d", True),
        ("features.1", "BatchNorm2d", True),
        ("features.2", "Swish", False),
        ("features.2.sigmoid", "Sigmoid", True),
    )
    torch_kinds = kinds(
        ("features", "Sequential", True),
        ("features.0", "Conv2dNormActivation", False),
        ("features.0.0", "Conv2d", True),
        ("features.0.1", "BatchNorm2d", True),
        ("features.0.2", "SiLU", True),
    )
    owners = [("features.0", "features.0.0"), ("features.1", "features.0.1")]
    mapping = align_layers(ms_kinds, torch_kinds, known_pairs(ms_kinds, torch_kinds, owners))
    assert mapping["features.0"] == "features.0.0" and mapping["features.1"] == "features.0.1"
    assert "features.2" not in mapping  # not the whole block: it holds neither the conv nor the norm
