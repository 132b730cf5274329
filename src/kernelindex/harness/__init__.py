"""The controlled harness: reads problems and solutions in the upstream file format, runs each
case in an isolated process against a reference computed elsewhere, checks for reward hacks,
times with spread and uncertainty, scores, and writes trace lines and KernelIndex records.

Entry points: `formats.load_problem`, `formats.load_solution`, `runner.evaluate`,
`runner.write_traces`, `records.evaluation_records` (pure; `ingest.evaluations.store_evaluation`
stores what it builds), `records.problem_records`.
"""
