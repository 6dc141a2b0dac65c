# gpuplan as a container: a static (musl) binary on distroless, nothing else. The catalog is
# compiled in, so `docker run ghcr.io/OWNER/gpuplan check /plans/plan.toml` works offline.
# Build: docker build -t gpuplan .
FROM rust:1.94.1-alpine AS build
RUN apk add --no-cache musl-dev
WORKDIR /src
COPY . .
RUN cargo build --release --locked
RUN cp target/release/gpuplan /gpuplan && /gpuplan --version

# distroless/static: CA certificates and /tmp for the live clients, no shell, a non-root user.
FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /gpuplan /usr/local/bin/gpuplan
WORKDIR /work
ENTRYPOINT ["/usr/local/bin/gpuplan"]
CMD ["--help"]
