"""moot's benchmarks against its peers: ``python -m bench [--quick] [--only NAME,...]``."""
