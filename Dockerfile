# kbroker's image: a static binary on distroless, running as the image's
# non-root user (65532). Configure it as the apache/kafka image: KAFKA_*
# environment variables are broker properties (cmd/kbroker --env-config),
# on top of docker/server.properties; see README "Running in a container".
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /kbroker ./cmd/kbroker && mkdir -p /data

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /kbroker /kbroker
COPY docker/server.properties /etc/kbroker/server.properties
COPY --from=build --chown=65532:65532 /data /var/lib/kbroker
USER 65532:65532
# 9092: Kafka clients; 9644: /metrics, /healthz, /readyz and the console;
# 8081: the Schema Registry; 8082: the REST proxy.
EXPOSE 9092 9644 8081 8082
VOLUME /var/lib/kbroker
ENTRYPOINT ["/kbroker", "/etc/kbroker/server.properties", "--env-config"]
