"""Use cases: what the CLI, the site and the API do, each in one transaction."""
