"""The data model: one question turn of a RAG system, as evaluated by ragmeter.

Field names follow the RAGAS ``SingleTurnSample`` so that data prepared for RAGAS loads
as is. The older RAGAS names (``question``, ``contexts``, ``answer``, ``ground_truth``)
are accepted on input and mapped to the new ones.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragmeter.data.conversation import conversation_record, is_conversation

#: Older input names and the field each one fills.
LEGACY_FIELD_NAMES: dict[str, str] = {
    "question": "user_input",
    "contexts": "retrieved_contexts",
    "answer": "response",
    "ground_truth": "reference",
    "sample_id": "id",
}

#: Fields whose values are identifiers: numbers are accepted and turned into strings.
_ID_LIST_FIELDS = ("retrieved_context_ids", "reference_context_ids")


def id_text(value: Any) -> Any:
    """An identifier as text: numbers become their digits. A whole float (``1.0``, as pandas
    makes an integer column that has a missing value) becomes ``"1"``; other values are left
    for validation to accept (text) or reject."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float) and math.isfinite(value):
        return str(int(value)) if value.is_integer() else repr(value)
    return value


class Sample(BaseModel):
    """One question turn of a RAG system.

    Attributes:
        id: Stable identifier of the sample. Used to resume runs and to match samples
            when two runs are compared. When absent, the source file and line stand in.
        user_input: The user's question.
        retrieved_contexts: Texts the retriever returned, best first.
        retrieved_context_ids: Identifiers of those texts, same order, one per text: when
            their numbers differ, which id names which text is unknown, and the metrics that
            need the ids leave the sample unscored (see :meth:`unpaired_ids`).
        response: The answer the system generated.
        reference: A correct answer written by a person (the "ground truth").
        reference_contexts: Texts that hold the knowledge needed to answer.
        reference_context_ids: Identifiers of those texts (the relevant documents).
        metadata: Anything else: ``expected_doc``, ``answerable``, ``latency_ms``,
            ``tokens``, ``cost_usd``, ``difficulty``... Unknown input columns land here.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str | None = None
    user_input: str | None = None
    retrieved_contexts: list[str] | None = None
    retrieved_context_ids: list[str] | None = None
    response: str | None = None
    reference: str | None = None
    reference_contexts: list[str] | None = None
    reference_context_ids: list[str] | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)

    @field_validator("id", mode="before")
    @classmethod
    def _id_as_text(cls, value: Any) -> Any:
        return id_text(value)

    @field_validator(*_ID_LIST_FIELDS, mode="before")
    @classmethod
    def _ids_as_text(cls, value: Any) -> Any:
        if isinstance(value, list):
            return [id_text(v) for v in value]
        return value

    @classmethod
    def from_record(cls, record: dict[str, Any]) -> Sample:
        """Build a sample from one input record (a row or a JSON object).

        Legacy names are mapped to current ones, columns that are not sample fields go
        into ``metadata``, and ``None`` values count as absent. A conversation (a list of
        messages in ``user_input``) becomes the sample of its last turn with the whole
        conversation in its metadata (see :mod:`ragmeter.data.conversation`). Raises
        ``pydantic.ValidationError`` on wrong types and ``ValueError`` when a legacy
        and a current name are both given for the same field.
        """
        if is_conversation(record):
            record = conversation_record(record)
        fields: dict[str, Any] = {}
        metadata: dict[str, Any] = {}
        given_as: dict[str, str] = {}
        for key, value in record.items():
            name = LEGACY_FIELD_NAMES.get(key, key)
            if name in given_as:
                raise ValueError(f"both '{given_as[name]}' and '{key}' are given for '{name}'; keep one")
            given_as[name] = key
            if name == "metadata":
                if value is None:
                    continue
                if not isinstance(value, dict):
                    # Let pydantic report the type error on the right field.
                    fields["metadata"] = value
                    continue
                metadata.update(value)
            elif name in cls.model_fields:
                if value is not None:
                    fields[name] = value
            elif value is not None:
                metadata[key] = value
        if "metadata" not in fields:
            fields["metadata"] = metadata
        return cls.model_validate(fields)

    def unpaired_ids(self) -> str | None:
        """Why ``retrieved_context_ids`` cannot be paired with ``retrieved_contexts``: the two
        lists differ in length, so which id names which text is unknown (``"3 id(s) for 2
        context(s) in retrieved_contexts: ..."``); ``None`` when they pair one to one or either is absent."""
        ids, contexts = self.retrieved_context_ids, self.retrieved_contexts
        if ids is None or contexts is None or len(ids) == len(contexts):
            return None
        return f"{len(ids)} id(s) for {len(contexts)} context(s) in retrieved_contexts: which id names which context is unknown"

    def get(self, path: str) -> Any:
        """Value of a field (``"response"``) or metadata key (``"metadata.expected_doc"``)."""
        if path.startswith("metadata."):
            return self.metadata.get(path.removeprefix("metadata."))
        return getattr(self, path)

    def fingerprint(self) -> str:
        """A hash of the sample's content; a changed sample gets a different one."""
        payload = json.dumps(self.model_dump(), sort_keys=True, ensure_ascii=False, default=str)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
