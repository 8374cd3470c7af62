"""The HTTP layer every mock shares; import its modules directly (this package loads nothing).

- :mod:`.middleware`: the request journal and fault injection, as ASGI wrappers; request notes.
- :mod:`.requests`: bounded body reading and JSON parsing.
- :mod:`.render`: :class:`~mockserver.core.errors.ApiError` as a JSON response.
- :mod:`.server`: :class:`MockServer`, uvicorn on a loopback socket in a thread.
"""
