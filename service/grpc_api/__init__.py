"""The gRPC API (package ono99.v1): servicers over the same application layer as HTTP."""
