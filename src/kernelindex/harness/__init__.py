"""The controlled harness: takes problems and solutions in the upstream file format, runs each
case in an isolated process against a reference computed elsewhere, checks for reward hacks,
times with spread and uncertainty, scores, and writes trace lines and KernelIndex records.

Entry points: `runner.evaluate`, `runner.write_traces`, `records.evaluation_records` (pure;
`ingest.evaluations.store_evaluation` stores what it builds). Problems and solutions are read by
`kernelindex.formats` (`problem.load_problem`, `solution.load_solution`).
"""
