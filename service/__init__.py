"""ONO 99 rules service: HTTP (Flask) and gRPC shells over one application layer."""
