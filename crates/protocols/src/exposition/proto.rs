//! The `io.prometheus.client` protobuf messages.
