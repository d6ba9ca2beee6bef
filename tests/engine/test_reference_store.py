"""A recorded reference's storage without a framework: arrays kept once each, the content key, and
the errors of a folder that is missing or no reference (reading and writing the arrays themselves
needs safetensors: tests/test_reference.py)."""

import json

import ml_dtypes
import numpy as np
import pytest

from parity.engine.reference import Recorded, recorded
from parity.engine.reference.store import FORMAT, MANIFEST, Arrays, array_chunks, digest, key_of, read_reference
from parity.errors import ParityUsageError


def test_an_array_held_in_two_places_is_stored_once():
    arrays = Arrays()
    shared = np.arange(6, dtype=np.float32).reshape(2, 3)
    keys = arrays.put_all([shared, None, shared, shared.copy()])
    assert keys[0] == keys[2] and keys[1] is None and keys[3] != keys[0]
    assert len(arrays.arrays) == 2


def test_bfloat16_is_stored_as_its_bits_and_named():
    arrays = Arrays()
    value = np.array([1.5, -2.0], dtype=ml_dtypes.bfloat16)
    key = arrays.put(value)
    assert arrays.dtypes[key] == "bfloat16" and arrays.arrays[key].dtype == np.uint16
    assert np.array_equal(arrays.arrays[key].view(ml_dtypes.bfloat16), value)


def test_the_digest_tells_apart_what_plain_concatenation_would_not():
    assert digest([b"ab", b"c"]) != digest([b"a", b"bc"])
    a = np.zeros((2, 3), np.float32)
    assert digest(array_chunks([("x", a)])) != digest(array_chunks([("x", a.reshape(3, 2))]))
    assert digest(array_chunks([("x", a)])) != digest(array_chunks([("y", a)]))
    parts = {"weights": "w", "code": "c", "inputs": "i", "torch": "2.9"}
    assert key_of(parts) == key_of(dict(reversed(list(parts.items()))))
    assert key_of(parts) != key_of({**parts, "torch": "2.10"})


def test_a_missing_folder_says_how_to_record_one(tmp_path):
    with pytest.raises(ParityUsageError, match=r"no such folder; record one with parity.record"):
        read_reference(tmp_path / "nothing")


def test_a_manifest_of_another_format_is_refused(tmp_path):
    (tmp_path / MANIFEST).write_text(json.dumps({"format": FORMAT + 1}))
    with pytest.raises(ParityUsageError, match=rf"format {FORMAT + 1}, this parity reads format {FORMAT}"):
        read_reference(tmp_path)
    (tmp_path / MANIFEST).write_text("not json")
    with pytest.raises(ParityUsageError, match="not a reference manifest"):
        read_reference(tmp_path)


def test_recorded_names_the_path_and_the_module():
    assert recorded("refs/x") == Recorded("refs/x", None)
