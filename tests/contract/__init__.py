"""Test logic shared by CPython and Pyodide: each case takes a fresh port and asserts.

The CPython unit tests import these modules; the Pyodide tests send their source into
the browser and run the same cases against the browser's implementations.
"""
