"""Search that answers: the query parser, bracketing and the answer the site, the API and the CLI share."""
