# A small, non-root image that runs the volsched operator (`volsched run`), with the metrics extra
# (the Prometheus and Elasticsearch usage sources).
#
# Pinned: the base image by its exact tag (the Python that constraints.txt was resolved for; add
# @sha256:<digest> from `docker buildx imagetools inspect` where the registry is reachable), and every
# Python package by constraints.txt (`make constraints` regenerates it). tests/unit/test_image.py
# checks that the two agree and that every import of the metrics sources is pinned.
FROM python:3.11.7-slim-bookworm AS build
WORKDIR /src
COPY constraints.txt pyproject.toml ./
COPY volsched ./volsched
# PIP_CONSTRAINT also pins the isolated build environment (setuptools, wheel).
ENV PIP_CONSTRAINT=/src/constraints.txt PIP_DISABLE_PIP_VERSION_CHECK=1
RUN pip install --no-cache-dir --prefix=/install '.[metrics]'

FROM python:3.11.7-slim-bookworm
COPY --from=build /install /usr/local
# The base image's build deletes every .pyc under /usr/local (the standard library ships as source), and
# the operator runs with PYTHONDONTWRITEBYTECODE as a user who cannot write there: each start compiled
# the ~170 standard library modules `volsched run` imports from source, about as much CPU again as the
# rest of its way to ready (docs/benchmarks, fourteenth pass, start-up). Compiled once here, as pip
# compiled the installed packages (about 15 MB). hack/image/bytecode.py checks, without Docker, that a start
# then compiles no module (docs/benchmarks, fifteenth pass, start-up).
RUN python -m compileall -q /usr/local/lib/python3.11
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin volsched
USER 10001:10001
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 8080
ENTRYPOINT ["volsched"]
CMD ["run"]
