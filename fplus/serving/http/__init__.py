"""Serving HTTP: gunicorn with gevent workers, limits on bodies and clients, CORS, TLS and a
local CA, JSON errors and documents, metrics, OpenAPI, ports, and the WebSocket under it."""
