"""Generated from proto/ by service/grpc_api/stubs.py; do not edit."""
