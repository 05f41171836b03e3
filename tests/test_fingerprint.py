"""The fingerprint that tells a float-preserving speed change from one that needs a new run identity."""
import hashlib
import json

import torch

from fssl_core.perf import fingerprint


def _hex(obj) -> str:
    h = hashlib.sha256()
    fingerprint.digest(obj, h)
    return h.hexdigest()


def test_the_digest_sees_one_ulp_a_dtype_and_a_shape_but_not_dict_order():
    x = torch.tensor([1.0, 2.0, 3.0])
    nudged = x.clone()
    nudged[1] = torch.nextafter(nudged[1], torch.tensor(10.0))
    assert _hex({"a": x, "b": [1, 2.5]}) == _hex({"b": [1, 2.5], "a": x.clone()})
    assert _hex(x) != _hex(nudged)
    assert _hex(x) != _hex(x.double())
    assert _hex(x) != _hex(x.view(1, 3))
    assert _hex(torch.tensor([0.0])) != _hex(torch.tensor([-0.0]))     # bytes, not values


def test_main_reports_each_case_and_fails_only_when_a_case_differs(tmp_path, monkeypatch, capsys):
    values = {"fedavg": "aaaa", "fedsiam_d": "bbbb"}
    monkeypatch.setattr(fingerprint, "case_digest", lambda name: values[name])
    ref = tmp_path / "ref.json"
    assert fingerprint.main(out=str(ref), cases=["fedavg", "fedsiam_d"]) == 0
    assert json.loads(ref.read_text()) == values
    assert fingerprint.main(against=str(ref), cases=["fedavg", "fedsiam_d"]) == 0
    values["fedsiam_d"] = "cccc"
    assert fingerprint.main(against=str(ref), cases=["fedavg", "fedsiam_d"]) == 1
    out = capsys.readouterr().out
    assert "fedavg                   aaaa  same floats" in out and "cccc  differs" in out


def test_an_unknown_case_is_refused_by_name():
    import pytest
    with pytest.raises(ValueError, match="cases=nope: must be among fedavg"):
        fingerprint.main(cases=["nope"])
