"""``torch.einsum`` in MindSpore, as transposes, reshapes, sums and batched matrix products.

MindSpore 2.10 has ``ops.einsum``, but its ``Einsum`` kernel is not registered on CPU (``RuntimeError``
on any equation), so the translation writes the equation out: one operand at a time from the left,
each pair contracted by one ``ops.matmul`` over ``(batch, free, contracted)`` layouts, which is also
how PyTorch computes it (``torch.einsum`` contracts left to right through ``bmm``). Labels that
only one operand holds and nothing later reads are summed first; ``...`` stands for the leading
dimensions, broadcast as PyTorch broadcasts them. A label repeated within one operand (a diagonal,
``"ii->i"``) is refused. Where nothing is summed (an outer product) the pair is multiplied
elementwise: MindSpore 2.10's matmul computes ``(n, m, 1) @ (n, 1, p)`` but its backward fails
(``MatMulExt``: ``shape1[-1] must be equal to shape2[-2]``).
"""

from __future__ import annotations

import math
import string
from typing import List, Sequence, Tuple, Union

from mindspore import Tensor, ops

__all__ = ["einsum"]

_ELLIPSIS_LABELS = "".join(c for c in string.ascii_letters[::-1])  # drawn from the end, away from the user's


def einsum(equation: str, *operands: Union[Tensor, Sequence[Tensor]]) -> Tensor:
    """``torch.einsum(equation, *operands)`` (or ``einsum(equation, [operands])``)."""
    tensors: Sequence[Tensor] = operands
    if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
        tensors = tuple(operands[0])
    inputs, output = _parse(equation.replace(" ", ""), [op.ndim for op in tensors])
    current, labels = tensors[0], inputs[0]
    current, labels = _reduce(current, labels, set("".join(inputs[1:])) | set(output))
    for index in range(1, len(tensors)):
        later = set("".join(inputs[index + 1 :])) | set(output)
        other, other_labels = _reduce(tensors[index], inputs[index], later | set(labels))
        current, labels = _contract(current, labels, other, other_labels, later)
    missing = set(labels) - set(output)
    if missing:
        current, labels = _sum(current, labels, missing)
    return ops.permute(current, tuple(labels.index(c) for c in output)) if labels != output else current


def _parse(equation: str, ranks: Sequence[int]) -> Tuple[List[str], str]:
    left, arrow, right = equation.partition("->")
    inputs = left.split(",")
    if len(inputs) != len(ranks):
        raise TypeError(f"einsum {equation!r} names {len(inputs)} operands, {len(ranks)} given")
    used = set(left.replace(".", "").replace(",", "")) | set(right.replace(".", ""))
    spare = [c for c in _ELLIPSIS_LABELS if c not in used]
    widest = max((rank - len(term.replace("...", "")) for term, rank in zip(inputs, ranks) if "..." in term), default=0)
    ellipsis = "".join(spare[:widest])
    expanded = []
    for term, rank in zip(inputs, ranks):
        if "..." in term:
            term = term.replace("...", ellipsis[widest - (rank - len(term.replace("...", ""))) :])
        if len(term) != rank:
            raise TypeError(f"einsum {equation!r}: the term {term!r} does not fit an operand of rank {rank}")
        if len(set(term)) != len(term):
            raise TypeError(f"einsum {equation!r}: a label repeated within one operand (a diagonal) is not translated")
        expanded.append(term)
    if arrow:
        output = right.replace("...", ellipsis)
    else:  # implicit: the ellipsis, then the labels met once, in alphabetical order
        counts = {c: "".join(inputs).count(c) for c in set("".join(inputs).replace(".", ""))}
        output = ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1))
    return expanded, output


def _sum(tensor, labels: str, which) -> Tuple[object, str]:
    axes = tuple(i for i, c in enumerate(labels) if c in which)
    return ops.sum(tensor, axes), "".join(c for c in labels if c not in which)


def _reduce(tensor, labels: str, needed) -> Tuple[object, str]:
    """Sums the labels nothing after this operand reads."""
    unused = set(labels) - set(needed)
    return _sum(tensor, labels, unused) if unused else (tensor, labels)


def _size(tensor, labels: str, group: str) -> Tuple[int, ...]:
    return tuple(tensor.shape[labels.index(c)] for c in group)


def _contract(a, a_labels: str, b, b_labels: str, later) -> Tuple[object, str]:
    """``a`` and ``b`` as one tensor over the labels either holds that ``later`` reads."""
    shared = [c for c in a_labels if c in b_labels]
    batch = "".join(c for c in shared if c in later)
    summed = "".join(c for c in shared if c not in later)
    a_free = "".join(c for c in a_labels if c not in b_labels)
    b_free = "".join(c for c in b_labels if c not in a_labels)
    sizes = {
        c: max(_size(a, a_labels, c) + _size(b, b_labels, c))
        if c in a_labels and c in b_labels
        else (_size(a, a_labels, c) if c in a_labels else _size(b, b_labels, c))[0]
        for c in a_labels + b_labels
    }
    left = _layout(a, a_labels, batch + a_free + summed, sizes)
    right = _layout(b, b_labels, batch + summed + b_free, sizes)
    n, m, k, p = (math.prod(sizes[c] for c in group) for group in (batch, a_free, summed, b_free))
    left, right = ops.reshape(left, (n, m, k)), ops.reshape(right, (n, k, p))
    # nothing summed: a broadcast product (MindSpore's matmul backward fails on an inner size of 1)
    product = left * right if not summed else ops.matmul(left, right)
    labels = batch + a_free + b_free
    return ops.reshape(product, tuple(sizes[c] for c in labels)), labels


def _layout(tensor, labels: str, order: str, sizes) -> object:
    """``tensor`` permuted to ``order``, its size-1 batch dimensions broadcast to the other operand's."""
    tensor = ops.permute(tensor, tuple(labels.index(c) for c in order)) if labels != order else tensor
    wanted = tuple(sizes[c] for c in order)
    return ops.broadcast_to(tensor, wanted) if tuple(tensor.shape) != wanted else tensor
