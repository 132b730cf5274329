"""A typed Python client for a KernelIndex server's JSON API (/api/v1/), blocking and asyncio.

It talks HTTP only and imports nothing of the store or the site: the CLI's ``--server`` mode, the
MCP server and remote runners use it to read any deployment.
"""

from kernelindex.client.aio import AsyncClient
from kernelindex.client.endpoints import RunRecords, View
from kernelindex.client.errors import ApiError
from kernelindex.client.protocol import SERVER_ENV, Page
from kernelindex.client.signing import SignedRequests
from kernelindex.client.sync import Client

__all__ = ["ApiError", "AsyncClient", "Client", "Page", "RunRecords", "SERVER_ENV", "SignedRequests", "View"]
