"""The rerun queue: its tables (runner keys, requests, leases) and the writes that move a request."""
