"""The baseline of benchmarks/bench_http.py: a bare Flask endpoint that parses and returns a JSON body."""

from flask import Flask, jsonify, request

app = Flask("bare")


@app.post("/echo")
def echo():  # type: ignore[no-untyped-def]
    """Parse the JSON body and send it back."""
    return jsonify(request.get_json())
