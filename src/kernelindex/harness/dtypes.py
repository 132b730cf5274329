"""The upstream dtype names, their torch dtypes and the short names KernelIndex records use.

torch is imported only inside functions: the format layer must load on machines (and in
processes) that never touch a tensor.
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


def torch_dtype(name: str):
    import torch

    return getattr(torch, DTYPES[name].torch_name)


def name_of(torch_dtype_value) -> str:
    """Upstream name of a torch dtype (for messages and checks)."""
    text = str(torch_dtype_value).removeprefix("torch.")
    for d in DTYPES.values():
        if d.torch_name == text:
            return d.name
    return text
