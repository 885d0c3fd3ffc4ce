"""Finding old memories: keyword (BM25 over our own term index), semantic, hybrid.

``text`` (analysis) is used by the sessions mirror to index every message; ``service``
answers queries. Import them by module: the mirror must not pull in the service.
"""
