"""KernelBench documents read from their text: sizes, names, level, scaling and baselines (nothing run)."""

from __future__ import annotations

import pytest

from kernelindex.formats.kernelbench import (
    KernelBenchError,
    baseline_variant,
    parse_baselines,
    parse_problem,
    scale_problem,
    scaled_size,
)

PROBLEM = '''import torch
import torch.nn as nn


class Model(nn.Module):
    """Doc of the model."""

    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size)

    def forward(self, x):
        return self.conv(x)


batch_size = 16
in_channels = 64
out_channels = 2048 * 2
height, width = 127, 256
kernel_size = 3
area = height * width
eps = 1e-5
raise_if_run = None


def get_inputs():
    return [torch.rand(batch_size, in_channels, height, width)]


def get_init_inputs():
    return [in_channels, out_channels, kernel_size]
'''


def test_sizes_names_and_level_come_from_the_syntax_tree():
    problem = parse_problem(PROBLEM, "KernelBench/level2/12_Conv2d_Thing_.py")
    assert problem.level == 2 and problem.number == 12 and problem.name == "kernelbench-l2-12-conv2d-thing"
    assert problem.size_values == {
        "batch_size": 16,
        "in_channels": 64,
        "out_channels": 4096,
        "height": 127,
        "width": 256,
        "kernel_size": 3,
        "area": 127 * 256,
    }
    assert [s.name for s in problem.sizes if not s.root] == ["area"]
    assert problem.forward_args == ("x",) and problem.init_args == ("in_channels", "out_channels", "kernel_size")
    assert problem.docstring == "Doc of the model."


def test_scaling_rewrites_root_sizes_keeps_small_ones_and_lets_derived_ones_follow():
    scaled = scale_problem(parse_problem(PROBLEM, "level2/12_Conv2d_Thing_.py"), 0.1)
    values = scaled.size_values
    assert values["kernel_size"] == 3 and values["batch_size"] == 8 and values["in_channels"] == 8
    assert values["out_channels"] == 512 and values["height"] == 13 and values["width"] == 32
    assert values["area"] == 13 * 32  # the file computes it from the scaled sizes
    assert scaled.scaled_from["out_channels"] == 4096 and "kernel_size" not in scaled.scaled_from
    assert "eps = 1e-5" in scaled.text and "def get_inputs" in scaled.text
    assert scale_problem(parse_problem(PROBLEM, "a.py"), 1.0).text == PROBLEM


@pytest.mark.parametrize("value", [0.0, -1.0, 1.5, float("nan")])
def test_a_scale_outside_0_1_is_refused(value):
    with pytest.raises(KernelBenchError, match="scale must lie in"):
        scale_problem(parse_problem(PROBLEM, "a.py"), value)


def test_scaled_sizes_keep_powers_of_two_and_multiples_of_eight_and_never_drop_below_small():
    # 8200 and 393216 are multiples of 8 but no powers of two; 9 and 127 neither; 16 and 9 hit the floor
    assert [scaled_size(v, 0.1) for v in (8, 16, 1024, 4096, 127, 9, 8200, 393216)] == [
        8,
        8,
        128,
        512,
        13,
        8,
        816,
        39320,
    ]


def test_a_power_of_two_scaled_below_one_is_held_at_small():
    assert [scaled_size(v, 0.01) for v in (64, 16, 32768)] == [8, 8, 256]


def test_a_power_of_two_group_count_still_divides_its_power_of_two_channels_at_every_scale():
    """GroupNorm(256, 8192) scaled by 0.05: rounding both to multiples of 8 gave 16 groups of 408 features."""
    for factor in (0.01, 0.03, 0.05, 0.1, 0.25, 0.5):
        groups, features = scaled_size(256, factor), scaled_size(8192, factor)
        assert features % groups == 0, (factor, groups, features)


QUIRKS = """import torch
import torch.nn as nn


class Model(nn.Module):
    def forward(self, x):
        return x


batch_size = 4096
depth = 10; height = width = 256  # one line, two statements, a chained assignment
input_shape = (32768,)
kernel_size = (3, 11)
pool = [2, 640]


def get_inputs():
    return [torch.rand(batch_size, depth, height, width, *input_shape)]


def get_init_inputs():
    return []
"""


def test_sizes_on_a_shared_line_chained_and_in_shape_literals_are_read_and_scaled():
    problem = parse_problem(QUIRKS, "level1/5_Quirks.py")
    assert problem.size_values == {"batch_size": 4096, "depth": 10, "height": 256, "width": 256}
    scaled = scale_problem(problem, 0.05)
    assert scaled.size_values == {"batch_size": 256, "depth": 8, "height": 16, "width": 16}
    assert "depth = 8; height = width = 16  # one line, two statements, a chained assignment\n" in scaled.text
    assert "input_shape = (2048,)\n" in scaled.text and "pool = [2, 32]\n" in scaled.text
    assert "kernel_size = (3, 8)\n" in scaled.text  # above SMALL, so scaled, but never below it
    assert scaled.scaled_from == {
        "batch_size": 4096,
        "depth": 10,
        "height": 256,
        "width": 256,
        "input_shape[0]": 32768,
        "kernel_size[1]": 11,
        "pool[1]": 640,
    }


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("x = (", "not valid Python"),
        ("def get_inputs(): pass\ndef get_init_inputs(): pass\n", "defines no class Model"),
        ("class Model:\n    def forward(self): pass\ndef get_inputs(): pass\n", "no module-level get_init_inputs"),
        ("class Model:\n    pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n", "no forward method"),
    ],
)
def test_what_is_not_a_problem_file_is_refused_by_file_and_reason(text, reason):
    with pytest.raises(KernelBenchError, match=reason) as caught:
        parse_problem(text, "level1/5_Bad.py")
    assert caught.value.file == "level1/5_Bad.py"


def test_baselines_parse_with_their_variant():
    data = {
        "level3": {
            "4_LeNet5.py": {
                "mean": 1.5,
                "std": 0.1,
                "min": 1.4,
                "max": 2.0,
                "num_trials": 100,
                "hardware": "NVIDIA H100",
                "device": "cuda:0",
            }
        }
    }
    (entry,) = parse_baselines(data, "b.json")
    assert (entry.level, entry.number, entry.name, entry.hardware) == (3, 4, "kernelbench-l3-4-lenet5", "NVIDIA H100")
    assert baseline_variant("baseline_time_torch.json") == "torch"
    assert baseline_variant("baseline_time_torch_compile_cudagraphs.json") == "torch.compile cudagraphs"
    for bad in (
        {"level3": {"notes.txt": {}}},
        {"level3": {"4_LeNet5.py": {**data["level3"]["4_LeNet5.py"], "std": -1}}},
    ):
        with pytest.raises(KernelBenchError):
            parse_baselines(bad, "b.json")
