"""HTTP plumbing every route shares: the answer cache, compression, security headers, input guards, cursors."""
