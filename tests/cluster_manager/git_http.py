"""A throwaway smart-HTTP git server for tests and benches: ``git http-backend`` as CGI behind
the stdlib HTTP server, optional Basic auth and TLS, push allowed for authenticated users.
It counts the connections it accepts and the credentials it is sent."""

from __future__ import annotations

import base64
import os
import ssl
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        self._cgi()

    def do_POST(self) -> None:
        self._cgi()

    def _body(self) -> bytes:
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _user(self) -> str | None:
        auth = self.server.auth
        if auth is None:
            return "anonymous"
        header = self.headers.get("Authorization", "")
        if header:
            self.server.credentials_seen += 1
        if header.startswith("Basic "):
            user, _, password = base64.b64decode(header[6:]).decode().partition(":")
            if (user, password) == auth:
                return user
        return None

    def _cgi(self) -> None:
        body = self._body()
        user = self._user()
        if user is None:
            self._reply(401, {"WWW-Authenticate": 'Basic realm="git"'}, b"unauthorised\n")
            return
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.server.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "REMOTE_USER": user,
            "REMOTE_ADDR": self.client_address[0],
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "HTTP_CONTENT_ENCODING": self.headers.get("Content-Encoding", ""),
            "GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
        }
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True, check=False).stdout
        head, sep, payload = out.partition(b"\r\n\r\n")
        if not sep:
            head, _, payload = out.partition(b"\n\n")
        status, headers = 200, {}
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers[name] = value.strip()
        self._reply(status, headers, payload)

    def _reply(self, status: int, headers: dict[str, str], payload: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    root: Path
    auth: tuple[str, str] | None
    connections = 0
    credentials_seen = 0

    def verify_request(self, request: object, client_address: object) -> bool:
        self.connections += 1
        return True


class GitHttpServer:
    """Serves every repository under ``root`` at ``http://127.0.0.1:<port>/<name>``."""

    def __init__(self, root: Path, auth: tuple[str, str] | None = None,
                 tls: ssl.SSLContext | None = None, host: str = "127.0.0.1") -> None:
        self._server = _Server((host, 0), _Handler)
        self._server.root, self._server.auth = Path(root), auth
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.scheme, self.host = ("https" if tls else "http"), host
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base(self) -> str:
        return f"{self.scheme}://{self.host}:{self._server.server_address[1]}"

    @property
    def connections(self) -> int:
        """Connections accepted so far."""
        return self._server.connections

    @property
    def credentials_seen(self) -> int:
        """Requests that carried an ``Authorization`` header so far."""
        return self._server.credentials_seen

    def url(self, name: str, with_auth: bool = False) -> str:
        """URL of repository ``name``; ``with_auth`` embeds the credentials (for the git CLI)."""
        if with_auth and self._server.auth:
            user, password = self._server.auth
            return f"{self.scheme}://{user}:{password}@{self.base.split('://')[1]}/{name}"
        return f"{self.base}/{name}"

    def __enter__(self) -> GitHttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
