FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -o /kbroker ./cmd/kbroker

FROM gcr.io/distroless/static-debian12
COPY --from=build /kbroker /kbroker
EXPOSE 9092 9644
VOLUME /var/lib/kbroker
ENTRYPOINT ["/kbroker", "--override", "listeners=PLAINTEXT://0.0.0.0:9092", "--override", "advertised.listeners=PLAINTEXT://localhost:9092", "--override", "log.dirs=/var/lib/kbroker", "--override", "http.listeners=http://0.0.0.0:9644"]
