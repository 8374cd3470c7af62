"""The ``/_mock`` admin service every mock serves, and :class:`AdminClient`, its client over HTTP.

Import :mod:`mockserver.admin.routes` (Starlette) or :mod:`mockserver.admin.client` (httpx) for the parts;
this package itself loads neither.
"""
