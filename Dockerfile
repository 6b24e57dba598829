FROM python:3.12-slim
WORKDIR /app
# What the wheel is built from; the migrations are inside fable_core. Installed non-editable:
# the image runs the installed package, as any `pip install` does.
COPY pyproject.toml README.md ./
COPY fable_core fable_core
COPY fable_mcp fable_mcp
COPY fable_web fable_web
RUN URLLIB3_NO_OVERRIDE=1 PIP_NO_BINARY=urllib3-future pip install --no-cache-dir . && useradd --create-home fable
USER fable
EXPOSE 8000
CMD ["fable", "serve", "--host", "0.0.0.0", "--port", "8000"]
