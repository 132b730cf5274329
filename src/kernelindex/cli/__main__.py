"""``python -m kernelindex.cli``: the same app as the ``kernelindex`` script."""

from kernelindex.cli import main

main()
