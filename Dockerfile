# The sandproof mocks of TensorLake (port 8911) and OpenSandbox (port 8080) in one container.
#   docker build -t sandproof-mock .
#   docker run --rm -p 8911:8911 -p 8080:8080 -e SANDPROOF_ADMIN_TOKEN=choose-one sandproof-mock
# Off loopback the /_mock admin API needs a token: serve refuses to start without one.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

WORKDIR /opt/sandproof
COPY pyproject.toml README* ./
COPY mockserver ./mockserver
COPY contracts ./contracts
COPY harness ./harness
COPY sandproof ./sandproof
RUN pip install . \
    && useradd --system --no-create-home sandproof

USER sandproof
EXPOSE 8911 8080
HEALTHCHECK --interval=10s --timeout=3s --start-period=5s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8911/openapi.json', timeout=2)"
ENTRYPOINT ["sandproof"]
CMD ["serve", "--host", "0.0.0.0"]
