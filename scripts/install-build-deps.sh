#!/usr/bin/env bash
# What building Cairn needs beyond a Rust toolchain: protoc and protobuf's
# well-known .proto files (the etcd client of cluster mode compiles etcd's
# gRPC API at build time). Installed from Debian's packages when missing.
set -euo pipefail
if command -v protoc >/dev/null 2>&1 && [ -f /usr/include/google/protobuf/descriptor.proto ]; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "Cairn's build needs protoc and protobuf's include files (packages protobuf-compiler and libprotobuf-dev on Debian)" >&2
    exit 1
fi
sudo=""
if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends protobuf-compiler libprotobuf-dev
