"""The five serving-side kinds (LLM serving results, kept apart from kernel runs).

Typed as strictly as the kernel kinds: the published schemas are small enough that an
envelope-only check would have saved nothing.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from kernelindex.records.envelope import Record, Strict
from kernelindex.records.fields import (
    Commit,
    Digest,
    Identifier,
    Number,
    PositiveInt,
    PositiveNumber,
    SourceSlug,
    Text100,
    Text120,
    Text200,
    Text500,
    Timestamp,
    Uri,
    check_number,
)

# --- ModelRevision -------------------------------------------------------------------------


class ModelRepository(Strict):
    host: Literal["huggingface", "github", "other"]
    id: Text200
    revision: Text100 | None = None


class Tokenizer(Strict):
    name: Text200 | None = None
    revision: Text100 | None = None
    digest: Digest | None = None


class ModelRevisionSpec(Strict):
    model: Text200
    repository: ModelRepository | None = None
    tokenizer: Tokenizer | None = None
    architecture: Text100 | None = None
    parameterCount: PositiveInt | None = None
    contextLength: PositiveInt | None = None
    modality: Identifier | None = None
    license: Text200 | None = None


class ModelRevision(Record):
    KIND = "ModelRevision"
    kind: Literal["ModelRevision"]
    spec: ModelRevisionSpec


# --- ServingStackRevision ------------------------------------------------------------------


class StackProject(Strict):
    name: Text200
    repository: Uri | None = None


class StackRevision(Strict):
    version: Text120 | None = None
    commit: Commit | None = None
    containerDigest: Digest | None = None


class ServingStackRevisionSpec(Strict):
    project: StackProject
    revision: StackRevision
    backends: Annotated[list[Identifier], Field(max_length=8)] | None = None
    apiProtocol: Identifier | None = None
    license: Text200 | None = None


class ServingStackRevision(Record):
    KIND = "ServingStackRevision"
    kind: Literal["ServingStackRevision"]
    spec: ServingStackRevisionSpec


# --- ServingConfiguration ------------------------------------------------------------------


class Parallelism(Strict):
    tensor: PositiveInt | None = None
    pipeline: PositiveInt | None = None
    data: PositiveInt | None = None
    expert: PositiveInt | None = None
    context: PositiveInt | None = None


class KvCache(Strict):
    dtype: Identifier | None = None
    capacityTokens: PositiveInt | None = None


class Limits(Strict):
    maxSequenceLength: PositiveInt | None = None
    maxBatchSize: PositiveInt | None = None
    maxNumTokens: PositiveInt | None = None


class Speculative(Strict):
    method: Identifier
    draftModel: Text200 | None = None


class ServingConfigurationSpec(Strict):
    stackDigest: Digest
    dtype: Identifier | None = None
    quantization: Identifier | None = None
    parallelism: Parallelism | None = None
    attentionBackend: Identifier | None = None
    kvCache: KvCache | None = None
    limits: Limits | None = None
    speculative: Speculative | None = None
    options: dict[Identifier, Text500] | None = None


class ServingConfiguration(Record):
    KIND = "ServingConfiguration"
    kind: Literal["ServingConfiguration"]
    spec: ServingConfigurationSpec


# --- ServingWorkload -----------------------------------------------------------------------


class Dataset(Strict):
    name: Text200
    digest: Digest | None = None


class TokenDistribution(Strict):
    distribution: Identifier
    mean: PositiveNumber | None = None
    maximum: PositiveInt | None = None
    artifactDigest: Digest | None = None


class Tokens(Strict):
    prompt: TokenDistribution | None = None
    output: TokenDistribution | None = None


class Slo(Strict):
    metric: Identifier
    statistic: Identifier
    operator: Literal["<=", "<"]
    value: PositiveNumber
    unit: Identifier


class Sampling(Strict):
    temperature: Number | None = None
    seeded: bool | None = None


class ServingWorkloadSpec(Strict):
    dataset: Dataset | None = None
    tokens: Tokens | None = None
    streaming: bool
    loadGeneration: Literal["open_loop", "closed_loop", "offline"]
    arrival: Identifier | None = None
    requestRatePerSecond: PositiveNumber | None = None
    slo: Annotated[list[Slo], Field(max_length=8)] | None = None
    sampling: Sampling | None = None
    durationSeconds: PositiveInt | None = None
    requestCount: PositiveInt | None = None


class ServingWorkload(Record):
    KIND = "ServingWorkload"
    kind: Literal["ServingWorkload"]
    spec: ServingWorkloadSpec


# --- ServingRun ----------------------------------------------------------------------------


class Topology(Strict):
    acceleratorVendor: Identifier | None = None
    acceleratorModel: Text200
    acceleratorsPerNode: PositiveInt
    nodeCount: PositiveInt
    interconnect: Text200 | None = None


class ServingHarness(Strict):
    name: Identifier
    version: Text100


class ServingMeasurement(Strict):
    metric: Identifier
    unit: Identifier
    statistic: Identifier
    value: Number
    sampleCount: PositiveInt | None = None


def _check_number_or_text(value: Any) -> int | float | str:
    if isinstance(value, str):
        if len(value) > 500:
            reason = f"text must have at most 500 characters, got {len(value)}"
            raise PydanticCustomError("string_too_long", reason)
        return value
    return check_number(value)


NumberOrText = Annotated[
    int | float | str,
    PlainValidator(_check_number_or_text),
    WithJsonSchema({"anyOf": [{"type": "number"}, {"type": "string", "maxLength": 500}]}),
]
"""A source's own figure: a number, or text where the source reports one (e.g. "n/a")."""


class ServingSourceNative(Strict):
    source: SourceSlug
    benchmark: Text200
    scenario: Identifier
    division: Identifier
    category: Identifier
    externalId: Text500
    metrics: dict[Identifier, NumberOrText] | None = None


class ServingRunSpec(Strict):
    modelDigest: Digest
    configurationDigest: Digest
    workloadDigest: Digest
    topology: Topology
    harness: ServingHarness
    placement: Identifier | None = None
    qualityPolicy: Identifier
    status: Literal["valid", "invalid", "incomplete_evidence"]
    measurements: Annotated[list[ServingMeasurement], Field(min_length=1, max_length=64)]
    sourceNative: ServingSourceNative | None = None
    caveats: Annotated[list[Text500], Field(max_length=16)] | None = None
    observedAt: Timestamp


class ServingRun(Record):
    KIND = "ServingRun"
    kind: Literal["ServingRun"]
    spec: ServingRunSpec


SERVING_KINDS: tuple[type[Record], ...] = (
    ModelRevision,
    ServingStackRevision,
    ServingConfiguration,
    ServingWorkload,
    ServingRun,
)
