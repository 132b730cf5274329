"""The upstream dtype names and the short names KernelIndex records use.

No torch here: the format layer loads on machines (and in processes) that never touch a tensor;
`harness.dtypes` maps these names to torch dtypes.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class DType:
    name: str  # as written in definition.json
    torch_name: str  # attribute of the torch module
    record_name: str  # as written in KernelIndex records (bf16, fp32, ...)
    kind: str  # float | int | bool | packed


DTYPES: dict[str, DType] = {
    d.name: d
    for d in (
        DType("float64", "float64", "fp64", "float"),
        DType("float32", "float32", "fp32", "float"),
        DType("float16", "float16", "fp16", "float"),
        DType("bfloat16", "bfloat16", "bf16", "float"),
        DType("float8_e4m3fn", "float8_e4m3fn", "fp8_e4m3fn", "float"),
        DType("float8_e5m2", "float8_e5m2", "fp8_e5m2", "float"),
        # fp4 has no arithmetic in torch: values are random bytes and are compared bit for bit.
        DType("float4_e2m1", "float4_e2m1fn_x2", "fp4_e2m1", "packed"),
        DType("float4_e2m1fn_x2", "float4_e2m1fn_x2", "fp4_e2m1fn_x2", "packed"),
        DType("int64", "int64", "int64", "int"),
        DType("int32", "int32", "int32", "int"),
        DType("int16", "int16", "int16", "int"),
        DType("int8", "int8", "int8", "int"),
        DType("bool", "bool", "bool", "bool"),
    )
}
