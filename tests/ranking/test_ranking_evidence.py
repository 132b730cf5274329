from kernelindex.ranking.evidence import evidence_level


def test_imported_runs_are_reported_and_passed_controlled_runs_verified():
    assert evidence_level({"source_kind": "leaderboard", "status": "passed"})[0] == "reported"
    assert evidence_level({"source_kind": "controlled", "status": "passed"})[0] == "verified"
    level, reasons = evidence_level({"source_kind": "controlled", "status": "timeout"})
    assert level == "reported" and "timeout" in reasons[0]
