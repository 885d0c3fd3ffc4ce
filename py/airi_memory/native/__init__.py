"""CPython: the port implementations for a Python process (files, the duckdb package,
urllib) and the host that wires them (``host.open_native_system``)."""
