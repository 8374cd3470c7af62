"""The TensorLake mock's HTTP layer: thin routes that parse, call one model function and render.

* :mod:`.lifecycle` - the lifecycle API (both route trees);
* :mod:`.ingress` - the sandbox proxy's ASGI front door;
* :mod:`.management` - the in-sandbox management API (port 9501);
* :mod:`.admin` - the ``/_mock/tensorlake`` admin routes;
* :mod:`.echo` - the app a user port serves by default;
* :mod:`.common` - awaiting the model's waits, rendering answers and errors.

Each route object gets a narrow context (the few things it uses), never the whole mock.
"""
