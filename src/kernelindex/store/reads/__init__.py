"""Reads: every SELECT the site, the API and the CLI share."""
