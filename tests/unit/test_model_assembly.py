"""Joining the packaged model from its part packages, and checking its hash."""

from __future__ import annotations

import hashlib
import math
import sys
import types

import pytest

from ragmeter.judges import local_model
from ragmeter.judges.base import JudgeError


@pytest.fixture
def fake_parts(tmp_path, monkeypatch):
    """Three tiny part modules standing in for the 22 model packages."""
    chunks = [b"GGUF-part-one|", b"part-two|", b"part-three"]
    for number, chunk in enumerate(chunks, start=1):
        path = tmp_path / f"part{number}.bin"
        path.write_bytes(chunk)
        module = types.ModuleType(f"fake_model_part{number}")
        module.get_part_path = lambda path=path: str(path)
        monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(local_model, "PART_MODULE", "fake_model_part{}")
    monkeypatch.setattr(local_model, "PACKAGED_PARTS", len(chunks))
    monkeypatch.setattr(local_model, "PACKAGED_SHA256", hashlib.sha256(b"".join(chunks)).hexdigest())
    return b"".join(chunks)


def test_parts_are_joined_in_order_verified_and_reused(tmp_path, fake_parts):
    target = local_model.packaged_model_path(tmp_path / "models")
    assert target.read_bytes() == fake_parts
    stamp = target.stat().st_mtime_ns
    assert local_model.packaged_model_path(tmp_path / "models") == target
    assert target.stat().st_mtime_ns == stamp, "a verified file is not joined again"


def test_a_wrong_hash_is_refused_and_leaves_no_file(tmp_path, fake_parts, monkeypatch):
    monkeypatch.setattr(local_model, "PACKAGED_SHA256", "0" * 64)
    with pytest.raises(JudgeError, match="SHA-256"):
        local_model.packaged_model_path(tmp_path / "models")
    assert list((tmp_path / "models").iterdir()) == []


def test_a_file_changed_after_joining_is_joined_again(tmp_path, fake_parts):
    target = local_model.packaged_model_path(tmp_path / "models")
    target.write_bytes(b"truncated")
    assert local_model.packaged_model_path(tmp_path / "models").read_bytes() == fake_parts


def test_missing_part_packages_say_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(local_model, "PART_MODULE", "no_such_model_part{}")
    with pytest.raises(JudgeError, match=r"pip install 'ragmeter\[local\]'"):
        local_model.packaged_model_path(tmp_path / "models")


def test_check_local_judge_names_a_missing_gguf(tmp_path):
    with pytest.raises(JudgeError, match="GGUF model not found"):
        local_model.check_local_judge(tmp_path / "absent.gguf")


def test_recalibration_is_the_fitted_logistic_of_the_logit():
    from ragmeter.judges.local_model import recalibrate

    assert recalibrate(0.5, 1.0, 0.0) == pytest.approx(0.5)
    # sigmoid(2 * logit(0.8) - 1) computed by hand: logit(0.8) = ln 4.
    assert recalibrate(0.8, 2.0, -1.0) == pytest.approx(1 / (1 + math.exp(-(2 * math.log(4) - 1))))
    assert 0.0 < recalibrate(0.0, 1.1, -2.0) < recalibrate(1.0, 1.1, -2.0) < 1.0


def test_the_packaged_calibration_is_used_only_when_asked_and_changes_cache_keys():
    from ragmeter.judges.local import LocalJudge
    from ragmeter.judges.local_model import packaged_calibration

    fit = packaged_calibration()["supported/en"]
    assert fit["slope"] > 0 and fit["claims"] >= 200
    raw, calibrated = LocalJudge(), LocalJudge(calibrated=True)
    assert raw.describe()["calibrations"] == {}
    assert calibrated.describe()["calibrations"]["supported/en"] == fit
    assert LocalJudge(model_path="other.gguf", calibrated=True).describe()["calibrations"] == {}


def test_the_cpu_kernels_llama_cpp_reports_are_part_of_the_local_judge_identity(monkeypatch):
    import llama_cpp

    from ragmeter.judges import local_model
    from ragmeter.judges.local import LocalJudge

    local_model.cpu_kernels.cache_clear()
    try:
        portable = LocalJudge().identity()
        # This machine's build: the CPU features it was compiled with, "= 1" each in llama.cpp's report.
        assert "AVX" in portable["kernels"].split() and "=" not in portable["kernels"]
        # A build that loaded its AVX-512 variant reports more; its answers are another judge's.
        avx512 = b"CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 | AMX_INT8 = 0 | OPENMP = 1 | "
        monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: avx512)
        local_model.cpu_kernels.cache_clear()
        other = LocalJudge().identity()
        assert other["kernels"] == "SSE3 AVX AVX2 AVX512 AVX512_VNNI OPENMP"
        assert other != portable and {k: v for k, v in other.items() if k != "kernels"} == {
            k: v for k, v in portable.items() if k != "kernels"
        }
    finally:
        local_model.cpu_kernels.cache_clear()


def test_evidence_sentences_default_by_backend_can_be_set_and_pass_through_the_cache(tmp_path):
    from ragmeter.judges.config import JudgeConfig
    from ragmeter.judges.local import EVIDENCE_SENTENCES

    assert JudgeConfig().build(cached=False).evidence_sentences == EVIDENCE_SENTENCES == 3
    assert JudgeConfig(evidence_sentences=0).build(cached=False).evidence_sentences == 0
    assert JudgeConfig(evidence_sentences=5, cache_dir=str(tmp_path)).build().evidence_sentences == 5
    endpoint = JudgeConfig(base_url="http://127.0.0.1:9/v1", model="m")
    assert endpoint.build(cached=False).evidence_sentences == 0, "endpoints read the whole premise"
    assert endpoint.updated(evidence_sentences=2).build(cached=False).evidence_sentences == 2
    for wrong in (-1, 1.5, True):
        with pytest.raises(ValueError, match="judge setting evidence_sentences: "):
            JudgeConfig.validated({"evidence_sentences": wrong})
