# Central services image: config-store, git-server and cluster-manager, one image, each
# command its own entrypoint. Build from the repository root (`make images`):
#
#   docker build -t ghcr.io/fplus-edge-manager/central:0.1.0 .
#
# Run one service per container, e.g. `docker run IMAGE config-store serve --data-dir /data`;
# deploy/ has the Kubernetes manifests. Runs as uid/gid 65532 with a read-only root
# filesystem: mount /tmp and the data directory as volumes.

FROM python:3.11-slim-bookworm AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
COPY . .
RUN python -m venv /venv \
 && /venv/bin/pip install -c constraints.txt .

FROM python:3.11-slim-bookworm
# The Git server hands Git traffic to `git http-backend`.
RUN apt-get update \
 && apt-get install -y --no-install-recommends git=1:2.39.* \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /venv /venv
ENV PATH=/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HOME=/tmp
USER 65532:65532
EXPOSE 8700 8701 8702
CMD ["cluster-manager", "--help"]
