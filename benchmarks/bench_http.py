"""HTTP speed: POST /v1/games/apply and a session action against bare Flask endpoints.

    python benchmarks/bench_http.py [--seconds 3] [--rounds 3] [--clients 8] [--workers 2] [--client wrk|python]
                                    [--baseline CHECKOUT]

Both apps run under gunicorn with the same settings (the service's gevent workers, keep-alive), on
loopback; the four targets are measured in interleaved rounds in the same run (the
best round of each counts for req/s, p50 and p99: the machine is noisy). The bare
endpoint parses and returns the same JSON body as the apply request. Session actions
are real moves: each client plays its own sessions, move after legal move, its games
known through the (deterministic) engine. They are held against the bare echo and against a floor that does a session
action's Redis work and nothing else (benchmarks/bare_flask.py, ``/floor``: one read of
the session's fields, one run of the service's compare-and-set script with a state of
the same size, an answer of the same size), each connection on a session of its own.
Beside req/s, each target's worker CPU a request (``…_worker_cpu_us``: the user and system
time of the gunicorn workers over a round, from Linux's /proc, divided by the requests
answered; the median of the rounds, so not always the best round's) and the same ratios
by it (``cpu_ratio_…``, the floor's CPU a request over the target's; benchmarks/cpu.py).
It counts the workers only: Redis's work for a session action and for the floor is the
same, so it shows the service's own share of a session action more plainly than req/s,
in which Redis, wrk and the kernel's loopback weigh the same for both. Under the Python
client the session action has none (its client makes and reads its sessions within the
round, which the workers' CPU would carry); where /proc cannot tell, every CPU figure is
null.
The best-of-rounds ratios are printed again round by round (``ratio_apply_by_round``,
``ratio_session_action_vs_redis_floor_by_round``, each round's target over its floor in
that round, and their ``…_median_round``): their spread says how much one run's figure
can move.
The last line printed is one JSON object.

The load comes from wrk (Debian package ``wrk``; ``--client wrk``, the default) with
benchmarks/wrk_http.lua: a client in C that costs the shared two cores far less per
request than a Python one, which would otherwise take a share of the CPU that grows as
the server gets faster and so flatten the ratios. wrk runs as many threads as
connections (``--clients``), one connection each, for all three targets, for whole
seconds (``--seconds`` rounded). The bare endpoint and apply get the same POST over and
over. wrk cannot follow a game, so before each round the session moves are made in
advance (untimed): per connection, sessions are created and their games played through
with the engine to the end, each move recorded as a request with its seat's token; the
Lua script sends a connection's moves in order, the next only after the answer to the
last. Without wrk, or with ``--client python``, the Python client loads all three
(threads on persistent connections, sharing the cores with the servers, equally for all
three), as a printed note says.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.cpu import best, cpu_ratio, with_cpu  # noqa: E402
from engine import apply, decode_state, encode_state, format_action, legal_actions, new_game  # noqa: E402
from service import http_server  # noqa: E402
from service.config import Settings  # noqa: E402
from service.ports import free_port  # noqa: E402

SERVICE_KEY = "bench-service-key"


def checkout(root: Path) -> None:
    """Stop unless a server started in ``root`` would import its own engine and service
    (this environment's editable install supplies them from this checkout to a folder
    that has none, so a wrong --baseline would measure this checkout again)."""
    found = subprocess.run([sys.executable, "-c", "import engine, service; print(engine.__file__); "
                            "print(service.__file__)"], cwd=root, env={**os.environ, "PYTHONPATH": str(root)},
                           capture_output=True, text=True)
    paths = found.stdout.split()
    if found.returncode != 0 or len(paths) != 2 or not all(Path(p).resolve().is_relative_to(root.resolve())
                                                         for p in paths):
        raise SystemExit(f"{root}: not a checkout of this project (a server there would not serve its own "
                         "engine and service)")


def gunicorn(app: str, port: int, workers: int, env: dict[str, str],
             worker_class: str | None = None, root: Path = ROOT) -> subprocess.Popen[bytes]:
    """gunicorn with the same settings for every app: the service's own (service/http_server.py),
    under its worker class unless ``worker_class`` names another; ``root``: the checkout
    whose code it serves (another commit's, in a worktree)."""
    served = http_server.options(Settings(http_port=port, workers=workers, log_level="warning"))
    proc = subprocess.Popen([sys.executable, "-m", "gunicorn", "--workers", str(workers),
                             "--worker-class", worker_class or served["worker_class"],
                             "--worker-connections", str(served["worker_connections"]),
                             "--keep-alive", str(served["keepalive"]), "--bind", served["bind"],
                             "--log-level", "warning", app],
                            env={**os.environ, **env, "PYTHONPATH": str(root)}, cwd=root)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=1)
            conn.request("GET", "/healthz")
            conn.getresponse().read()
            return proc
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit(f"{app} did not start")


def load(port: int, seconds: float, clients: int, make_request) -> dict[str, float]:  # type: ignore[no-untyped-def]
    """Run ``clients`` threads for ``seconds``; each calls make_request(conn, worker_state)."""
    latencies: list[list[float]] = [[] for _ in range(clients)]
    errors = [0] * clients
    stop = time.monotonic() + seconds
    barrier = threading.Barrier(clients + 1)

    def run(k: int) -> None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        mine: dict[str, object] = {}
        barrier.wait()
        while time.monotonic() < stop:
            t = time.perf_counter()
            ok = make_request(conn, mine)
            if ok is None:  # untimed set-up request
                continue
            latencies[k].append(time.perf_counter() - t)
            if not ok:
                errors[k] += 1

    threads = [threading.Thread(target=run, args=(k,)) for k in range(clients)]
    for th in threads:
        th.start()
    barrier.wait()
    began = time.monotonic()
    for th in threads:
        th.join()
    elapsed = time.monotonic() - began
    flat = sorted(x for xs in latencies for x in xs)
    return {"requests_per_s": round(len(flat) / elapsed, 1),
            "p50_ms": round(statistics.median(flat) * 1000, 2),
            "p99_ms": round(flat[int(len(flat) * 0.99) - 1] * 1000, 2),
            "errors": sum(errors), "requests": len(flat)}


def post(conn: http.client.HTTPConnection, path: str, body: bytes, headers: dict[str, str] | None = None):  # type: ignore[no-untyped-def]
    conn.request("POST", path, body, {"Content-Type": "application/json", **(headers or {})})
    response = conn.getresponse()
    return response.status, response.read()


def mid_game_body() -> bytes:
    """A 4-player 2022 state a third of the way in, with a legal action."""
    rng = random.Random(3)
    state, _ = new_game({"edition": "2022"}, ["ann", "bob", "cy", "dee"], seed=11)
    for _ in range(15):
        state, _ = apply(state, rng.choice(legal_actions(state)))
    return json.dumps({"state": encode_state(state), "action": format_action(legal_actions(state)[0])}).encode()


def session_request(conn: http.client.HTTPConnection, mine: dict) -> bool | None:  # type: ignore[type-arg]
    """One real move in this client's session; a new session (untimed) when none is running."""
    state = mine.get("state")
    if state is None or state.status != "playing":
        status, body = post(conn, "/v1/sessions", json.dumps(
            {"rules": {"edition": "2022"}, "players": ["ann", "bob", "cy", "dee"],
             "seed": random.randrange(2**31)}).encode())
        created = json.loads(body)
        conn.request("GET", f"/v1/sessions/{created['session_id']}", headers={"Authorization": f"Bearer {SERVICE_KEY}"})
        mine.update(sid=created["session_id"], seats=created["seats"],
                    state=decode_state(json.loads(conn.getresponse().read())["state"]),
                    rng=random.Random(created["session_id"]))
        return None
    action = mine["rng"].choice(legal_actions(state))
    payload = json.dumps({"action": format_action(action)}).encode()
    status, _ = post(conn, f"/v1/sessions/{mine['sid']}/actions", payload,
                     {"Authorization": f"Bearer {mine['seats'][action.player]}"})
    mine["state"] = apply(state, action)[0]
    return status == 200


def wrk_load(wrk: str, port: int, seconds: float, clients: int, script_args: list[str]) -> dict[str, float]:
    """One wrk run of ``seconds`` with ``clients`` threads of one connection each."""
    result = subprocess.run(
        [wrk, "--threads", str(clients), "--connections", str(clients), "--duration", f"{max(1, round(seconds))}s",
         "--timeout", "30s", "--script", str(ROOT / "benchmarks" / "wrk_http.lua"), f"http://127.0.0.1:{port}",
         "--", *script_args], capture_output=True, text=True, check=True)
    found = re.search(r"^wrk-result (\{.*\})$", result.stdout, re.M)
    if found is None:
        raise SystemExit(f"wrk printed no result:\n{result.stdout}\n{result.stderr}")
    figures = json.loads(found.group(1))
    if figures["exhausted_threads"]:
        print(f"note: {figures['exhausted_threads']} wrk threads ran out of prepared moves; "
              "this round's session figure is low", flush=True)
    return {"requests_per_s": round(figures["requests"] / (figures["duration_us"] / 1e6), 1),
            "p50_ms": round(figures["p50_us"] / 1000, 2), "p99_ms": round(figures["p99_us"] / 1000, 2),
            "errors": figures["status_errors"] + figures["socket_errors"], "requests": figures["requests"]}


def prepare_moves(port: int, path: Path, moves: int) -> None:
    """At least ``moves`` legal session actions, written to ``path`` for wrk_http.lua: new
    sessions whose games are played to the end (random legal moves) with the engine."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    lines: list[str] = []
    while len(lines) < moves:
        _, body = post(conn, "/v1/sessions", json.dumps(
            {"rules": {"edition": "2022"}, "players": ["ann", "bob", "cy", "dee"],
             "seed": random.randrange(2**31)}).encode())
        created = json.loads(body)
        sid, seats = created["session_id"], created["seats"]
        conn.request("GET", f"/v1/sessions/{sid}", headers={"Authorization": f"Bearer {SERVICE_KEY}"})
        state = decode_state(json.loads(conn.getresponse().read())["state"])
        rng = random.Random(sid)
        while state.status == "playing":
            action = rng.choice(legal_actions(state))
            lines.append(f"/v1/sessions/{sid}/actions\t{seats[action.player]}\t"
                         f"{json.dumps({'action': format_action(action)})}")
            state = apply(state, action)[0]
    conn.close()
    path.write_text("\n".join(lines) + "\n")


FLOOR_BODY = json.dumps({"action": {"player": "ann", "type": "play", "card": "5"}})


def prepare_floor(redis_url: str, path: Path, clients: int, moves: int) -> None:
    """For wrk: per connection a session of the Redis floor (bare_flask.py's /floor) and
    ``moves`` requests to it, in wrk_http.lua's actions format."""
    import redis

    from benchmarks.bare_flask import seed_floor

    client = redis.Redis.from_url(redis_url)
    for n in range(1, clients + 1):
        sid = f"floor-{path.name}-{n}"
        seed_floor(client, sid)
        (path / f"{n}.txt").write_text(f"/floor/{sid}\tnone\t{FLOOR_BODY}\n" * moves)
    client.close()


def floor_requests(redis_url: str, r: int):  # type: ignore[no-untyped-def]
    """For the Python client: each client thread's own floor session, one request a call."""
    import redis

    from benchmarks.bare_flask import seed_floor

    client = redis.Redis.from_url(redis_url)
    count = [0]
    lock = threading.Lock()

    def request(conn: http.client.HTTPConnection, mine: dict) -> bool | None:  # type: ignore[type-arg]
        if "sid" not in mine:
            with lock:
                count[0] += 1
                mine["sid"] = f"floor-py-{r}-{count[0]}"
            seed_floor(client, mine["sid"])
            return None
        return post(conn, f"/floor/{mine['sid']}", FLOOR_BODY.encode())[0] == 200

    return request


def worker_cpu(server: subprocess.Popen[bytes], run, *args):  # type: ignore[no-untyped-def]
    """``run(*args)``'s figures (a load of the gunicorn ``server``) with its workers' CPU a
    request answered (benchmarks/cpu.py)."""
    return with_cpu(server.pid, run, *args, children=True, count="requests")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one measuring round")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds per target, interleaved; the best counts for req/s, the median for CPU")
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--client", choices=["wrk", "python"], default="wrk",
                        help="what loads the servers (wrk falls back to the Python client when not installed)")
    parser.add_argument("--baseline", type=Path, metavar="CHECKOUT",
                        help="also serve another checkout of the service (a worktree of an earlier commit) and "
                             "measure its apply and session action in the same rounds (wrk only)")
    args = parser.parse_args()
    if args.baseline:
        checkout(args.baseline)  # before any server starts
    from service.embedded_redis import start_embedded

    wrk = shutil.which("wrk") if args.client == "wrk" else None
    if args.client == "wrk" and wrk is None:
        print("note: wrk not found (Debian: apt-get install wrk); loading with the Python client instead",
              flush=True)
    client = "wrk" if wrk else "python"
    print(f"load: {client}, {args.clients} connections", flush=True)
    if args.baseline and not wrk:
        raise SystemExit("--baseline needs wrk")

    redis_server = start_embedded()
    body = mid_game_body()
    rounds: dict[str, list[dict[str, float]]] = {"bare": [], "apply": [], "session_action": [], "floor": []}
    if args.baseline:
        rounds.update(apply_baseline=[], session_action_baseline=[])
    # Seats act as fast as the clients can: the per-seat and creation rate limits are off.
    env = {"REDIS_URL": redis_server.connection_url, "ONO99_SERVICE_KEY": SERVICE_KEY,
           "ONO99_LOG_LEVEL": "warning", "ONO99_ACTIONS_PER_SECOND": "0", "ONO99_CREATES_PER_MINUTE": "0"}
    servers = []
    work = Path(tempfile.mkdtemp(prefix="ono99-bench-"))
    (work / "body.json").write_bytes(body)
    try:
        bare_port, service_port = free_port(), free_port()
        # The bare app has no /healthz: gunicorn answered 404, which is enough to know it is up.
        bare = gunicorn("benchmarks.bare_flask:app", bare_port, args.workers, env)
        servers.append(bare)
        # The service as `ono99 http` runs it: metrics shared by the workers through a directory.
        servers.append(gunicorn("service.wsgi:app", service_port, args.workers,
                                {**env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="ono99-bench-")}))
        targets = [("apply", "session_action", service_port, servers[-1])]
        if args.baseline:
            baseline_port = free_port()
            servers.append(gunicorn("service.wsgi:app", baseline_port, args.workers,
                                    {**env, "PROMETHEUS_MULTIPROC_DIR": tempfile.mkdtemp(prefix="ono99-bench-")},
                                    root=args.baseline.resolve()))
            targets.append(("apply_baseline", "session_action_baseline", baseline_port, servers[-1]))
        for r in range(args.rounds):
            if wrk:
                rounds["bare"].append(worker_cpu(bare, wrk_load, wrk, bare_port, args.seconds, args.clients,
                                                 ["post", "/echo", str(work / "body.json")]))
                for apply_name, action_name, port, server in targets:
                    rounds[apply_name].append(worker_cpu(server, wrk_load, wrk, port, args.seconds, args.clients,
                                                         ["post", "/v1/games/apply", str(work / "body.json")]))
                    # Per connection, twice the moves a round at the best rate seen so far would
                    # use, and a thousand more: on a machine whose load falls between rounds, the
                    # session round may run faster than every round before it.
                    fastest = max(r["requests_per_s"] for rs in rounds.values() for r in rs)
                    moves = int(2 * fastest * max(1, round(args.seconds)) / args.clients) + 1000
                    moves_dir = work / f"moves-{action_name}-{r}"
                    moves_dir.mkdir()
                    with ThreadPoolExecutor(args.clients) as pool:
                        list(pool.map(prepare_moves, [port] * args.clients,
                                      [moves_dir / f"{n}.txt" for n in range(1, args.clients + 1)],
                                      [moves] * args.clients))
                    rounds[action_name].append(worker_cpu(server, wrk_load, wrk, port, args.seconds, args.clients,
                                                          ["actions", str(moves_dir)]))
                floor_dir = work / f"floor-{r}"
                floor_dir.mkdir()
                prepare_floor(redis_server.connection_url, floor_dir, args.clients, moves)
                rounds["floor"].append(worker_cpu(bare, wrk_load, wrk, bare_port, args.seconds, args.clients,
                                                  ["actions", str(floor_dir)]))
            else:
                service = targets[0][3]
                rounds["bare"].append(worker_cpu(bare, load, bare_port, args.seconds, args.clients,
                                                 lambda conn, _: post(conn, "/echo", body)[0] == 200))
                rounds["apply"].append(worker_cpu(service, load, service_port, args.seconds, args.clients,
                                                  lambda conn, _: post(conn, "/v1/games/apply", body)[0] == 200))
                # Not its CPU a request: the client creates and reads its sessions within the
                # round (untimed, but the workers' CPU would carry them).
                rounds["session_action"].append(load(service_port, args.seconds, args.clients, session_request))
                floor_request = floor_requests(redis_server.connection_url, r)
                rounds["floor"].append(worker_cpu(bare, load, bare_port, args.seconds, args.clients, floor_request))
            print(f"round {r + 1}/{args.rounds}: " + ", ".join(
                f"{name} {max(x['requests_per_s'] for x in rs):,.0f} req/s" for name, rs in rounds.items())
                + " (best so far)", flush=True)
    finally:
        for server in servers:
            server.terminate()
            server.wait()
        redis_server.stop()
        shutil.rmtree(work, ignore_errors=True)
    results = {name: best(rs, "requests_per_s") for name, rs in rounds.items()}
    for name, r in results.items():
        cpu = "" if r["cpu_us"] is None else f"  worker CPU {r['cpu_us']:,.0f} µs a request"
        print(f"{name:>15}: {r['requests_per_s']:>8,.0f} req/s  p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms  "
              f"errors {r['errors']}/{r['requests']}{cpu}")
    figures = {f"{name}_{'worker_cpu_us' if k == 'cpu_us' else k}": v
               for name, r in results.items() for k, v in r.items()}
    figures["body_bytes"] = len(body)
    figures["client"] = client
    def ratio(target: str, floor: str) -> float:
        return round(results[target]["requests_per_s"] / results[floor]["requests_per_s"], 3)

    figures["ratio_apply"] = ratio("apply", "bare")
    figures["ratio_session_action"] = ratio("session_action", "bare")
    figures["ratio_session_action_vs_redis_floor"] = ratio("session_action", "floor")
    print(f"ratio apply/bare {figures['ratio_apply']}, session action/bare {figures['ratio_session_action']}, "
          f"session action/Redis floor {figures['ratio_session_action_vs_redis_floor']}")
    # The same ratios round by round (a target and its floor in the same round, so that a
    # round the whole machine ran slower counts against both): their spread tells how far
    # one run's best-of-rounds figure can be trusted.
    for key, target, floor in (("ratio_apply", "apply", "bare"),
                               ("ratio_session_action_vs_redis_floor", "session_action", "floor")):
        paired = [round(t["requests_per_s"] / f["requests_per_s"], 3)
                  for t, f in zip(rounds[target], rounds[floor], strict=True)]
        figures[f"{key}_by_round"] = paired
        figures[f"{key}_median_round"] = round(statistics.median(paired), 3)
    print(f"round by round: apply/bare {figures['ratio_apply_by_round']} (median "
          f"{figures['ratio_apply_median_round']}), session action/Redis floor "
          f"{figures['ratio_session_action_vs_redis_floor_by_round']} (median "
          f"{figures['ratio_session_action_vs_redis_floor_median_round']})")
    def by_cpu(target: str, floor: str) -> float | None:
        return cpu_ratio(results[target]["cpu_us"], results[floor]["cpu_us"])

    figures["cpu_ratio_apply"] = by_cpu("apply", "bare")
    figures["cpu_ratio_session_action_vs_redis_floor"] = by_cpu("session_action", "floor")
    if figures["cpu_ratio_apply"] is not None:
        print(f"by worker CPU a request (the floor's over the target's): bare/apply {figures['cpu_ratio_apply']}, "
              f"Redis floor/session action {figures['cpu_ratio_session_action_vs_redis_floor']}")
    if args.baseline:
        figures["ratio_apply_baseline"] = ratio("apply_baseline", "bare")
        figures["ratio_session_action_vs_redis_floor_baseline"] = ratio("session_action_baseline", "floor")
        figures["cpu_ratio_apply_baseline"] = by_cpu("apply_baseline", "bare")
        figures["cpu_ratio_session_action_vs_redis_floor_baseline"] = by_cpu("session_action_baseline", "floor")
        print(f"baseline {args.baseline}: apply/bare {figures['ratio_apply_baseline']}, session action/Redis floor "
              f"{figures['ratio_session_action_vs_redis_floor_baseline']}; by worker CPU a request "
              f"{figures['cpu_ratio_apply_baseline']} and "
              f"{figures['cpu_ratio_session_action_vs_redis_floor_baseline']}")
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
