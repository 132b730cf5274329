"""The eight kernel-side kinds, field for field as KernelIndex's published JSON Schemas.

Field names are the wire names (camelCase) so a model dumps back to exactly the JSON it read.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, PlainValidator, WithJsonSchema
from pydantic_core import PydanticCustomError

from kernelindex.records.envelope import Record, Strict
from kernelindex.records.fields import (
    DURATION_SCHEMA,
    IDENTIFIER_PATTERN,
    MAX_SAFE_INTEGER,
    Commit,
    Count,
    Digest,
    Duration,
    Identifier,
    Name,
    NonNegativeNumber,
    Number,
    PositiveInt,
    PositiveNumber,
    Product,
    Ratio,
    SafeInt,
    SourceSlug,
    Text50,
    Text100,
    Text200,
    Text500,
    Text1000,
    Text2000,
    Timestamp,
    Uri,
    text,
)

_IDENTIFIER = re.compile(IDENTIFIER_PATTERN)


def _check_extent(value: Any) -> int | str:
    if isinstance(value, str) and _IDENTIFIER.fullmatch(value):
        return value
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_SAFE_INTEGER:
        return value
    raise PydanticCustomError("extent", f"expected a size (integer >= 0) or an axis name, got {value!r}")


ShapeDim = Annotated[
    int | str,
    PlainValidator(_check_extent),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "integer", "minimum": 0, "maximum": MAX_SAFE_INTEGER},
                {"type": "string", "pattern": IDENTIFIER_PATTERN},
            ]
        }
    ),
]
"""An extent in an operation's signature: a fixed size or the name of an axis."""


class Artifact(Strict):
    """A content-addressed file: never a bare URL."""

    uri: Uri
    digest: Digest


# --- OperationSpec -------------------------------------------------------------------------


class Axis(Strict):
    role: Literal["variable", "constant", "derived"]
    type: Literal["integer"]
    value: SafeInt | None = None
    minimum: SafeInt | None = None
    maximum: SafeInt | None = None
    expression: Annotated[str, text(200, r"^[a-z0-9_+\-*%/() ]+$")] | None = None


class TensorSignature(Strict):
    shape: Annotated[list[ShapeDim], Field(min_length=1)]
    dtype: Identifier
    layout: Literal["row_major", "col_major", "contiguous", "strided"] | None = None


class ScalarSignature(Strict):
    dtype: Identifier


class Parameter(Strict):
    name: Identifier
    tensor: TensorSignature | None = None
    scalar: ScalarSignature | None = None


class Semantics(Strict):
    expression: Text2000 | None = None
    mutation: Literal["none", "in_place", "destination"]
    determinism: Literal["deterministic", "nondeterministic", "unspecified"]


class Reference(Strict):
    language: Identifier
    artifact: Artifact | None = None


class OperationSpecSpec(Strict):
    family: Annotated[str, text(100, r"^[a-z0-9][a-z0-9-]*$")]
    axes: dict[Identifier, Axis]
    inputs: Annotated[list[Parameter], Field(min_length=1)]
    outputs: Annotated[list[Parameter], Field(min_length=1)]
    semantics: Semantics
    reference: Reference | None = None


class OperationSpec(Record):
    KIND = "OperationSpec"
    kind: Literal["OperationSpec"]
    spec: OperationSpecSpec


# --- WorkloadCase / WorkloadSuite ----------------------------------------------------------


class TensorData(Strict):
    generator: Identifier
    seed: Count | None = None
    parameters: dict[Identifier, Number] | None = None
    artifact: Artifact | None = None


class TensorCase(Strict):
    shape: Annotated[list[Count], Field(min_length=1)]
    dtype: Identifier
    strides: list[SafeInt] | None = None
    alignmentBytes: PositiveInt | None = None
    data: TensorData | None = None


class ScalarCase(Strict):
    dtype: Identifier
    value: Number


class CaseCorrectness(Strict):
    comparator: Identifier
    maxAbsoluteError: NonNegativeNumber | None = None
    maxRelativeError: NonNegativeNumber | None = None
    requiredMatchedRatio: Ratio | None = None
    nanPolicy: Literal["reject", "exact_match", "ignore"] | None = None
    infinityPolicy: Literal["reject", "exact_match", "ignore"] | None = None


class WorkloadCaseSpec(Strict):
    operationSpecDigest: Digest
    axes: dict[Identifier, SafeInt]
    tensors: dict[Identifier, TensorCase]
    scalars: dict[Identifier, ScalarCase] | None = None
    correctness: CaseCorrectness


class WorkloadCase(Record):
    KIND = "WorkloadCase"
    kind: Literal["WorkloadCase"]
    spec: WorkloadCaseSpec


class SuiteCase(Strict):
    externalId: Text200
    axes: dict[Identifier, SafeInt]


class SuiteCorrectness(Strict):
    comparator: Identifier
    description: Text500 | None = None


class Aggregation(Strict):
    metric: Identifier
    statistic: Identifier


class WorkloadSuiteSpec(Strict):
    operationSpecDigest: Digest
    cases: Annotated[list[SuiteCase], Field(min_length=1)]
    correctness: SuiteCorrectness
    aggregation: Aggregation


class WorkloadSuite(Record):
    KIND = "WorkloadSuite"
    kind: Literal["WorkloadSuite"]
    spec: WorkloadSuiteSpec


# --- SoftwareProject / ImplementationRevision ----------------------------------------------


class ProjectHost(Strict):
    kind: Literal["github", "huggingface", "gitlab", "other"]
    id: Text200


class Package(Strict):
    ecosystem: Identifier
    name: Text200


class SoftwareProjectSpec(Strict):
    name: Text200
    kind: Literal["library", "individual", "vendor"] | None = None
    repository: Uri | None = None
    homepage: Uri | None = None
    host: ProjectHost | None = None
    packages: list[Package] | None = None


class SoftwareProject(Record):
    KIND = "SoftwareProject"
    kind: Literal["SoftwareProject"]
    spec: SoftwareProjectSpec


class ProjectRevision(Strict):
    repository: Uri | None = None
    commit: Commit | None = None
    version: Text100 | None = None
    treeDigest: Digest | None = None


class OperationRef(Strict):
    specDigest: Digest


class Callable(Strict):
    language: Identifier
    path: Text500 | None = None
    symbol: Text200 | None = None
    interface: Identifier | None = None


class Support(Strict):
    """What an implementation supports. The lists read like sets, but the published schema
    does not say so (no uniqueItems) and its own example lists axes unsorted, so their order
    is kept as given: sorting would change the digest of a valid published record."""

    hardwareArchitectures: list[Identifier]
    productsTested: list[Product] | None = None
    axes: list[Text200] | None = None
    dtypes: list[Identifier]
    layouts: list[Text50] | None = None


class SourceFile(Strict):
    contentDigest: Digest
    fileName: Text200 | None = None
    sizeBytes: PositiveInt | None = None


class Install(Strict):
    kind: Literal["git", "pip", "package", "container", "source"]
    repository: Uri | None = None
    commit: Commit | None = None
    package: Text200 | None = None
    version: Text100 | None = None
    command: Text1000 | None = None


class BuildVariant(Strict):
    name: Name
    install: Install
    requirements: dict[Identifier, Text200] | None = None


class LicenseEvidence(Strict):
    path: Text500
    digest: Digest | None = None


class Licensing(Strict):
    declared: Text200 | None = None
    concluded: Text200 | None = None
    evidence: LicenseEvidence | None = None


class ImplementationRevisionSpec(Strict):
    projectRevision: ProjectRevision
    operation: OperationRef
    callable: Callable
    support: Support
    source: SourceFile | None = None
    buildVariants: list[BuildVariant] | None = None
    licensing: Licensing


class ImplementationRevision(Record):
    KIND = "ImplementationRevision"
    kind: Literal["ImplementationRevision"]
    spec: ImplementationRevisionSpec


# --- BenchmarkProtocol / ExecutionEnvironment ----------------------------------------------


class Harness(Strict):
    name: Text200
    version: Text100 | None = None
    repository: Uri | None = None
    commit: Commit | None = None


class Measurement(Strict):
    timer: Identifier
    synchronization: Identifier | None = None
    compileIncluded: bool | None = None
    setupIncluded: bool | None = None
    warmupIterations: Count | None = None
    warmupDuration: Duration | None = None
    measuredIterations: PositiveInt | None = None
    samples: PositiveInt | None = None
    inputRegeneration: Identifier | None = None
    outlierPolicy: Text500 | None = None
    primaryStatistic: Identifier


class ProtocolCorrectness(Strict):
    reference: Text500
    comparator: Identifier


class DevicePolicy(Strict):
    clocksLocked: bool | None = None
    powerLimitWatts: PositiveNumber | None = None
    persistenceMode: bool | None = None


class Comparability(Strict):
    family: Identifier
    notes: Text1000 | None = None


class BenchmarkProtocolSpec(Strict):
    harness: Harness
    measurement: Measurement
    correctness: ProtocolCorrectness | None = None
    devicePolicy: DevicePolicy | None = None
    comparability: Comparability | None = None


class BenchmarkProtocol(Record):
    KIND = "BenchmarkProtocol"
    kind: Literal["BenchmarkProtocol"]
    spec: BenchmarkProtocolSpec


class Hardware(Strict):
    vendor: Identifier
    product: Text200
    architecture: Identifier
    formFactor: Text100 | None = None
    memoryBytes: PositiveInt | None = None
    count: PositiveInt | None = None
    interconnect: Text200 | None = None


class Framework(Strict):
    name: Identifier
    version: Text100


class Software(Strict):
    operatingSystem: Text200 | None = None
    kernel: Text200 | None = None
    driver: Text100 | None = None
    cudaToolkit: Text100 | None = None
    compiler: Text200 | None = None
    framework: Framework | None = None
    libraries: dict[Identifier, Text100] | None = None


class Settings(Strict):
    clocksLocked: bool | None = None
    powerLimitWatts: PositiveNumber | None = None
    persistenceMode: bool | None = None
    eccEnabled: bool | None = None
    environmentVariables: dict[Text200, Text500] | None = None


class ExecutionEnvironmentSpec(Strict):
    hardware: Hardware
    software: Software
    settings: Settings | None = None
    imageDigest: Digest | None = None


class ExecutionEnvironment(Record):
    KIND = "ExecutionEnvironment"
    kind: Literal["ExecutionEnvironment"]
    spec: ExecutionEnvironmentSpec


# --- BenchmarkRun --------------------------------------------------------------------------


# The words of `records.vocabulary.RunStatus`, as the Literal the published schema lists (a pydantic
# enum field would change the schema document); tests/records/test_vocabulary.py checks they agree.
RunStatusWord = Literal[
    "passed",
    "incorrect_shape",
    "incorrect_dtype",
    "incorrect_numerical",
    "compile_error",
    "runtime_error",
    "timeout",
    "resource_exceeded",
    "invalid_reference",
    "policy_violation",
    "suspected_reward_hack",
    "incomplete_evidence",
    "revoked",
]


class RunCorrectness(Strict):
    comparator: Identifier
    maximumAbsoluteError: NonNegativeNumber | None = None
    maximumRelativeError: NonNegativeNumber | None = None
    matchedRatio: Ratio | None = None


DurationPair = Annotated[
    list[Duration],
    Field(min_length=2, max_length=2),
    WithJsonSchema({"type": "array", "prefixItems": [DURATION_SCHEMA, DURATION_SCHEMA], "minItems": 2, "maxItems": 2}),
]
"""[low, high]. The published schema gives only prefixItems (any length passes); a confidence
interval is a pair, so we also require exactly two."""


class Latency(Strict):
    """Latency statistics in integer nanoseconds."""

    median: Duration | None = None
    mean: Duration | None = None
    p05: Duration | None = None
    p95: Duration | None = None
    minimum: Duration | None = None
    maximum: Duration | None = None
    mad: Duration | None = None
    confidence95: DurationPair | None = None


class Timing(Strict):
    primaryStatistic: Identifier
    samples: PositiveInt | None = None
    latencyNs: Latency
    rawSamples: Artifact | None = None


class RunMeasurement(Strict):
    metric: Identifier
    unit: Identifier
    statistic: Identifier
    value: Number
    sampleCount: PositiveInt | None = None


class SourceNative(Strict):
    """The source's own identifiers and figures, kept beside the normalised ones."""

    source: SourceSlug
    benchmark: Text200 | None = None
    externalId: Text500 | None = None
    metrics: dict[Identifier, Number] | None = None


class EvidenceHarness(Strict):
    repository: Uri
    commit: Commit


class Evidence(Strict):
    logs: Artifact | None = None
    rawSamples: Artifact | None = None
    harness: EvidenceHarness | None = None


class BenchmarkRunSpec(Strict):
    implementationDigest: Digest
    workloadDigest: Digest
    protocolDigest: Digest
    environmentDigest: Digest
    status: RunStatusWord
    correctness: RunCorrectness | None = None
    timing: Timing | None = None
    measurements: list[RunMeasurement] | None = None
    sourceNative: SourceNative | None = None
    evidence: Evidence | None = None
    observedAt: Timestamp


class BenchmarkRun(Record):
    KIND = "BenchmarkRun"
    kind: Literal["BenchmarkRun"]
    spec: BenchmarkRunSpec


KERNEL_KINDS: tuple[type[Record], ...] = (
    OperationSpec,
    WorkloadCase,
    WorkloadSuite,
    SoftwareProject,
    ImplementationRevision,
    BenchmarkProtocol,
    ExecutionEnvironment,
    BenchmarkRun,
)
