"""The routes: HTML pages and their JSON twins, each calling one view from :mod:`kernelindex.views`."""
