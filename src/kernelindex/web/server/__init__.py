"""The processes of ``kernelindex serve --workers N``: gunicorn's master and uvicorn workers."""
