"""gRPC speed: the Apply call against a bare grpcio echo of a message of the same size.

    python benchmarks/bench_grpc.py [--seconds 2] [--rounds 5] [--clients 16] [--baseline CHECKOUT]

Both servers run in their own process with the same settings (grpc.aio, message
limits, keepalive), on loopback, measured in interleaved rounds in the same run (the
best round of each counts for calls/s, p50 and p99: the machine is noisy); the same
client (one asyncio channel with --clients concurrent callers, raw bytes) loads them. The echo is a grpcio service
written the usual way: it receives the same ApplyRequest message (parsed by protobuf)
and returns it (serialized).

Apply is measured three ways:

- ``apply``: each caller plays whole games as a stateless client does, sending back the
  state the previous answer gave it (the requests are made beforehand, so the client
  does no more work per call than for the echo; the run first checks that the server's
  answers are those very states). The server recognizes the states it returned
  (ONO99_GRPC_STATE_CACHE_BYTES) and does not decode them again; the first call of each game
  carries a state it never returned.
- ``apply_cold``: the same request over and over, whose state the server never
  returned: every call decodes and validates the state in full.
- ``apply_warm``: the same request over and over, whose state the server returned
  (its answer to the cold request, sent again before each warm run, since the games may
  have pushed it out of the server's states): every call does a games-flow call's work,
  the state recalled, applied and the answer written from it. Around each warm run the
  server's metrics must show every call recalled and no state decoded (a ``--baseline``
  checkout without that metric is measured unchecked, as a printed note says). Its
  message is another than the echo's, of about the same size (its state is the cold
  answer's).

The load generator is printed first. The Python client shares the two cores with the
servers; where ``h2load`` (Debian ``nghttp2-client``) is installed, the fixed-request
targets (echo, apply_cold and apply_warm) are also loaded by it, a client in C that sends
the gRPC frames over HTTP/2 (``h2load_*`` figures; it cannot follow games, so ``apply`` is
the Python client's only, and ``apply_warm`` stands for the games flow under h2load).

With ``--baseline CHECKOUT`` (another checkout of this repository, a worktree of an
earlier commit, say), that checkout's server is measured in the same rounds under the
same client: ``apply_baseline``, ``apply_cold_baseline`` and ``apply_warm_baseline``, and
their ratios against the same echo (``ratio_apply_baseline``, ...).

Beside calls/s, each target's server CPU a call (``…_server_cpu_us``: the server process's
user and system time over a round, all its threads, from Linux's /proc, over the calls
answered; the median of the rounds, so not always the best round's) and the ratios by
it, the echo's CPU a call over the target's (``cpu_ratio_…``, ``h2load_cpu_ratio_…``;
benchmarks/cpu.py): the server's own cost, without the client's share of the cores.
Where /proc cannot tell, every CPU figure is null.

The last line is one JSON object: ``ratio_apply`` is apply/echo, ``ratio_apply_cold``
apply_cold/echo, ``ratio_apply_warm`` apply_warm/echo (the Python client's), and
``h2load_ratio_apply_cold`` and ``h2load_ratio_apply_warm`` the same under h2load.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import argparse  # noqa: E402
import asyncio  # noqa: E402
import itertools  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import random  # noqa: E402
import re  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import struct  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import urllib.request  # noqa: E402
from typing import Any  # noqa: E402

import grpc  # noqa: E402

from benchmarks.bench_http import checkout  # noqa: E402
from benchmarks.cpu import best, cpu_ratio, with_cpu  # noqa: E402
from engine import apply, decode_state, legal_actions, new_game  # noqa: E402
from service.grpc_api import convert  # noqa: E402
from service.grpc_api.gen import ono99_pb2 as pb  # noqa: E402
from service.ports import free_port  # noqa: E402


def start(args: list[str], port: int, root: Path = ROOT) -> subprocess.Popen[bytes]:
    proc = subprocess.Popen([sys.executable, *args], cwd=root, env={**os.environ, "PYTHONPATH": str(root),
                                                                   "ONO99_LOG_LEVEL": "warning",
                                                                   "ONO99_METRICS_PORT": "0"})
    grpc.channel_ready_future(grpc.insecure_channel(f"127.0.0.1:{port}")).result(timeout=30)
    return proc


def load(port: int, seconds: float, clients: int, method: str, sequences: list[list[bytes]]) -> dict[str, float]:
    """``clients`` concurrent callers on one asyncio client (light on the shared CPU),
    each calling ``method`` back to back for ``seconds`` with the serialized requests of
    one of ``sequences``, in order and round again."""

    async def run() -> list[float]:
        latencies: list[float] = []
        async with grpc.aio.insecure_channel(f"127.0.0.1:{port}") as channel:
            call = channel.unary_unary(method)  # raw bytes both ways: no client-side (de)serializing
            await call(sequences[0][0], timeout=10)  # warm the connection
            stop = time.monotonic() + seconds

            async def caller(sequence: list[bytes]) -> None:
                while True:
                    for request in sequence:
                        if time.monotonic() >= stop:
                            return
                        t = time.perf_counter()
                        await call(request, timeout=10)
                        latencies.append(time.perf_counter() - t)

            await asyncio.gather(*(caller(sequences[i % len(sequences)]) for i in range(clients)))
        return latencies

    began = time.monotonic()
    flat = sorted(asyncio.run(run()))
    elapsed = time.monotonic() - began
    return {"calls_per_s": round(len(flat) / elapsed, 1), "p50_ms": round(statistics.median(flat) * 1000, 2),
            "p99_ms": round(flat[int(len(flat) * 0.99) - 1] * 1000, 2), "calls": len(flat)}


def h2load_load(h2load: str, port: int, method: str, body: Path, seconds: float, clients: int) -> dict[str, float]:
    """One h2load run: one HTTP/2 connection with ``clients`` concurrent streams, each
    sending the gRPC frame in ``body`` to ``method`` for ``seconds``. Every answer must be
    a 200 (a gRPC error would be one too: the request was checked beforehand)."""
    with tempfile.TemporaryDirectory() as tmp:
        log_file = Path(tmp) / "requests.log"
        done = subprocess.run([h2load, "-D", str(max(1, round(seconds))), "-c", "1", "-m", str(clients),
                               "-H", "content-type: application/grpc", "-H", "te: trailers", "-d", str(body),
                               "--log-file", str(log_file), f"http://127.0.0.1:{port}{method}"],
                              capture_output=True, text=True, check=True)
        rows = [line.split("\t") for line in log_file.read_text().splitlines()]
    found = re.search(r"finished in ([0-9.]+)s, ([0-9.]+) req/s", done.stdout)
    failed = re.search(r"(\d+) failed, (\d+) errored", done.stdout)
    if found is None or failed is None or any(row[1] != "200" for row in rows) or failed.group(1) != "0":
        raise SystemExit(f"h2load: failed requests\n{done.stdout}")
    latencies = sorted(int(row[2]) for row in rows)
    return {"calls_per_s": round(float(found.group(2)), 1), "p50_ms": round(latencies[len(latencies) // 2] / 1000, 2),
            "p99_ms": round(latencies[int(len(latencies) * 0.99) - 1] / 1000, 2), "calls": len(latencies)}


def grpc_frame(message: bytes) -> bytes:
    """A gRPC message as it goes in an HTTP/2 body: not compressed, its length, itself."""
    return b"\x00" + struct.pack(">I", len(message)) + message


def apply_request() -> pb.ApplyRequest:
    """A 4-player 2022 state a third of the way in, with a legal action."""
    rng = random.Random(3)
    state, _ = new_game({"edition": "2022"}, ["ann", "bob", "cy", "dee"], seed=11)
    for _ in range(15):
        state, _ = apply(state, rng.choice(legal_actions(state)))
    return pb.ApplyRequest(state=pb.SignedState(state=convert.state_message(state)),
                           action=convert.action_message(legal_actions(state)[0]))


def game_requests(games: int, seed: int) -> list[bytes]:
    """The Apply requests of random 4-player 2022 games, each carrying the state that
    the answer to the one before holds."""
    rng = random.Random(seed)
    requests = []
    for g in range(games):
        state, _ = new_game({"edition": "2022"}, ["ann", "bob", "cy", "dee"], seed=seed * 1000 + g)
        while state.status == "playing":
            action = rng.choice(legal_actions(state))
            request = pb.ApplyRequest(action=convert.action_message(action))
            convert.fill_state(request.state.state, state)
            requests.append(request.SerializeToString())
            state, _ = apply(state, action)
    return requests


def check_flow(port: int, sequence: list[bytes]) -> None:
    """The server's answers carry exactly the states the next requests send back."""
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/ono99.v1.GameService/Apply", response_deserializer=pb.ApplyResponse.FromString)
        for request, following in itertools.pairwise(sequence):
            answer = call(request, timeout=10).state.state
            if answer.status == pb.GAME_STATUS_OVER:
                continue  # the next request starts another game
            sent_back = pb.ApplyRequest.FromString(following).state.state
            if answer.SerializeToString() != sent_back.SerializeToString():
                sys.exit("benchmark error: an answer is not the state the next request sends back")



def state_counts(metrics_port: int) -> dict[str, float] | None:
    """The server's counts of the states sent to it that it recalled and that it decoded
    (ono99_grpc_states_total); None when it has no such metric (a checkout from before
    it kept the states it returned)."""
    text = urllib.request.urlopen(f"http://127.0.0.1:{metrics_port}/metrics", timeout=10).read().decode()
    found = dict(re.findall(r'^ono99_grpc_states_total\{source="(recalled|decoded)"\} (\S+)$', text, re.M))
    return {source: float(found.get(source, 0.0)) for source in ("recalled", "decoded")} if found else None


def warm_request(port: int, cold: bytes) -> bytes:
    """An Apply request whose state the server at ``port`` returned (its answer to
    ``cold``), with a legal action: each call does a games-flow call's work (the state
    recalled, not decoded), though it is the same call every time."""
    returned = apply_once(port, cold).state
    state = decode_state(convert.state_doc(returned.state))
    return pb.ApplyRequest(state=returned, action=convert.action_message(legal_actions(state)[0])).SerializeToString()


def apply_once(port: int, request: bytes) -> pb.ApplyResponse:
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        call = channel.unary_unary("/ono99.v1.GameService/Apply", response_deserializer=pb.ApplyResponse.FromString)
        answer: pb.ApplyResponse = call(request, timeout=10)
        return answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one measuring round")
    parser.add_argument("--rounds", type=int, default=5,
                        help="rounds per target, interleaved; the best counts for calls/s, the median for CPU")
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="another checkout whose server is measured in the same rounds")
    args = parser.parse_args()
    if args.baseline:
        checkout(args.baseline)  # before any server starts
    h2load = shutil.which("h2load")
    print("load: a Python asyncio client (one channel, --clients concurrent calls)"
          + (", and h2load for the fixed requests" if h2load else
             "; h2load not found (Debian: apt-get install nghttp2-client): no h2load figures"), flush=True)
    raw = apply_request().SerializeToString()
    frames = Path(tempfile.mkdtemp(prefix="ono99-grpc-"))
    games = [game_requests(8, seed=c + 1) for c in range(args.clients)]
    game_bytes = [len(r) for g in games for r in g]
    apply_method = "/ono99.v1.GameService/Apply"
    echo_port, service_port, baseline_port = free_port(), free_port(), free_port()
    metrics = {service_port: free_port(), baseline_port: free_port()}  # to check that warm calls are recalled
    service = ["-m", "service.cli", "grpc", "--no-sessions", "--grpc-port"]
    servers = [start([str(ROOT / "benchmarks" / "bare_grpc.py"), str(echo_port)], echo_port),
               start([*service, str(service_port), "--metrics-port", str(metrics[service_port])], service_port)]
    if args.baseline:
        servers.append(start([*service, str(baseline_port), "--metrics-port", str(metrics[baseline_port])],
                             baseline_port, args.baseline.resolve()))
    pid_of = {echo_port: servers[0].pid, service_port: servers[1].pid}  # whose CPU a call is measured
    if args.baseline:
        pid_of[baseline_port] = servers[2].pid
    try:
        check_flow(service_port, games[0])
        # name: (port, method, the callers' request sequences)
        targets = {"echo": (echo_port, "/bench.Echo/Echo", [[raw]]), "apply": (service_port, apply_method, games),
                   "apply_cold": (service_port, apply_method, [[raw]]),
                   "apply_warm": (service_port, apply_method, [[warm_request(service_port, raw)]])}
        if args.baseline:
            targets.update(apply_baseline=(baseline_port, apply_method, games),
                           apply_cold_baseline=(baseline_port, apply_method, [[raw]]),
                           apply_warm_baseline=(baseline_port, apply_method, [[warm_request(baseline_port, raw)]]))
            if state_counts(metrics[baseline_port]) is None:
                print(f"note: {args.baseline} counts no recalled states: its warm figure is not checked", flush=True)
        rounds: dict[str, list[dict[str, float]]] = {name: [] for name in targets}
        bodies: dict[str, Path] = {}
        if h2load:  # it sends one fixed request: the targets that have one, not the games
            for name, (_, _, sequences) in targets.items():
                if len(sequences) == 1 and len(sequences[0]) == 1:
                    bodies[name] = frames / f"{name}.bin"
                    bodies[name].write_bytes(grpc_frame(sequences[0][0]))
                    rounds[f"h2load_{name}"] = []
        for r in range(args.rounds):
            for name, (port, method, sequences) in targets.items():
                warm = name.startswith("apply_warm")
                if warm:
                    # The games may have pushed the warm state out of the server's states;
                    # its answer to the cold request is that state again.
                    apply_once(port, raw)
                    before = state_counts(metrics[port])
                rounds[name].append(with_cpu(pid_of[port], load, port, args.seconds, args.clients, method, sequences,
                                             children=False, count="calls"))
                calls = rounds[name][-1]["calls"]
                if name in bodies:
                    rounds[f"h2load_{name}"].append(with_cpu(pid_of[port], h2load_load, h2load, port, method,
                                                             bodies[name], args.seconds, args.clients,
                                                             children=False, count="calls"))
                    calls += rounds[f"h2load_{name}"][-1]["calls"]
                if warm and before is not None:
                    after = state_counts(metrics[port])
                    assert after is not None
                    if after["decoded"] != before["decoded"] or after["recalled"] - before["recalled"] < calls:
                        sys.exit(f"benchmark error: {name}: the server decoded states it should have recalled "
                                 f"({after['decoded'] - before['decoded']:.0f} decoded)")
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{name} {max(x['calls_per_s'] for x in rs):,.0f} calls/s" for name, rs in rounds.items())
                + " (best so far)", flush=True)
    finally:
        for server in servers:
            server.terminate()
            server.wait()
    results = {name: best(rs, "calls_per_s") for name, rs in rounds.items()}
    for name, r in results.items():
        cpu = "" if r["cpu_us"] is None else f"  server CPU {r['cpu_us']:,.0f} µs a call"
        print(f"{name:>19}: {r['calls_per_s']:>8,.0f} calls/s  p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms{cpu}")
    figures: dict[str, Any] = {f"{name}_{'server_cpu_us' if k == 'cpu_us' else k}": v
                               for name, r in results.items() for k, v in r.items()}
    figures["message_bytes"] = len(raw)
    figures["apply_message_bytes_mean"] = round(statistics.mean(game_bytes))
    kinds = ("apply", "apply_cold", "apply_warm")
    for name in kinds:
        figures[f"ratio_{name}"] = round(results[name]["calls_per_s"] / results["echo"]["calls_per_s"], 3)
    # The same by the server's CPU a call: the echo's over the target's.
    for name in results:
        client, kind = ("h2load_", name.removeprefix("h2load_")) if name.startswith("h2load_") else ("", name)
        if kind != "echo":
            figures[f"{client}cpu_ratio_{kind}"] = cpu_ratio(results[name]["cpu_us"],
                                                            results[f"{client}echo"]["cpu_us"])
    if args.baseline:
        for name in kinds:
            figures[f"ratio_{name}_baseline"] = round(
                results[f"{name}_baseline"]["calls_per_s"] / results["echo"]["calls_per_s"], 3)
        print(f"baseline {args.baseline}: apply/echo {figures['ratio_apply_baseline']} (games), "
              f"{figures['ratio_apply_cold_baseline']} (cold), {figures['ratio_apply_warm_baseline']} (warm)")
    figures["load_generator"] = "python asyncio client" + (" and h2load" if h2load else "")
    if h2load:
        for name in [k for k in results if k.startswith("h2load_apply")]:
            figures[f"h2load_ratio_{name.removeprefix('h2load_')}"] = round(
                results[name]["calls_per_s"] / results["h2load_echo"]["calls_per_s"], 3)
        print("h2load: ratio apply/echo " + ", ".join(
            f"{figures[f'h2load_ratio_{name}']} ({name.removeprefix('apply_').replace('_', ' ')})"
            for name in ("apply_cold", "apply_warm", "apply_cold_baseline", "apply_warm_baseline")
            if f"h2load_ratio_{name}" in figures))
    print(f"echo message {len(raw)} bytes; game requests {figures['apply_message_bytes_mean']} bytes on average")
    print(f"ratio apply/echo {figures['ratio_apply']} (games), {figures['ratio_apply_cold']} (cold), "
          f"{figures['ratio_apply_warm']} (warm)")
    if figures.get("cpu_ratio_apply") is not None:
        print("by server CPU a call (the echo's over Apply's): " + ", ".join(
            f"{name} {value}" for name, value in figures.items() if "cpu_ratio_" in name))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
