"""Which layer of one side is which of the other: MindSpore layer paths paired with PyTorch's
(:func:`align_layers`), parameter-free layers paired by their place among the calls
(:class:`Alignment`), and the tensors of one layer call paired by argument name where either side
was given keywords (:func:`by_name`)."""

from __future__ import annotations

from typing import AbstractSet, Any, Dict, FrozenSet, Iterable, List, Optional, Sequence, Tuple

__all__ = ["Alignment", "align_layers", "by_name", "known_pairs", "stateless"]


def by_name(ms: Sequence, ms_names: Optional[Sequence[str]], ref: Sequence, ref_names: Optional[Sequence[str]]):
    """The tensors of one layer call's two sides to compare, paired by name, for a call that
    either side gave keyword arguments: tensors are named by argument (``hidden_states``,
    ``position_embeddings[0]``...; a positional argument by its parameter's name), the names
    both sides have are compared in PyTorch's order, and a name one side alone has
    (transformers' ``position_ids``, ``cache_position``) is not. By position where a side has no
    names or the two share none."""
    ms_named = dict(zip(ms_names or (), ms))
    common = [name for name in ref_names or () if name in ms_named]
    if not common:
        return ms, ref
    ref_named = dict(zip(ref_names or (), ref))
    return [ms_named[name] for name in common], [ref_named[name] for name in common]


# mindspore.nn classes named differently from their torch.nn counterparts (lower case).
_SAME_KIND = {
    "dense": "linear",
    "sequentialcell": "sequential",
    "celllist": "modulelist",
    "celldict": "moduledict",
    "conv1dtranspose": "convtranspose1d",
    "conv2dtranspose": "convtranspose2d",
    "conv3dtranspose": "convtranspose3d",
    "hsigmoid": "hardsigmoid",
    "hswish": "hardswish",
    "hshrink": "hardshrink",
    "softshrink": "softshrink",
    "fastgelu": "gelu",
    "logsoftmax": "logsoftmax",
}


def _kind(ms_name: str) -> str:
    name = ms_name.lower()
    return _SAME_KIND.get(name, name)


def known_pairs(
    ms_kinds: Dict[str, Tuple[str, bool]],
    torch_kinds: Dict[str, Tuple[str, bool]],
    owners: Sequence[Tuple[str, str]],
) -> Dict[str, str]:
    """The layers :func:`align_layers` starts from, MindSpore path -> PyTorch path: first the
    paths both sides have with layers of the same kind (where the paired weights under them agree:
    two Sequentials at ``features.7`` of models indexed differently are not one); then the layers that own paired weights
    (``owners``: (MindSpore layer, PyTorch layer) of each weight pair, in order); then the paths
    both sides have whose layers are both containers or both leaves (a layer of another kind at
    the same place may be the fault: a Sigmoid written for a Tanh). The weights come before a path that merely repeats:
    torchvision's ``features.0`` is a conv-norm-activation block where mindcv's ``features.0`` is
    the convolution inside it, and the convolution's weight pairs the two convolutions."""
    containers = ({_parent(p) for p in ms_kinds if p}, {_parent(p) for p in torch_kinds if p})
    common = [path for path in ms_kinds if path and path in torch_kinds]
    placed = [(m, t) for m, t in owners if m in ms_kinds and t in torch_kinds]
    known = {path: path for path in common if _same(ms_kinds[path], torch_kinds[path]) and _owners_agree(path, placed)}
    taken = set(known.values())
    for m, t in owners:
        if m in ms_kinds and t in torch_kinds and m not in known and t not in taken:
            known[m] = t
            taken.add(t)
    for path in common:  # a layer of another kind at the same place may be the fault itself (Sigmoid for Tanh)
        if path not in known and path not in taken and (path in containers[0]) == (path in containers[1]):
            if _owners_agree(path, placed):
                known[path] = path
                taken.add(path)
    return known


def _under(path: str, scope: str) -> bool:
    return not scope or path == scope or path.startswith(scope + ".")


def _owners_agree(path: str, owners: Sequence[Tuple[str, str]]) -> bool:
    """Whether the same path may pair: where paired weights lie under it on both sides, some pair
    lies under it on both (mindcv's ``features.7`` is torchvision's ``features.5``: their weights
    say so, the index does not); a path with no paired weight under it asks its parent."""
    while True:
        ms_side = [(m, t) for m, t in owners if _under(m, path)]
        torch_side = [(m, t) for m, t in owners if _under(t, path)]
        if ms_side and torch_side:  # one pair inside on both sides is enough: a tied weight has owners elsewhere too
            return any(_under(t, path) for _, t in ms_side)
        if ms_side or torch_side or not path:
            return True  # weights under it on one side only: nothing to say against the path
        path = _parent(path)


def _same(ms_kind: Tuple[str, bool], torch_kind: Tuple[str, bool]) -> bool:
    return _kind(ms_kind[0]) == torch_kind[0].lower()


def _fits(m: str, t: str, ms_kinds, torch_kinds, containers) -> bool:
    """Whether MindSpore's layer ``m`` may stand for PyTorch's ``t``: both containers or both
    leaves, and not two framework layers of different kinds."""
    if (m in containers[0]) != (t in containers[1]):
        return False
    return _same(ms_kinds[m], torch_kinds[t]) or not (ms_kinds[m][1] and torch_kinds[t][1])


def align_layers(
    ms_kinds: Dict[str, Tuple[str, bool]], torch_kinds: Dict[str, Tuple[str, bool]], known: Dict[str, str]
) -> Dict[str, str]:
    """MindSpore layer path -> PyTorch layer path.

    ``known`` holds what names and weights already paired. Parents of paired layers are paired
    too, when all their paired children lie under one PyTorch layer. Then, under each paired
    parent (the roots included, and a wrapper whose paired children all lie under one layer on the
    other side), the children still unpaired are paired by structure, in definition order: all of
    them in order when both sides have as many, each pair is two containers or two leaves, and no
    two built-in layers of different kinds would meet; else those of the same kind, in order.
    ``*_kinds`` map a path to (class name, whether the class is the framework's own), in
    definition order."""
    mapping = {m: t for m, t in known.items() if m in ms_kinds and t in torch_kinds}
    frames = _pair_parents(mapping, torch_kinds)
    taken = set(mapping.values())
    order = {path: i for i, path in enumerate(ms_kinds)}
    queue = [("", "")] + sorted(list(mapping.items()) + frames, key=lambda item: order[item[0]])
    containers = ({_parent(p) for p in ms_kinds if p}, {_parent(p) for p in torch_kinds if p})
    expanded = set()
    while queue:
        parent = queue.pop(0)
        if parent in expanded:
            continue
        expanded.add(parent)
        ms_kids = [c for c in _children(ms_kinds, parent[0]) if c not in mapping]
        torch_kids = [c for c in _children(torch_kinds, parent[1]) if c not in taken]
        for m, t in _match(ms_kids, torch_kids, ms_kinds, torch_kinds, containers):
            if not _holds_alike(m, t, mapping):
                continue  # a layer whose paired layers are elsewhere (mindcv's Swish for a conv-norm-act block)
            mapping[m] = t
            taken.add(t)
            queue.append((m, t))
    return mapping


def _holds_alike(m: str, t: str, mapping: Dict[str, str]) -> bool:
    """Whether no layer paired already lies under ``m`` with its counterpart outside ``t``, or
    under ``t`` with its counterpart outside ``m``."""
    return all(_under(mm, m) == _under(tt, t) for mm, tt in mapping.items() if _under(mm, m) or _under(tt, t))


def _parent(path: str) -> str:
    return path.rpartition(".")[0]


def _children(kinds, parent: str) -> List[str]:
    return [p for p in kinds if p and _parent(p) == parent]


def _pair_parents(mapping: Dict[str, str], torch_kinds) -> List[Tuple[str, str]]:
    """Pair each MindSpore parent of paired layers with the PyTorch layer that holds exactly the
    same paired layers: the nearest common parent of its paired descendants' partners, or a parent
    of that one where a deeper MindSpore layer holds it already (torchvision nests each
    convolution, norm and activation in a block of their own where mindcv lists them: its
    ``Bottleneck`` holds what torchvision's ``InvertedResidual`` holds, its ``layers`` what the
    ``block`` inside does), unless some paired layer under it has its partner elsewhere. Deepest
    first; return every such (parent, layer) as a frame for structural pairing, paired or not."""
    pairs = list(mapping.items())
    under: Dict[str, List[Tuple[str, str]]] = {}
    for m, t in pairs:
        parent = m
        while parent:
            parent = _parent(parent)
            under.setdefault(parent, []).append((m, t))
    taken = set(mapping.values())
    held: Dict[str, str] = {}  # PyTorch layer -> the MindSpore parent paired with it here
    frames = []
    for m in sorted(under, key=lambda p: (-p.count("."), p)):
        if not m or m in mapping:
            continue
        found = _common(partner for _, partner in under[m])
        while found is not None and found in held and held[found].startswith(m + "."):
            found = _parent(found) if found else None  # a deeper layer of ours holds it: the one around it
        if found is None or not all(_under(mm, m) for mm, tt in pairs if _under(tt, found)):
            continue
        t = found
        frames.append((m, t))
        held.setdefault(t, m)
        if t and t not in taken and t in torch_kinds:
            mapping[m] = t
            taken.add(t)
    return frames


def _common(paths) -> Optional[str]:
    """The nearest layer holding every one of ``paths`` ("" the root; None: no paths)."""
    common: Optional[List[str]] = None
    for path in paths:
        parts = path.split(".")
        if common is None:
            common = parts[:-1] if len(parts) > 1 else []
            continue
        n = 0
        while n < len(common) and n < len(parts) - 1 and common[n] == parts[n]:
            n += 1
        common = common[:n]
    return None if common is None else ".".join(common)


def _match(ms_kids: List[str], torch_kids: List[str], ms_kinds, torch_kinds, containers) -> List[Tuple[str, str]]:
    if ms_kids and len(ms_kids) == len(torch_kids):
        if all(_fits(m, t, ms_kinds, torch_kinds, containers) for m, t in zip(ms_kids, torch_kids)):
            return list(zip(ms_kids, torch_kids))
    pairs, start = [], 0
    for m in ms_kids:
        for j in range(start, len(torch_kids)):
            if _same(ms_kinds[m], torch_kinds[torch_kids[j]]):
                pairs.append((m, torch_kids[j]))
                start = j + 1
                break
    return pairs


def stateless(kinds: Dict[str, Tuple[str, bool]], tensors: Iterable[str]) -> FrozenSet[str]:
    """The layer paths of ``kinds`` that hold no tensor of ``tensors`` (parameter and buffer names),
    their sub-layers' included: activations, pools, dropout, identity, flatten..."""
    holders = set()
    for name in tensors:
        path = _parent(name)
        while path and path not in holders:
            holders.add(path)
            path = _parent(path)
    return frozenset(path for path in kinds if path and path not in holders)


class Alignment:
    """MindSpore layer path -> PyTorch layer path (call it with a MindSpore path): the pairs made
    before any pass (``mapping``: :func:`known_pairs` and :func:`align_layers`), then parameter-free
    layers paired by their place among the calls (:meth:`pair_calls`), where nothing else can pair
    them: ConvNeXt's GELU is ``act`` in mindcv and ``block.4`` in torchvision, between the two
    Linears the weights pair.

    ``*_free`` are each side's parameter-free layers (:func:`stateless`); a layer pairs by its
    place at its first call or never."""

    def __init__(
        self,
        mapping: Dict[str, str],
        ms_kinds: Dict[str, Tuple[str, bool]],
        torch_kinds: Dict[str, Tuple[str, bool]],
        ms_free: AbstractSet[str] = frozenset(),
        torch_free: AbstractSet[str] = frozenset(),
    ):
        self.mapping = mapping
        self.found: Dict[str, str] = {}  # paired by place in the calls
        self._kinds = (ms_kinds, torch_kinds)
        self._free = (ms_free, torch_free)
        self._containers = ({_parent(p) for p in ms_kinds if p}, {_parent(p) for p in torch_kinds if p})
        self._taken = set(mapping.values())
        self._tried: set = set()

    def __call__(self, ms_path: str) -> Optional[str]:
        if ms_path in self.mapping:
            return self.mapping[ms_path]
        return self.found.get(ms_path)

    def waits(self, ms_path: str) -> bool:
        """Whether a call of MindSpore's ``ms_path`` may yet be paired by its place."""
        return (
            ms_path in self._free[0]
            and ms_path not in self.mapping
            and ms_path not in self.found
            and ms_path not in self._tried
        )

    def pair_calls(self, ms_calls: Sequence[Any], torch_calls: Sequence[Any]) -> None:
        """Pair MindSpore's waiting calls among ``ms_calls`` (each with ``path``, ``call``,
        ``inputs``, ``outputs``) with PyTorch's unpaired parameter-free calls among ``torch_calls``:
        the calls each side made between the same two paired calls, in execution order. First
        those of one kind, in order; then, between two such pairs, the calls left pair in order
        where both sides left as many and each pair is two of the frameworks' own leaf layers with
        the same input and output shapes (a Sigmoid written for a Tanh; not the Sigmoid inside
        mindcv's Swish, a layer of its own, for torchvision's SiLU). Never a layer already
        paired, never a container with a leaf."""
        ms = [c for c in ms_calls if c.call == 0 and self.waits(c.path)]
        self._tried.update(c.path for c in ms)
        torch = [c for c in torch_calls if c.call == 0 and c.path in self._free[1] and c.path not in self._taken]
        if not ms or not torch:
            return
        same = []
        start = 0
        for i, m in enumerate(ms):
            j = next((j for j in range(start, len(torch)) if self._same_kind(m.path, torch[j].path)), None)
            if j is not None:
                same.append((i, j))
                start = j + 1
        pairs = list(same)
        for (i0, j0), (i1, j1) in zip([(-1, -1)] + same, same + [(len(ms), len(torch))]):
            left = list(zip(range(i0 + 1, i1), range(j0 + 1, j1)))
            if left and i1 - i0 == j1 - j0 and all(self._own_alike(ms[i], torch[j]) for i, j in left):
                pairs += left
        for i, j in pairs:
            self.found[ms[i].path] = torch[j].path
            self._taken.add(torch[j].path)

    def _leaves(self, m: str, t: str) -> Tuple[bool, bool]:
        return m not in self._containers[0], t not in self._containers[1]

    def _same_kind(self, m: str, t: str) -> bool:
        leaves = self._leaves(m, t)
        return leaves[0] == leaves[1] and _same(self._kinds[0][m], self._kinds[1][t])

    def _own_alike(self, m: Any, t: Any) -> bool:
        """Two of the frameworks' own leaf layers, called with tensors of the same shapes and
        returning tensors of the same shapes."""
        own = self._kinds[0][m.path][1] and self._kinds[1][t.path][1]
        return own and self._leaves(m.path, t.path) == (True, True) and _shapes(m) == _shapes(t) != ((), ())


def _shapes(call: Any) -> tuple:
    """The shapes of a call's input tensors and of its output tensors."""
    return tuple(tuple(a.shape for a in arrays or () if a is not None) for arrays in (call.inputs, call.outputs))
