"""The query language's help: the description of ``GET /api/v1/search`` in the API reference."""

from __future__ import annotations

from kernelindex.search.query import MAX_QUERY_CHARS

QUERY_HELP = f"""One query language for the search page, this route and `kernelindex search`:

- words name operations (number, name, alias or family: `042`, `moe`, `scatter`, `moe_token_scatter_bwd`),
  else implementations, projects and authors (`ac4k`);
- `axis=value` pins a workload axis (`N=300`, `batch_seq_len=4096`; one letter stands for the axis it begins);
- a digest or 8+ hex digest prefix finds runs, workloads, implementations, operations and groups (`149b7c1a`);
- filters: a dtype (`bf16`), a GPU product (`H200`) or architecture (`sm_90`, `hopper`), an evidence level
  (`verified` means verified or better), `source:SLUG`, `license:TEXT`; `gpu:`, `arch:`, `dtype:`, `evidence:`
  and `op:` prefixes say the same explicitly.

Filters apply before cases are chosen. When a measured case has every pinned value, the answer is the best run
per evidence level in each of its comparison groups, with the group's rank table; otherwise the nearest measured
cases on each side of every differing axis (bracketing), and the suites that hold them. At most
{MAX_QUERY_CHARS} characters. Paths in `links` are permalinks relative to this site."""
