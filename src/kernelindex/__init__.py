"""KernelIndex: the fastest correct implementation of a workload on given hardware, and how sure we are."""

__version__ = "0.1.0"
API_VERSION = "kernelindex.dev/v1alpha1"
