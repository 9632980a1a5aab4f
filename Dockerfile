# A small, non-root image that runs the volsched operator (`volsched run`).
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml ./
COPY volsched ./volsched
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
RUN useradd --uid 10001 --no-create-home --shell /usr/sbin/nologin volsched
USER 10001:10001
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
EXPOSE 8080
ENTRYPOINT ["volsched"]
CMD ["run"]
