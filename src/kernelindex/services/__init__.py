"""Use cases: each one transaction, with the leader events and signatures it causes.

The CLI, the web and the runners call these; below them sit ingest, ranking and the harness
(which never open more than the one transaction a use case gives them, see
:class:`kernelindex.store.database.JoinedStore`).
"""
