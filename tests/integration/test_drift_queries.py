"""``ragmeter drift queries`` with the packaged multilingual encoder on questions written here:
the same mix of platform questions in both windows gives no alarm; a new topic (cooking) at 10%
of the recent window gives exit code 1, the JSON alert, and the grown topic's examples."""

from __future__ import annotations

import itertools
import json
import random

import pytest
from typer.testing import CliRunner

from ragmeter.cli import app

pytestmark = pytest.mark.integration

SUBJECTS = [
    "the CI runner",
    "a merge request",
    "the deploy pipeline",
    "an access token",
    "the artifact cache",
    "a feature flag",
    "the staging cluster",
    "a code review",
]
ASKS = [
    "How do I configure {}?",
    "Why does {} fail after an upgrade?",
    "Who can change {}?",
    "Where are the logs of {}?",
    "How long is {} kept?",
    "Can I reset {}?",
]
COOKING = ["How long should I boil {} for?", "Which spices go well with {}?", "Can I freeze {} after cooking?"]
FOODS = ["brown rice", "a pot roast", "lentil soup", "fresh pasta", "sourdough bread", "salmon fillets", "chickpea curry"]


def write_samples(path, questions):
    path.write_text("".join(json.dumps({"id": f"q{i}", "user_input": q}) + "\n" for i, q in enumerate(questions)))
    return path


def test_query_drift_alarms_on_a_new_topic_only(tmp_path):
    platform = [ask.format(subject) for ask, subject in itertools.product(ASKS, SUBJECTS)]  # 48 distinct questions
    cooking = [ask.format(food) for ask, food in itertools.product(COOKING, FOODS)]
    rng = random.Random(5)
    reference = write_samples(tmp_path / "reference.jsonl", rng.choices(platform, k=150))
    same = write_samples(tmp_path / "same.jsonl", rng.choices(platform, k=150))
    shifted = write_samples(tmp_path / "shifted.jsonl", rng.choices(platform, k=135) + rng.sample(cooking, 15))
    runner = CliRunner()

    calm = runner.invoke(app, ["drift", "queries", str(reference), str(same), "--json", str(tmp_path / "calm.json")])
    assert calm.exit_code == 0, calm.output
    assert "no drift" in calm.output and json.loads((tmp_path / "calm.json").read_text())["drift"] is False

    alarm = runner.invoke(app, ["drift", "queries", str(reference), str(shifted), "--json", str(tmp_path / "alarm.json")])
    assert alarm.exit_code == 1, alarm.output
    report = json.loads((tmp_path / "alarm.json").read_text())
    assert report["drift"] is True and report["p_value"] < 0.01
    assert set(report["grown_topics"][0]["examples"]) <= set(cooking)

    empty = write_samples(tmp_path / "empty.jsonl", [])
    failed = runner.invoke(app, ["drift", "queries", str(reference), str(empty)])
    assert failed.exit_code == 2 and "Traceback" not in failed.output
