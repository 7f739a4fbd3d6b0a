# The image the Helm chart (deploy/helm/kubectl-gitdrift) runs: kubectl-gitdrift with git, kubectl
# (for `kubectl kustomize`) and helm, as a non-root user on a read-only root filesystem.
# Python wheels come only from dist.lock (pip --require-hashes), the same wheels `make dist` puts
# in the krew archives, so an image built from a release's sources carries that release's wheels.
#
#   docker build -t kubectl-gitdrift:0.1.0 .
#   docker build --build-arg KUBECTL_VERSION=v1.33.1 --build-arg HELM_VERSION=v3.18.4 ...
ARG PYTHON_VERSION=3.12

FROM python:${PYTHON_VERSION}-slim-bookworm AS tools
ARG TARGETARCH=amd64
ARG KUBECTL_VERSION=v1.33.1
ARG HELM_VERSION=v3.18.4
RUN apt-get update && apt-get install -y --no-install-recommends ca-certificates curl \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /tmp/tools
# Both binaries are checked against the checksums their projects publish.
RUN curl -fsSLO "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${TARGETARCH}/kubectl" \
 && curl -fsSL "https://dl.k8s.io/release/${KUBECTL_VERSION}/bin/linux/${TARGETARCH}/kubectl.sha256" \
    | sed 's/$/  kubectl/' | sha256sum -c - \
 && install -m 0755 kubectl /usr/local/bin/kubectl \
 && curl -fsSLO "https://get.helm.sh/helm-${HELM_VERSION}-linux-${TARGETARCH}.tar.gz" \
 && curl -fsSL "https://get.helm.sh/helm-${HELM_VERSION}-linux-${TARGETARCH}.tar.gz.sha256sum" \
    | sha256sum -c - \
 && tar -xzf "helm-${HELM_VERSION}-linux-${TARGETARCH}.tar.gz" \
 && install -m 0755 "linux-${TARGETARCH}/helm" /usr/local/bin/helm

FROM python:${PYTHON_VERSION}-slim-bookworm AS build
ARG TARGETARCH=amd64
WORKDIR /src
COPY dist.lock pyproject.toml README.md LICENSE ./
COPY tools/lock_requirements.py tools/
COPY kubectl_gitdrift kubectl_gitdrift
RUN python=cp$(python -c 'import sys; print(f"{sys.version_info[0]}{sys.version_info[1]}")') \
 && python tools/lock_requirements.py --tools "linux-${TARGETARCH}" "$python" > tools.txt \
 && python tools/lock_requirements.py "linux-${TARGETARCH}" "$python" > requirements.txt \
 && python -m venv /opt/gitdrift \
 && /opt/gitdrift/bin/pip install --no-cache-dir --require-hashes --no-deps -r tools.txt \
 && /opt/gitdrift/bin/pip install --no-cache-dir --require-hashes --no-deps --only-binary=:all: \
      -r requirements.txt \
 && /opt/gitdrift/bin/pip install --no-cache-dir --no-deps --no-build-isolation . \
 && /opt/gitdrift/bin/kubectl-gitdrift version

FROM python:${PYTHON_VERSION}-slim-bookworm
RUN apt-get update \
 && apt-get install -y --no-install-recommends git openssh-client ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 gitdrift \
 && useradd --uid 65532 --gid 65532 --home-dir /tmp/home --no-create-home gitdrift
COPY --from=tools /usr/local/bin/kubectl /usr/local/bin/helm /usr/local/bin/
COPY --from=build /opt/gitdrift /opt/gitdrift
ENV PATH=/opt/gitdrift/bin:$PATH \
    HOME=/tmp/home \
    KUBECTL_GITDRIFT_CACHE_DIR=/var/cache/gitdrift \
    GIT_TERMINAL_PROMPT=0 \
    PYTHONDONTWRITEBYTECODE=1
USER 65532:65532
ENTRYPOINT ["kubectl-gitdrift"]
CMD ["--help"]
