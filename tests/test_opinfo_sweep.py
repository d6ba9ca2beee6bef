"""The OpInfo sweep (benchmarks/opinfo_sweep.py) on a dozen common operators: each translates and
passes ``check`` (with gradients), and refusals land in the category that names why."""

import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("expecttest")  # PyTorch's op_db imports it

_PATH = Path(__file__).resolve().parents[1] / "benchmarks" / "opinfo_sweep.py"
_spec = importlib.util.spec_from_file_location("opinfo_sweep", _PATH)
assert _spec is not None and _spec.loader is not None
sweep = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sweep)

COMMON = [
    "add",
    "mul",
    "matmul",
    "softmax",
    "nn.functional.relu",
    "sum",
    "mean",
    "transpose",
    "cat",
    "exp",
    "tanh",
    "sigmoid",
]
# parity.translation.calls.elementwise: one-to-one MindSpore operators, each passing on PyTorch's samples.
ELEMENTWISE = ["floor", "ceil", "trunc", "sign", "acos", "atanh", "cosh", "tan", "expm1", "log1p", "log10"]
ELEMENTWISE += [
    "true_divide",
    "reciprocal",
    "erfc",
    "lgamma",
    "digamma",
    "isnan",
    "isfinite",
    "atan2",
    "hypot",
    "logaddexp",
]

# Element-wise math with arguments, activations, statistics, sorting, linear algebra and views
# (pointwise, activations, reductions, ordering, linalg, views), pools, norms and losses, each with a variant where op_db has one.
# Not sort and linalg.slogdet: their first samples' checks move with the host's rounding (the full sweep has them).
ARGUMENTS = [
    ("round", "decimals_3"),
    ("round", "decimals_neg_3"),
    ("div", "floor_rounding"),
    ("div", "trunc_rounding"),
    ("remainder", ""),
    ("clamp_min", ""),
    ("addcdiv", ""),
    ("nn.functional.hardtanh", ""),
    ("nn.functional.softmin", "with_dtype"),
    ("nn.functional.selu", ""),
    ("nn.functional.mish", ""),
    ("std", "unbiased"),
    ("var_mean", ""),
    ("logsumexp", ""),
    ("prod", ""),
    ("median", ""),
    ("mm", ""),
    ("addmv", ""),
    ("tensordot", ""),
    ("linalg.norm", "subgradients_at_zero"),
    ("cdist", ""),
    ("tensor_split", ""),
    ("diag_embed", ""),
    ("unfold", ""),
    ("block_diag", ""),
    ("mT", ""),
    ("nn.functional.layer_norm", ""),
    ("nn.functional.interpolate", "area"),
    ("nn.functional.avg_pool2d", ""),
    ("nn.functional.avg_pool3d", ""),
    ("nn.functional.adaptive_avg_pool1d", ""),
    ("nn.functional.cross_entropy", ""),
    ("nn.functional.binary_cross_entropy_with_logits", ""),
    ("nn.functional.kl_div", ""),
    ("nn.functional.local_response_norm", ""),
    ("linalg.matrix_power", ""),
    ("quantile", ""),
    ("cov", ""),
    ("trapezoid", ""),
    ("angle", ""),
    ("fft.fftshift", ""),
]
# Composed where MindSpore has no one-to-one operator (numerics, transposed, spectral, decompositions, sampling).
COMPOSED = [
    ("erfinv", ""),
    ("special.erfcx", ""),
    ("mode", ""),
    ("gradient", ""),
    ("slice", ""),
    ("torch.ops.aten._safe_softmax.default", ""),
    ("nn.functional.conv_transpose2d", ""),
    ("fft.rfft", ""),
    ("fft.ifft", ""),
    ("triangular_solve", ""),
    ("linalg.eigvalsh", ""),
    ("nn.functional.grid_sample", ""),
    ("polar", ""),
]
# The first sample has nothing to compare (__rpow__: all NaN; nonzero: empty) or gives a ZeroTensor gradient (sgn).
LATER_SAMPLE = ["__rpow__", "nonzero", "sgn"]


@pytest.fixture(scope="module")
def ops():
    names = COMMON + ELEMENTWISE + [name for name, _ in ARGUMENTS + COMPOSED] + LATER_SAMPLE
    names += ["geqrf", "special.bessel_j0", "bernoulli", "nn.functional.soft_margin_loss"]
    return {(op.name, op.variant_test_name): op for op in sweep.op_db(names)}


@pytest.mark.parametrize("name", COMMON + ELEMENTWISE)
def test_common_op_translates_and_passes(ops, name):
    record = sweep.run_op(ops[(name, "")], timeout=60)
    assert record["category"] == "passed", record


@pytest.mark.parametrize("name, variant", ARGUMENTS, ids=lambda v: v or "-")
def test_op_with_arguments_translates_and_passes(ops, name, variant):
    record = sweep.run_op(ops[(name, variant)], timeout=60)
    assert record["category"] == "passed", record


@pytest.mark.parametrize("name, variant", COMPOSED, ids=lambda v: v or "-")
def test_composed_op_translates_and_passes(ops, name, variant):
    record = sweep.run_op(ops[(name, variant)], timeout=60)
    assert record["category"] == "passed", record


@pytest.mark.parametrize("name", LATER_SAMPLE)
def test_a_sample_with_nothing_to_compare_gives_way_to_the_next(ops, name):
    record = sweep.run_op(ops[(name, "")], timeout=60)
    assert record["category"] == "passed", record
    assert record["sample"] > 0 or name == "sgn", record


def test_a_sample_pytorch_refuses_is_skipped_and_the_refusal_named(ops):
    record = sweep.run_op(ops[("nn.functional.soft_margin_loss", "")], timeout=60)
    assert record["category"] == "unusable", record
    assert "PyTorch refuses the sample" in record["reason"] and "not differentiable" in record["reason"]


def test_a_random_op_is_its_own_category_outside_the_share(ops):
    record = sweep.run_op(ops[("bernoulli", "")], timeout=60)
    assert record["category"] == "random", record
    records = [
        {"op": "add", "variant": "", "grads": True, "category": "passed", "reason": ""},
        {"op": "bernoulli", "variant": "", "grads": False, "category": "random", "reason": record["reason"]},
    ]
    text = sweep.table(records, {"torch": "t", "mindspore": "m", "seconds": 1.0})
    assert "| **passed, of those MindSpore computes on the CPU** | 1 | **100.0%** |" in text
    assert "(`random`) | 1 | 50.0% of all |" in text


def test_asking_for_more_samples_than_an_op_has_still_passes(ops):
    record = sweep.run_op(ops[("exp", "")], n_samples=1000, timeout=120)
    assert record["category"] == "passed", record


def test_an_op_the_translator_does_not_know_is_not_translated(ops):
    record = sweep.run_op(ops[("geqrf", "")], timeout=60)
    assert record["category"] == "not_translated", record
    assert "torch.geqrf" in record["reason"]


def test_an_op_mindspore_lacks_is_no_counterpart(ops):
    record = sweep.run_op(ops[("special.bessel_j0", "")], timeout=60)
    assert record["category"] == "no_counterpart", record


def test_an_op_without_a_cpu_backward_kernel_is_no_cpu_kernel():
    cholesky = sweep.op_db(["linalg.cholesky"])[0]
    record = sweep.run_op(cholesky, timeout=60)
    assert record["category"] == "no_cpu_kernel", record
    assert "CholeskyGrad" in record["reason"]


def test_refusal_messages_are_classified():
    kernel = "MindSpore 2.10.0 has no kernel Embedding on this device (raised during forward: ...)"
    assert sweep.classify_refusal(kernel)[0] == "no_cpu_kernel"
    assert sweep.classify_refusal("momentum=None has no MindSpore counterpart")[0] == "no_counterpart"


def test_the_table_states_the_shares():
    records = [
        {"op": "add", "variant": "", "grads": True, "category": "passed", "reason": ""},
        {"op": "erfinv", "variant": "", "grads": True, "category": "not_translated", "reason": "torch.erfinv"},
    ]
    text = sweep.table(records, {"torch": "t", "mindspore": "m", "seconds": 1.0})
    assert "| passed | 1 | 50.0% of usable |" in text
    assert "| `erfinv` |  | yes | not_translated | torch.erfinv |" in text


def test_module_kinds_are_swept():
    kinds = {info.name: info for info in sweep.module_db(["nn.Linear", "nn.GELU", "nn.SoftMarginLoss"])}
    assert sweep.run_module(kinds["nn.Linear"], timeout=60)["category"] == "passed"
    assert sweep.run_module(kinds["nn.GELU"], timeout=60)["category"] == "passed"
    assert sweep.run_module(kinds["nn.SoftMarginLoss"], timeout=60)["category"] == "no_cpu_kernel"
