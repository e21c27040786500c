"""`takt local`: moto's server in this process, the tables and queues from takt's own resource
spec, and the real handlers driven as AWS drives them:

- an HTTP server whose requests become API Gateway HTTP API events for the api handler;
- a 1-second ticker that invokes the scheduler handler, aligned to whole seconds;
- SQS pollers that hand batches of lane messages to worker invocations and delete what each
  did not report as failed (the event source mapping's contract); a lane runs up to
  `invocations` batches at once, and its pollers go on receiving while they run, as an event
  source mapping scales its function up rather than waiting for one batch to finish;
- a timer that invokes the watchdog handler every `watchdog_interval_sec`;
- a reader of the jobs table's stream that hands its records to the indexer handler, which
  puts the due items of the jobs the API wrote (polled every `INDEX_POLL_SEC`, so a job due a
  second after it is created is indexed in time).

The same HTTP server serves the web console (`console/`) at `/`; everything under `/v1/` is the
API. Every metric the handlers record is kept for an hour in memory (`MetricsWindow`), which the
API's stats route reads where the cloud reads CloudWatch.
"""

from __future__ import annotations

import base64
import functools
import importlib
import json
import logging
import multiprocessing
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3

from takt.clock import SystemClock
from takt.config import LANES, Settings, get_settings
from takt.observability import listen, metrics
from takt.parallel import FOREGROUND
from takt.resources import TABLES
from takt.stats import MetricsWindow
from takt.wiring import Services, build_services, install
from takt_cli.local import moto_speedups
from takt_cli.local.console import ConsoleFiles, default_console_dir
from takt_cli.local.events import (
    LocalContext,
    LocalIdentity,
    dynamodb_stream_event,
    http_api_event,
    sqs_event,
)
from takt_cli.local.persistence import DataStore, WsgiApp
from takt_cli.local.provision import provision
from takt_cli.local.replication import MotoReplica, Replicator, moto_backend
from takt_cli.local.server import ApiServer, Reply, problem, reply_of
from takt_cli.local.streams import StreamReader
from takt_cli.metering import Meter

log = logging.getLogger("takt_cli.local")
# The loggers a runtime sets (level, and whether they propagate), set back when it stops.
_LOGGERS = ("takt", "werkzeug", "botocore")

Handler = Callable[[dict[str, Any], Any], Any]

# How often the jobs table's stream is read when it had nothing new: a job due a second after
# it is created must be indexed well inside that second.
INDEX_POLL_SEC = 0.1
# How many times a batch is tried before its first record is set aside.
INDEX_TRIES = 3
# How often the data folder's journal is checked for size (takt_cli.local.persistence).
COMPACT_CHECK_SEC = 5.0
# How often the HTTP servers (the API's, moto's) look whether they are told to stop: the
# standard library's 0.5 s was most of what a Ctrl-C waited for.
STOP_POLL_SEC = 0.05

FAKE_CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@dataclass(frozen=True)
class RuntimeOptions:
    host: str = "127.0.0.1"
    port: int = 8080
    # The identity every API call is made with (`takt local --tenant T --role R`).
    tenant: str = "local"
    role: str = "admin"
    pollers: int = 4
    # Worker invocations a lane may run at once (its event source mapping's maximum concurrency);
    # each runs its batch's messages side by side (takt.worker.batch), so a lane runs up to ten
    # times this many executions at once.
    invocations: int = 16
    log_level: str = "WARNING"
    console_dir: Path | None = field(default_factory=default_console_dir)
    # Run moto's server in a child process (still `ThreadedMotoServer`) rather than in this one:
    # the server's CPU moves to another core and out of this process's GIL. Off by default: the
    # design keeps everything in one process, and `takt bench` sizes writes from the server's
    # items, which only an in-process server lets it read (docs/CAPACITY.md has the numbers).
    moto_process: bool = False
    # Refuse loopback and private addresses to HTTP targets, as a deployed stack does.
    strict_egress: bool = False
    # Where the tables are kept across restarts (takt_cli.local.persistence); None keeps them in
    # memory only, as the tests and benchmarks do.
    data_dir: Path | None = None
    # moto's port; None picks a free one. `takt local --regions` chooses each region's, so that
    # every region knows its peers' before they start.
    moto_port: int | None = None
    # One region of `takt local --regions`: every other region's moto endpoint by region, whose
    # writes this one's tables receive after `replication_delay_ms` (takt_cli.local.replication).
    peers: dict[str, str] = field(default_factory=dict)
    replication_delay_ms: int = 300


# What HTTP targets may reach beyond the public internet in local mode: the developer's own
# machine and networks. Link-local (the instance metadata service) stays refused.
LOCAL_EGRESS_ALLOW = (
    "127.0.0.0/8",
    "::1/128",
    "10.0.0.0/8",
    "172.16.0.0/12",
    "192.168.0.0/16",
    "fc00::/7",
)


def _local_master(folder: Path | None) -> str:
    """The master secret tenants' webhook keys are derived from: kept in the data folder (owner
    only), so the keys, like the tables, outlive a restart; a new one each run without it."""
    made = "whsec_" + base64.b64encode(secrets.token_bytes(32)).decode()
    if folder is None:
        return made
    path = folder / "webhook-master"
    if not path.exists():
        path.touch(mode=0o600)
        path.write_text(made)
    return path.read_text().strip()


def _level(name: str) -> int:
    return logging.getLevelNamesMapping()[name]


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


class LocalRuntime:
    def __init__(
        self, options: RuntimeOptions, meter: Meter | None = None, data: DataStore | None = None
    ) -> None:
        """`data` is the data folder already locked by the caller (`takt local` takes it before
        it imports moto, so a folder in use is refused at once); else `start` locks
        `options.data_dir` itself."""
        self.options = options
        # `takt bench` meters the handlers' AWS calls and times each invocation with it.
        self.meter = meter
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._invokers: list[ThreadPoolExecutor] = []
        self._moto: Any = None
        self._http: ApiServer | None = None
        self.services: Services | None = None
        self.moto_endpoint = ""
        self.metrics_window = MetricsWindow(SystemClock())
        self._stop_listening: Callable[[], None] | None = None
        self.console = None if options.console_dir is None else ConsoleFiles(options.console_dir)
        self.data = data
        self._environ_before: dict[str, str] | None = None
        self._loggers_before: dict[str, tuple[int, bool]] = {}
        # How many items the tables held when loaded from the data folder.
        self.items_loaded = 0

    @property
    def url(self) -> str:
        assert self._http is not None
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> None:
        moto_speedups.apply()
        if self.data is None and self.options.data_dir is not None:
            # First: a folder another takt local holds stops this one before anything starts.
            self.data = DataStore(self.options.data_dir)
        if self.data is not None and self.options.moto_process:
            raise ValueError("a data folder needs moto in this process (moto_process off)")
        moto_port = self.options.moto_port or free_port(self.options.host)
        if self.options.moto_process:
            self._moto = MotoProcess(self.options.host, moto_port)
        else:
            wrap = None if self.data is None else self.data.wrap
            self._moto = _moto_server(self.options.host, moto_port, wrap)
        self._moto.start()
        self.moto_endpoint = f"http://{self.options.host}:{moto_port}"
        self._environ_before = dict(os.environ)
        for key, value in FAKE_CREDENTIALS.items():
            os.environ.setdefault(key, value)
        os.environ["TAKT_AWS_ENDPOINT_URL"] = self.moto_endpoint
        os.environ.setdefault("POWERTOOLS_METRICS_DISABLED", "true")
        os.environ.setdefault("POWERTOOLS_LOG_LEVEL", self.options.log_level)
        self._loggers_before = _set_loggers(self.options.log_level)
        os.environ.setdefault("POWERTOOLS_SERVICE_NAME", "takt")
        # Four shards are plenty on one machine; each costs a query per tick.
        os.environ.setdefault("TAKT_DUE_SHARDS", "4")
        # Fair claims as deployed, with this machine's floor: a claimed item costs the runtime
        # ~40 ms of CPU, so a backlogged tenant's claims start at 2 items a partition and grow
        # with what the lanes drain (docs/FAIRNESS.md).
        os.environ.setdefault("TAKT_CLAIM_MAX_ITEMS", "2")
        # Webhooks are signed locally too, each tenant with its key derived from this master
        # (`takt tenants webhook-key show local`).
        os.environ.setdefault(
            "TAKT_SIGNING_SECRET", _local_master(None if self.data is None else self.data.path)
        )
        if not self.options.strict_egress:
            os.environ.setdefault("TAKT_EGRESS_ALLOW", json.dumps(LOCAL_EGRESS_ALLOW))
        get_settings.cache_clear()
        settings = get_settings()
        replica = self._replica(settings)
        services = build_services(settings)
        os.environ.update(provision(services.clients, settings, streams=replica is not None))
        get_settings.cache_clear()
        settings = get_settings()
        if self.data is not None:
            # Before any driver runs: the handlers start on the tables as they were left.
            tables = {spec.setting: getattr(settings, spec.setting) for spec in TABLES}
            ttl = {spec.setting: spec.ttl_attribute for spec in TABLES if spec.ttl_attribute}
            self.items_loaded = self.data.open(self.moto_endpoint, settings.region, tables, ttl)
        self.services = build_services(settings, metrics=self.metrics_window, meter=self.meter)
        install(self.services)
        self._stop_listening = listen(self.metrics_window.record)
        self._start_http()
        self._spawn("ticker", self._ticker_loop)
        self._spawn("watchdog", self._watchdog_loop)
        self._spawn("indexer", self._indexer_loop)
        self._start_replicator(replica, settings)
        if self.data is not None:
            self._spawn("compactor", self._compactor_loop)
        for lane in LANES:
            self._start_lane(lane)

    def _replica(self, settings: Settings) -> MotoReplica | None:
        """This region's moto as a replica of the global tables, under `takt local --regions`;
        installed before the first write, so that every write is stamped for last writer wins."""
        if not self.options.peers:
            return None
        if self.data is not None or self.options.moto_process:
            raise ValueError("a region's tables are replicated in memory, with moto in process")
        replica = MotoReplica(settings.region)
        replica.install()
        return replica

    def _start_replicator(self, replica: MotoReplica | None, settings: Settings) -> None:
        if replica is None:
            return
        replicator = Replicator(
            replica,
            moto_backend(settings.region),
            self.options.peers,
            [getattr(settings, spec.setting) for spec in TABLES],
            self.options.replication_delay_ms,
        )
        self._spawn("replicator", functools.partial(replicator.run, self._stop))

    def _start_lane(self, lane: str) -> None:
        """The lane's pollers and the invocations they hand batches to. Fewer of both on the
        low lane: it gets a smaller share of the worker capacity. None at all with `pollers=0`:
        `takt worker` processes consume the lanes instead."""
        count = self.options.pollers
        invocations = self.options.invocations
        if lane == "low":
            count = min(count, max(1, count // 2))
            invocations = max(1, invocations // 2)
        if count == 0:
            return
        invoker = ThreadPoolExecutor(invocations, thread_name_prefix=f"worker-{lane}")
        self._invokers.append(invoker)
        slots = threading.BoundedSemaphore(invocations)
        for i in range(count):
            self._spawn(
                f"poller-{lane}-{i}",
                functools.partial(self._poller_loop, lane, invoker, slots),
            )

    def stop(self) -> None:
        self._stop.set()
        if self._http is not None:
            self._http.shutdown()
            self._http.server_close()
        for thread in self._threads:
            thread.join(timeout=10)
        for invoker in self._invokers:
            invoker.shutdown(wait=False, cancel_futures=True)
        if self.data is not None:
            # A clean stop leaves one snapshot and an empty journal: the next start is quick.
            self.data.compact()
            self.data.close()
        if self._environ_before is not None:
            # Embedded in a longer-lived process, it leaves no TAKT_* settings behind.
            os.environ.clear()
            os.environ.update(self._environ_before)
            get_settings.cache_clear()
        # Nor its loggers' levels: a bench's runtime at ERROR would hide every later warning.
        for name, (level, propagate) in self._loggers_before.items():
            logging.getLogger(name).setLevel(level)
            logging.getLogger(name).propagate = propagate
        if self._moto is not None:
            self._moto.stop()
        if self._stop_listening is not None:
            self._stop_listening()
        install(None)

    def wait(self) -> None:
        """Block until stopped (Ctrl-C stops it)."""
        try:
            while not self._stop.wait(0.5):
                pass
        except KeyboardInterrupt:
            pass

    # The drivers

    def _spawn(self, name: str, target: Callable[[], None]) -> None:
        thread = threading.Thread(target=target, name=name, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _invoke(self, function: str, event: dict[str, Any], timeout_ms: int = 60_000) -> Any:
        handler = _handler(function)
        context = LocalContext(function_name=f"takt-{function}", timeout_ms=timeout_ms)
        try:
            with _instance_of(function):
                if self.meter is None:
                    return handler(event, context)
                with self.meter.invocation(function):
                    return handler(event, context)
        finally:
            # With POWERTOOLS_METRICS_DISABLED, Powertools never clears what handlers add, so
            # the set would grow for as long as the runtime runs.
            metrics.clear_metrics()

    def _ticker_loop(self) -> None:
        """Tick the scheduler each whole second, in the process's foreground: a workflow's
        fan-out gives way to a tick between its chunks (`takt.parallel.Foreground`), as in the
        cloud, where the tick runs in a Lambda of its own."""
        while not self._stop.wait(1 - (time.time() % 1)):
            try:
                with FOREGROUND.running():
                    self._invoke("scheduler", {"ticks": 1})
            except Exception:  # a crashed tick must not stop the next one
                log.exception("scheduler tick failed")

    def _indexer_loop(self) -> None:
        """Read the jobs table's stream and invoke the indexer with each batch, as its event
        source mapping does: a batch with failures is retried from its first failed record, so
        the changes of one job are applied in order."""
        settings = self._settings()
        assert self.services is not None
        streams = boto3.session.Session(region_name=settings.region).client(
            "dynamodbstreams", endpoint_url=settings.aws_endpoint_url
        )
        reader = StreamReader(self.services.clients.dynamodb, streams, settings.jobs_table)
        pending: list[dict[str, Any]] = []
        tries = 0
        while not self._stop.is_set():
            try:
                pending += reader.read()
                if not pending:
                    self._stop.wait(INDEX_POLL_SEC)
                    continue
                tries += 1
                pending = self._index(reader.arn, pending)
            except Exception:
                log.exception("indexing the jobs stream failed")
                self._stop.wait(1)
            if pending and tries >= INDEX_TRIES:
                # The cloud's on-failure destination: the record is set aside, loudly, so one
                # bad record cannot stop every later job from being indexed.
                log.error("jobs stream record not indexed: %s", pending[0]["dynamodb"])
                pending = pending[1:]
            if not pending or tries >= INDEX_TRIES:
                tries = 0

    def _index(self, stream_arn: str, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Invoke the indexer with `records`; what is left to retry, from the first failure."""
        result = self._invoke("indexer", dynamodb_stream_event(stream_arn, records))
        failed = {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}
        sequences = [r["dynamodb"]["SequenceNumber"] for r in records]
        first = next((i for i, seq in enumerate(sequences) if seq in failed), len(records))
        if first < len(records):
            self._stop.wait(1)
        return records[first:]

    def _compactor_loop(self) -> None:
        assert self.data is not None
        while not self._stop.wait(COMPACT_CHECK_SEC):
            try:
                self.data.compact_if_large()
            except Exception:  # the journal keeps every write meanwhile; the next check retries
                log.exception("compacting the data folder failed")

    def _watchdog_loop(self) -> None:
        settings = self._settings()
        while not self._stop.wait(settings.watchdog_interval_sec):
            try:
                self._invoke("watchdog", {"sweeps": 1})
            except Exception:
                log.exception("watchdog sweep failed")

    def _poller_loop(
        self, lane: str, invoker: ThreadPoolExecutor, slots: threading.BoundedSemaphore
    ) -> None:
        """Long-poll one lane and hand each batch to a worker invocation of its own, as an
        event source mapping does; every lane has its own pollers, so a busy low lane never
        delays high.

        A poller receives only when its lane has a free invocation slot: a message received
        with nowhere to run would sit invisible while it could wait visible in the lane.
        """
        settings = self._settings()
        assert self.services is not None
        sqs = self.services.clients.sqs
        url = settings.lane_url(lane)
        arn = _queue_arn(url)
        while not self._stop.is_set():
            if not slots.acquire(timeout=0.5):
                continue
            try:
                resp = sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=10,
                    WaitTimeSeconds=1,
                    MessageSystemAttributeNames=["ApproximateReceiveCount", "SentTimestamp"],
                )
                messages: list[Any] = list(resp.get("Messages", []))
            except Exception:
                slots.release()
                log.exception("poller failed on lane %s", lane)
                self._stop.wait(1)
                continue
            if not messages:
                slots.release()
                continue
            try:
                invoker.submit(self._run_batch, slots, url, arn, messages)
            except RuntimeError:
                # Stopping: the invoker takes no more work, and the messages come back to the
                # lane after their visibility timeout.
                slots.release()
                return

    def _run_batch(
        self,
        slots: threading.BoundedSemaphore,
        url: str,
        arn: str,
        messages: list[dict[str, Any]],
    ) -> None:
        try:
            self._deliver(url, arn, messages)
        except Exception:
            log.exception("worker invocation failed")
        finally:
            slots.release()

    def _deliver(self, url: str, arn: str, messages: list[dict[str, Any]]) -> None:
        assert self.services is not None
        result = self._invoke("worker", sqs_event(arn, messages))
        failed = {f["itemIdentifier"] for f in (result or {}).get("batchItemFailures", [])}
        done = [m for m in messages if m["MessageId"] not in failed]
        if done:
            self.services.clients.sqs.delete_message_batch(
                QueueUrl=url,
                Entries=[
                    {"Id": str(i), "ReceiptHandle": m["ReceiptHandle"]} for i, m in enumerate(done)
                ],
            )

    def _settings(self) -> Settings:
        assert self.services is not None
        return self.services.settings

    @property
    def identity(self) -> LocalIdentity:
        """The caller every local API request comes from, in the claims the settings map."""
        settings = self._settings()
        return LocalIdentity(
            tenant=self.options.tenant,
            role=self.options.role,
            tenant_claim=settings.tenant_claim,
            role_claim=settings.role_claim,
        )

    # The API

    def _start_http(self) -> None:
        self._http = ApiServer((self.options.host, self.options.port), self._respond)
        self._spawn("http", functools.partial(self._http.serve_forever, STOP_POLL_SEC))

    def _respond(
        self, method: str, path: str, headers: dict[str, str], body: bytes, client: str
    ) -> Reply:
        """One HTTP request: the health check, the console's files, or the API's handler."""
        if path == "/healthz":
            return Reply(200, {"content-type": "application/json"}, b'{"ok":true}')
        if method == "GET" and not path.startswith("/v1/"):
            found = self.console.get(path) if self.console else None
            if found is None:
                return problem(404, "Not Found", f"no file for {path}")
            # no-cache: a console edited while takt local runs shows on the next reload.
            return Reply(
                200, {"content-type": found.content_type, "cache-control": "no-cache"}, found.body
            )
        event = http_api_event(method, path, headers, body, self.identity, client)
        try:
            result = self._invoke("api", event, timeout_ms=29_000)
        except Exception:
            log.exception("api handler failed")
            return problem(502, "Bad Gateway", "the API handler failed")
        return reply_of(result)


class MotoProcess:
    """`ThreadedMotoServer` in a child process, started and stopped like the in-process one."""

    def __init__(self, host: str, port: int) -> None:
        context = multiprocessing.get_context("spawn")
        self._ready = context.Event()
        self._stop = context.Event()
        self._process = context.Process(
            target=_serve_moto,
            args=(host, port, self._ready, self._stop),
            name="moto",
            daemon=True,
        )

    def start(self) -> None:
        self._process.start()
        if not self._ready.wait(60):
            self._process.kill()
            raise RuntimeError("moto's server did not start in its child process")

    def stop(self) -> None:
        self._stop.set()
        self._process.join(10)
        if self._process.is_alive():
            self._process.kill()


def _serve_moto(host: str, port: int, ready: Any, stop: Any) -> None:
    """The child process: moto's server with the same speedups, until told to stop."""
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 - moto's server loads only when the runtime starts

    moto_speedups.apply()
    server = ThreadedMotoServer(ip_address=host, port=port, verbose=False)
    server.start()
    ready.set()
    stop.wait()
    server.stop()


def _moto_server(host: str, port: int, wrap: Callable[[WsgiApp], WsgiApp] | None) -> Any:
    """`ThreadedMotoServer` whose WSGI app is wrapped by `wrap` (the data folder's journal),
    and which sees a stop within `STOP_POLL_SEC` (werkzeug's default is 0.5 s). It builds its
    app and serves inside its thread's entry, so that entry is the one place for both."""
    from moto.moto_server.werkzeug_app import (  # noqa: PLC0415 - moto's server loads only when the runtime starts
        DomainDispatcherApplication,
        MotoRequestHandler,
        create_backend_app,
    )
    from moto.server import ThreadedMotoServer  # noqa: PLC0415 - moto's server loads only when the runtime starts
    from werkzeug.serving import make_server  # noqa: PLC0415 - moto's server loads only when the runtime starts

    class QuickStopMotoServer(ThreadedMotoServer):
        def _server_entry(self) -> None:
            app: WsgiApp = DomainDispatcherApplication(create_backend_app)
            if wrap is not None:
                app = wrap(app)
            self._server = make_server(
                self._ip_address, self._port, app, True, request_handler=MotoRequestHandler
            )
            self._server_ready_event.set()
            self._server.serve_forever(STOP_POLL_SEC)

    return QuickStopMotoServer(ip_address=host, port=port, verbose=False)


def _queue_arn(url: str) -> str:
    name = url.rstrip("/").rsplit("/", 1)[-1]
    return f"arn:aws:sqs:us-east-1:000000000000:{name}"


_HANDLERS: dict[str, Handler] = {}
_handlers_lock = threading.Lock()
# The API's resolver keeps the request it is serving on itself (`app.current_event`), as a Lambda
# instance may, serving one event at a time: the console's parallel requests take turns.
_ONE_AT_A_TIME = {"api": threading.Lock()}


def _instance_of(function: str) -> AbstractContextManager[object]:
    """What an invocation of `function` holds while it runs: its one instance, or nothing."""
    return _ONE_AT_A_TIME.get(function) or nullcontext()


def _set_loggers(log_level: str) -> dict[str, tuple[int, bool]]:
    """Set the levels a runtime logs at; each logger's level and propagation as they were.

    takt's logger took its level at import, before the options were known. It writes its own
    JSON lines (Powertools), so it does not hand its records on to the root logger too: that
    printed every event twice. moto's server (werkzeug) logs each AWS call and botocore its
    credential lookups: neither is an event of takt's, at any level."""
    before = {
        name: (logging.getLogger(name).level, logging.getLogger(name).propagate)
        for name in _LOGGERS
    }
    takt_logger = logging.getLogger("takt")
    takt_logger.setLevel(log_level)
    takt_logger.propagate = False
    for name in ("werkzeug", "botocore"):
        logging.getLogger(name).setLevel(max(logging.WARNING, _level(log_level)))
    return before


def _handler(function: str) -> Handler:
    """The `handler` of functions/<function>/handler.py, imported once: from the checkout's
    functions/ when there is one, else from the copy an installed wheel carries."""
    with _handlers_lock:
        if function not in _HANDLERS:
            try:
                module = importlib.import_module(f"functions.{function}.handler")
            except ModuleNotFoundError:
                module = importlib.import_module(f"takt_cli.functions.{function}.handler")
            _HANDLERS[function] = module.handler
        return _HANDLERS[function]


def describe_egress(settings: Settings) -> str:
    """The line `takt local` prints at start: what HTTP targets may reach besides the internet."""
    if settings.egress_allow == LOCAL_EGRESS_ALLOW:
        return (
            "egress: loopback and private addresses allowed (local mode); "
            "--strict-egress to refuse them"
        )
    if not settings.egress_allow:
        return "egress: loopback and private addresses refused, as in a deployed stack"
    return "egress: allowed besides public addresses: " + ", ".join(settings.egress_allow)


def worker_env(settings: Settings) -> dict[str, str]:
    """The environment a `takt worker` process needs to work for this runtime, with its lease
    and heartbeat, so it behaves as the runtime's own workers do."""
    return {
        **FAKE_CREDENTIALS,
        "TAKT_AWS_ENDPOINT_URL": settings.aws_endpoint_url or "",
        "TAKT_LANE_URLS": json.dumps(settings.lane_urls),
        **{f"TAKT_{spec.setting.upper()}": getattr(settings, spec.setting) for spec in TABLES},
        "TAKT_OPEN_SHARDS": str(settings.open_shards),
        "TAKT_LEASE_SEC": str(settings.lease_sec),
        "TAKT_HEARTBEAT_SEC": str(settings.heartbeat_sec),
        "TAKT_EGRESS_ALLOW": json.dumps(settings.egress_allow),
    }
