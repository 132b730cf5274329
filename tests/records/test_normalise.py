"""Tokens are normalised the same everywhere."""

from __future__ import annotations

from kernelindex.records.normalise import token


def test_tokens_are_clean():
    assert token("CUDA-Toolkit 13") == "cuda_toolkit_13" and token("13cuda") == "x_13cuda"
