FROM python:3.12-slim
WORKDIR /app
COPY pyproject.toml README.md alembic.ini ./
COPY fable_core fable_core
COPY fable_mcp fable_mcp
COPY fable_web fable_web
COPY alembic alembic
RUN pip install --no-cache-dir -e . && useradd --create-home fable
USER fable
EXPOSE 8000
CMD ["fable", "serve", "--host", "0.0.0.0", "--port", "8000"]
