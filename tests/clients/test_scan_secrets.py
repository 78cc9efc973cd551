"""scripts/scan-secrets, the secrets scan scripts/test runs over everything the suites left: it
must find a planted secret wherever agentd could leave one (a log, base64 in a log, a row only
in a store's WAL, a value split over SQLite overflow pages, a value agentd stores LZ4-packed, an
answer in the recordings), skip
what the test's own peers were meant to receive, and refuse to call an empty scan clean."""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

from conftest import REPO_ROOT

SCAN = REPO_ROOT / "scripts" / "scan-secrets"
SECRET = "planted-secret-for-the-scanner-5e1f0c"


def scan(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    secrets = tmp_path / "secrets"
    secrets.write_text(f"# a comment\n\n{SECRET}\n")
    return subprocess.run(
        [sys.executable, str(SCAN), "--secrets", str(secrets), *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def artifacts(tmp_path: Path) -> Path:
    root = tmp_path / "artifacts"
    (root / "agentd-data").mkdir(parents=True)
    (root / "logs").mkdir()
    (root / "logs" / "agentd.stderr").write_text("INFO request method=POST path=/v1/responses status=200\n")
    return root


def test_a_clean_tree_passes(tmp_path: Path) -> None:
    root = artifacts(tmp_path)
    result = scan(tmp_path, str(root))
    assert result.returncode == 0, result.stderr
    assert "1 files" in result.stdout


def test_an_empty_tree_proves_nothing(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    assert scan(tmp_path, str(tmp_path / "empty")).returncode == 2
    root = artifacts(tmp_path)
    assert scan(tmp_path, "--expect-store", str(root)).returncode == 2


def test_a_secret_in_a_log_as_written_or_base64(tmp_path: Path) -> None:
    root = artifacts(tmp_path)
    (root / "logs" / "plain.log").write_text(f"DEBUG header authorization=Bearer {SECRET}\n")
    for prefix in (b"", b"a", b"ab"):
        encoded = base64.b64encode(prefix + SECRET.encode() + b"!")
        (root / "logs" / f"b64-{len(prefix)}.log").write_bytes(b"token=" + encoded)
    result = scan(tmp_path, str(root))
    assert result.returncode == 1
    for name in ("plain.log", "b64-0.log", "b64-1.log", "b64-2.log"):
        assert name in result.stderr, result.stderr


def test_a_secret_only_in_the_wal_or_over_overflow_pages(tmp_path: Path) -> None:
    root = artifacts(tmp_path)
    db = root / "agentd-data" / "agentd.db"
    connection = sqlite3.connect(db)
    connection.execute("PRAGMA journal_mode=WAL")
    connection.execute("PRAGMA wal_autocheckpoint=0")
    connection.execute("CREATE TABLE jobs (id INTEGER PRIMARY KEY, payload TEXT)")
    connection.commit()
    # The committed row stays in the WAL while the connection is open (no checkpoint).
    connection.execute("INSERT INTO jobs (payload) VALUES (?)", (json.dumps({"authorization": SECRET}),))
    connection.commit()
    try:
        assert SECRET.encode() not in db.read_bytes()
        result = scan(tmp_path, "--expect-store", str(root))
    finally:
        connection.close()
    assert result.returncode == 1, result.stdout + result.stderr
    assert "agentd.db-wal" in result.stderr

    # A value far larger than a page: SQLite cuts it over overflow pages, where a split secret
    # is no longer one run of bytes in the file; the row read still finds it.
    other = tmp_path / "other"
    other.mkdir()
    db = other / "store.db"
    connection = sqlite3.connect(db)
    connection.execute("CREATE TABLE t (v TEXT)")
    page = connection.execute("PRAGMA page_size").fetchone()[0]
    for shift in range(0, 40, 4):
        connection.execute("INSERT INTO t VALUES (?)", ("x" * (page - 20 - shift) + SECRET,))
    connection.commit()
    connection.close()
    result = scan(tmp_path, str(other))
    assert result.returncode == 1
    assert "t.v" in result.stderr, result.stderr


def test_tool_side_files_and_recorded_requests_are_not_leaks(tmp_path: Path) -> None:
    root = artifacts(tmp_path)
    (root / "mcp-auth-0.jsonl").write_text(json.dumps({"authorization": f"Bearer {SECRET}"}) + "\n")
    recordings = root / "recordings.jsonl"
    sent = {"test": "t", "request": {"tools": [{"authorization": SECRET}]}, "body": {"ok": True}, "events": []}
    recordings.write_text(json.dumps(sent) + "\n")
    result = scan(tmp_path, "--tool-side", "mcp-*-*.jsonl", "--recordings", str(recordings), str(root))
    assert result.returncode == 0, result.stderr
    assert "1 tool-side files skipped" in result.stdout

    echoed = dict(sent, events=[{"type": "response.completed", "response": {"tools": [{"authorization": SECRET}]}}])
    recordings.write_text(json.dumps(sent) + "\n" + json.dumps(echoed) + "\n")
    result = scan(tmp_path, "--tool-side", "mcp-*-*.jsonl", "--recordings", str(recordings), str(root))
    assert result.returncode == 1
    assert "recordings.jsonl line 2" in result.stderr, result.stderr


DICTIONARY = REPO_ROOT / "crates" / "store" / "src" / "event_pack_dictionary.jsonl"


def packed(form: int, text: bytes) -> bytes:
    """`text` packed as agentd packs it in format `form` (crates/store/src/event_pack.rs,
    transcript_pack.rs): 1 without a dictionary, 2 against the event lines' dictionary, 3
    against its last line, 4 in two pieces, the second against the text before it."""
    import lz4.block

    def block(data: bytes, dictionary: bytes) -> bytes:
        if dictionary:
            return lz4.block.compress(data, store_size=False, dict=dictionary)
        return lz4.block.compress(data, store_size=False)

    header = bytes([form]) + len(text).to_bytes(4, "little")
    if form == 4:
        cut = len(text) - 1
        pieces = b""
        for start, end in ((0, cut), (cut, len(text))):
            data = block(text[start:end], text[max(0, start - 16384) : start])
            pieces += (end - start).to_bytes(4, "little") + len(data).to_bytes(4, "little") + data
        return header + pieces
    dictionary = DICTIONARY.read_bytes()
    dictionaries = {1: b"", 2: dictionary, 3: dictionary.rstrip(b"\n").rsplit(b"\n", 1)[-1]}
    return header + block(text, dictionaries[form])


def test_a_secret_in_a_packed_value(tmp_path: Path) -> None:
    # The secret's halves first: packed, the whole secret is then written as references to
    # them, and its bytes are in no run of the value.
    text = json.dumps(
        [{"role": "user", "content": f"{SECRET[:20]} and {SECRET[15:]}, then {SECRET}"}] * 3
    ).encode()
    for column, form in [
        ("transcript_json", 4),
        ("transcript_json", 1),
        ("response_json", 3),
        ("data", 2),
    ]:
        table = "event_chunks" if column == "data" else "responses"
        root = tmp_path / f"{table}-{form}"
        (root / "agentd-data").mkdir(parents=True)
        value = packed(form, text)
        assert SECRET.encode() not in value
        connection = sqlite3.connect(root / "agentd-data" / "agentd.db")
        connection.execute(f"CREATE TABLE {table} ({column} BLOB)")
        connection.execute(f"INSERT INTO {table} VALUES (?)", (value,))
        connection.commit()
        connection.close()
        result = scan(tmp_path, "--expect-store", str(root))
        assert result.returncode == 1, result.stdout + result.stderr
        assert f"{table}.{column} (unpacked)" in result.stderr, result.stderr


def scan_planted_store(tmp_path: Path, root: Path, columns: str, rows: list[tuple]) -> subprocess.CompletedProcess[str]:
    """Plants a store under `root` (its `agentd-data` made already) whose `responses` table has
    `columns` and holds `rows`, scans `tmp_path`, and removes `root`: scripts/test scans the
    suite's temporary directories last, and a store that cannot be read would fail it."""
    connection = sqlite3.connect(root / "agentd-data" / "agentd.db")
    connection.execute(f"CREATE TABLE responses ({columns})")
    connection.executemany(f"INSERT INTO responses VALUES ({', '.join('?' * len(rows[0]))})", rows)
    connection.commit()
    connection.close()
    try:
        return scan(tmp_path, "--expect-store", str(root))
    finally:
        shutil.rmtree(root)


def linked_pair(first: bytes, then: bytes) -> tuple[bytes, bytes]:
    """A transcript `first` (a JSON array) packed in pieces (format 4), and the transcript that
    goes on from it with `then` stored linked to it (format 5, crates/store/src/transcript_link.rs):
    its own pieces only, compressed against the text before them."""
    import lz4.block

    base = packed(4, first)
    text = first[:-1] + then + b"]"
    own = b""
    for start, end in ((len(first) - 1, len(text) - 1), (len(text) - 1, len(text))):
        data = lz4.block.compress(text[start:end], store_size=False, dict=text[max(0, start - 16384) : start])
        own += (end - start).to_bytes(4, "little") + len(data).to_bytes(4, "little") + data
    return base, bytes([5]) + len(text).to_bytes(4, "little") + (1).to_bytes(4, "little") + own


def test_a_secret_in_a_linked_transcript(tmp_path: Path) -> None:
    # The secret's halves in the base, the whole secret only in what the linked one adds: its
    # own pieces write it as references to the base's text.
    first = json.dumps([{"role": "user", "content": f"{SECRET[:20]} and {SECRET[15:]}"}] * 3).encode()
    then = json.dumps({"role": "user", "content": f"then {SECRET}"}).encode().join([b",", b""])
    base, linked = linked_pair(first, then)
    assert SECRET.encode() not in base + linked
    for rows, code, says in [
        ([("resp_1", base, None), ("resp_2", linked, "resp_1")], 1, "responses.transcript_json (unpacked)"),
        ([("resp_2", linked, "resp_1")], 2, "could not be read"),
    ]:
        root = tmp_path / f"linked-{code}"
        (root / "agentd-data").mkdir(parents=True)
        columns = "id TEXT, transcript_json BLOB, transcript_base TEXT"
        result = scan_planted_store(tmp_path, root, columns, rows)
        assert result.returncode == code, result.stdout + result.stderr
        assert says in result.stderr, result.stderr


def test_a_packed_value_that_cannot_be_read_proves_nothing(tmp_path: Path) -> None:
    root = artifacts(tmp_path)
    # Format 4 claiming 64 bytes, one piece whose block is not LZ4.
    bad = bytes([4]) + (64).to_bytes(4, "little") + (64).to_bytes(4, "little") + (4).to_bytes(4, "little") + b"\xff" * 4
    result = scan_planted_store(tmp_path, root, "transcript_json BLOB", [(bad,)])
    assert result.returncode == 2, result.stdout + result.stderr
    assert "responses.transcript_json" in result.stderr and "could not be read" in result.stderr

