"""The one query parser: each token read as exactly one thing, and refusals that say why."""

from __future__ import annotations

import pytest

from kernelindex.search.query import MAX_QUERY_CHARS, QueryError, parse, resolve_axis, word_score


def test_newcomer_query_is_read_into_words_axes_and_filters():
    q = parse("009 moe backward N=2048 bf16 H200 verified")
    assert q.words == ("009", "moe", "backward")
    assert [(a.name, a.value) for a in q.axes] == [("N", 2048)]
    assert q.dtypes == ("bf16",) and q.gpus == ("h200",) and q.evidence == "verified"
    assert not q.digests and not q.sources and q.has_filters


def test_problem_folder_name_is_split_into_words_with_synonyms():
    q = parse("moe_token_scatter_bwd N=300")
    assert q.words == ("moe", "token", "scatter", "backward")
    assert q.axes[0].value == 300 and q.axes[0].numeric


@pytest.mark.parametrize(
    "text, field, expected",
    [
        ("149b7c1a", "digests", ("149b7c1a",)),
        ("sha256:ABCDEF0123", "digests", ("abcdef0123",)),
        ("deadbeefcafe", "words", ("deadbeefcafe",)),  # hex letters only: a word, not a digest
        ("04200000", "words", ("04200000",)),  # digits only: an operation number, not a digest
        ("gfx942", "architectures", ("gfx942",)),
        ("hopper", "architectures", ("sm_90",)),
        ("sm90", "architectures", ("sm_90",)),
        ("MI300X", "gpus", ("mi300x",)),
        ("gpu:L40S", "gpus", ("l40s",)),
        ("float16", "dtypes", ("fp16",)),
        ("dtype:nvfp4", "dtypes", ("nvfp4",)),
        ("op:rms_norm", "words", ("rms", "normalization")),
        ("ac4k", "words", ("ac4k",)),
    ],
)
def test_single_tokens(text, field, expected):
    assert getattr(parse(text), field) == expected


def test_filters_with_keys_and_known_sources():
    q = parse(
        "license:Apache-2.0 source:SOL-ExecBench gpumode-kernelbot evidence:replicated", sources=["gpumode-kernelbot"]
    )
    assert q.license == "Apache-2.0" and q.sources == ("sol-execbench", "gpumode-kernelbot")
    assert q.evidence == "replicated" and not q.words
    assert parse("gpumode-kernelbot").words == ("gpumode", "kernelbot")  # unknown to the caller: words


def test_axis_values_keep_their_type():
    q = parse("S=2.5e3 dtype=bf16 K=8")
    assert [(a.name, a.value) for a in q.axes] == [("S", 2500), ("dtype", "bf16"), ("K", 8)]
    assert not q.axes[1].numeric


def test_hostile_and_invisible_characters_are_inert():
    q = parse("<script>alert(1)</script> ab\u200bcd \u202eevil N=1")
    assert "ab" in q.words and "cd" in q.words and all("\u200b" not in w and "\u202e" not in w for w in q.words)
    assert [(a.name, a.value) for a in q.axes] == [("N", 1)]


def test_long_queries_are_refused_and_many_tokens_are_capped():
    with pytest.raises(QueryError, match=str(MAX_QUERY_CHARS)):
        parse("x" * (MAX_QUERY_CHARS + 1))
    q = parse(" ".join(f"w{i}" for i in range(60)))
    assert len(q.words) == 40 and len(q.ignored) == 20


def test_empty_query():
    assert parse("   ").empty and not parse("N=1").empty


@pytest.mark.parametrize(
    "name, axes, expected",
    [
        ("N", ["batch_seq_len", "num_tokens", "hidden_dim", "ffn_dim"], "num_tokens"),
        ("B", ["batch_seq_len", "num_tokens", "hidden_dim", "ffn_dim"], "batch_seq_len"),
        ("S", ["batch_seq_len", "n_routed_experts", "num_experts_per_tok"], "batch_seq_len"),
        ("E", ["batch_seq_len", "n_routed_experts", "num_experts_per_tok"], None),  # two axes fit: ambiguous
        ("BATCH_SEQ_LEN", ["batch_seq_len"], "batch_seq_len"),
        ("Z", ["rows", "cols"], None),
    ],
)
def test_axis_letters_resolve_only_when_unambiguous(name, axes, expected):
    assert resolve_axis(name, axes) == expected


def test_word_score_counts_numbers_tokens_and_long_prefixes():
    tokens = {"042", "moe", "expert", "load", "balancing", "backward"}
    assert word_score(["042", "moe", "backward"], tokens, {"042"}) == 3
    assert word_score(["42"], tokens, {"042"}) == 1
    assert word_score(["bala"], tokens, {"042"}) == 1 and word_score(["ba"], tokens, {"042"}) == 0
    assert word_score(["009"], tokens, {"042"}) == 0


def test_filler_words_typed_alone_are_left_out():
    q = parse("best kernel for 042 on B200")
    assert q.words == ("042",) and q.gpus == ("b200",) and q.fillers == ("best", "kernel", "for", "on")
    assert parse("fastest kernels for moe_token_scatter_bwd").words == ("moe", "token", "scatter", "backward")
    assert "kernel" in parse("051_attention_qkv_with_qk_norm_single_kernel_backward").words  # inside a name: kept
    assert parse("op:kernel").words == ("kernel",) and not parse("op:kernel").fillers


def test_a_query_of_filler_alone_is_read_as_words():
    q = parse("the kernel")
    assert q.words == ("the", "kernel") and not q.fillers and not q.empty
    assert parse("kernels on H200").words == () and parse("kernels on H200").gpus == ("h200",)
