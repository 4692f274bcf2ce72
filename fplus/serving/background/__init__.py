"""Work off the request path: periodic loops, and blocking calls moved off the gevent hub."""
