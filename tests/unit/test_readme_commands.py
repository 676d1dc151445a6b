"""Behaviours the README promises that running its commands as written found broken."""

from __future__ import annotations

import json
import re

import pytest
from cli_helpers import TWO_SAMPLES, run_eval, runner, write_jsonl

from ragmeter.cli import app
from ragmeter.data import load_dataset
from ragmeter.data.encodings import encoding_hint
from ragmeter.data.issues import InputError


def test_auto_metrics_with_an_unusable_endpoint_are_refused_not_run_without_the_judge(tmp_path):
    # The README: "A base URL without http:// or https:// is refused at the start". With the
    # default --metrics auto the run skipped every LLM metric, scored the rest and exited 0.
    data = write_jsonl(tmp_path / "data.jsonl", TWO_SAMPLES)
    judge = ["--judge-base-url", "api.example.com/v1", "--judge-model", "m", "--no-progress"]
    refused = run_eval(data, *judge, "-o", tmp_path / "auto")
    assert refused.exit_code == 2, refused.output
    assert "must begin with http:// or https://" in refused.output and not (tmp_path / "auto").exists()
    model_free = run_eval(data, *judge, "-m", "model-free", "-o", tmp_path / "model-free")  # needs no judge: runs
    assert model_free.exit_code == 0, model_free.output


def test_json_lines_in_utf16_with_its_mark_are_refused_in_one_line(tmp_path):
    # Each "line" of the UTF-16 bytes was reported on its own ("line 1: invalid UTF-8 (byte 0xff...)",
    # more issues than the file has lines), the conversion repeated on every one.
    rows = [{"id": f"s{i}", "user_input": "问题", "response": "回答", "reference": "回答"} for i in range(3)]
    path = tmp_path / "data.jsonl"
    path.write_bytes("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows).encode("utf-16"))
    with pytest.raises(InputError) as refused:
        load_dataset(path)
    (issue,) = refused.value.issues
    assert issue.location == "file" and "iconv -f UTF-16 -t UTF-8" in issue.message


def test_binary_data_with_many_nul_bytes_is_called_binary_not_utf16():
    # The start of an executable (NULs on both sides of its byte pairs) was named UTF-16LE text.
    elf = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x03\x00>\x00\x01\x00\x00\x00\xd0\x5c\x00\x00\x00\x00\x00\x00" * 5
    assert "binary data" in encoding_hint(elf)
    assert "UTF-16LE" in encoding_hint("plain ASCII text, written by Windows as Unicode".encode("utf-16-le"))


def test_bench_on_labelled_samples_rounds_its_intervals_and_names_a_missing_label(tmp_path):
    # `ragmeter bench --labelled FILE --metric M` printed "roc_auc 0.750 [0.4374350761772854, 1.0]",
    # and a sample without the label field as "got None", a Python word for a field it lacks.
    rows = [{"id": f"s{i}", "response": "x y" if i % 3 else "x", "reference": "x", "label": i % 2} for i in range(8)]
    rows.append({"id": "unlabelled", "response": "x", "reference": "x"})
    labelled = write_jsonl(tmp_path / "mine.jsonl", rows)
    done = runner.invoke(app, ["bench", "--labelled", str(labelled), "--metric", "token_f1", "--out", str(tmp_path), "--name", "m"])
    assert done.exit_code == 0, done.output
    assert f"{labelled}, line 9: field 'label' is missing or null" in done.output
    (line,) = [text for text in done.output.splitlines() if text.strip().startswith("roc_auc")]
    assert re.fullmatch(r"\s*roc_auc \d\.\d{3} \[\d\.\d{3}, \d\.\d{3}\]", line), line


def test_the_generate_estimate_writes_every_count_with_thousands_separators(capsys):
    # `ragmeter generate docs/ --size 200 ... --dry-run` printed "1300 judge calls, 865,104 prompt tokens".
    from types import SimpleNamespace

    from ragmeter.cli import generate
    from ragmeter.judges.metering import Usage

    usage = Usage(calls=1300, prompt_tokens=865104, completion_tokens=36850, cost_usd=None)
    estimate = SimpleNamespace(summary=lambda: {"asked": 200, "usage": usage.to_dict()}, settings={"judge": {"backend": "openai"}})
    generate._print_estimate(estimate, top_up_rounds=0)
    assert "1,300 judge calls, 865,104 prompt tokens, 36,850 output tokens" in capsys.readouterr().err


def test_answer_refuses_in_one_line_an_out_folder_that_cannot_be_made(tmp_path, monkeypatch):
    # The README: "its folder is created if needed, and one that cannot be is refused before any
    # question". A folder the checks cannot foresee (under /proc, a full disk) ended in
    # "unexpected error: FileNotFoundError".
    from pathlib import Path

    (tmp_path / "rag_for_readme.py").write_text("def answer(question):\n    return ['ctx'], 'an answer'\n", encoding="utf-8")
    write_jsonl(tmp_path / "testset.jsonl", [{"id": "q1", "user_input": "How many?"}])
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    made = Path.mkdir

    def mkdir(self, *args, **kwargs):
        if self.name == "answers":
            raise FileNotFoundError(2, "No such file or directory")
        return made(self, *args, **kwargs)

    monkeypatch.setattr(Path, "mkdir", mkdir)
    done = runner.invoke(app, ["answer", "testset.jsonl", "-p", "rag_for_readme:answer", "-o", "answers/out.jsonl"])
    assert done.exit_code == 2 and "--out answers/out.jsonl: its folder answers cannot be created" in done.output, done.output
    assert "unexpected error" not in done.output
