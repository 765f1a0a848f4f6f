# The Durable Ralph worker (and starter) with Claude Code, for
# docker-compose.yml. Secrets such as ANTHROPIC_API_KEY come from the
# environment at run time; none are baked into the image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /out/worker ./cmd/worker && \
    CGO_ENABLED=0 go build -o /out/starter ./cmd/starter

FROM node:20-bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends git ca-certificates && \
    rm -rf /var/lib/apt/lists/* && \
    npm install -g @anthropic-ai/claude-code@2.1.329 && npm cache clean --force
COPY --from=build /out/worker /out/starter /usr/local/bin/
# Owned by the user the worker runs as, so that the named volumes
# docker-compose.yml mounts here start out writable by it.
RUN mkdir -p /workspaces /home/node/.claude && \
    chown node:node /workspaces /home/node/.claude
# Claude Code refuses --dangerously-skip-permissions as root, and an agent
# that edits code should not be root anyway.
USER node
ENV DISABLE_AUTOUPDATER=1 \
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1
WORKDIR /workspaces
# Prometheus metrics, when RALPH_WORKER_METRICS_ADDR is set (0.0.0.0:9464).
EXPOSE 9464
ENTRYPOINT ["worker"]
