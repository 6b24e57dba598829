# Fable's image: a wheel built from this checkout, installed with its dependencies into a venv
# in the build stage; the runtime stage gets that venv alone (no compiler, no pip cache, no
# source tree) and runs it as a user without privileges. docs/deployment.md, compose.yaml.
#   docker build -t fable .

FROM python:3.12-slim AS build
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
WORKDIR /src
# What the wheel is made of (the migrations, static files and templates are inside the packages)
COPY pyproject.toml README.md ./
COPY fable_core fable_core
COPY fable_mcp fable_mcp
COPY fable_web fable_web
RUN pip wheel --no-deps --wheel-dir /wheels .
# caldav's HTTP library brings urllib3-future, whose wheel overwrites urllib3 in place: built
# from source with these set, it installs beside urllib3 (as the Makefile does; docs/caldav.md)
RUN python -m venv /opt/fable \
 && URLLIB3_NO_OVERRIDE=1 PIP_NO_BINARY=urllib3-future /opt/fable/bin/pip install /wheels/fable-*.whl \
 && /opt/fable/bin/pip uninstall -y pip

FROM python:3.12-slim
# the same path as in the build stage: a venv's scripts name their interpreter by it
COPY --from=build /opt/fable /opt/fable
RUN groupadd --system --gid 10001 fable \
 && useradd --system --uid 10001 --gid 10001 --create-home fable \
 && mkdir /data && chown 10001:10001 /data
ENV PATH=/opt/fable/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    FABLE_DATA_DIR=/data \
    FABLE_HOST=0.0.0.0 \
    FABLE_PORT=8000
# numeric, so a runtime can tell it is not root without reading the image's /etc/passwd
USER 10001:10001
WORKDIR /home/fable
VOLUME /data
EXPOSE 8000
# 200 while this replica reaches its database; 503 otherwise and while it drains
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8000/api/health', timeout=4)"]
# SIGTERM drains: no new requests, in-flight calls finish within FABLE_SHUTDOWN_TIMEOUT
STOPSIGNAL SIGTERM
CMD ["fable", "serve", "--host", "0.0.0.0", "--port", "8000"]
