#!/usr/bin/env python3
"""Reads a heterodyne experiment file with Python's standard library alone, exactly as
docs/experiment-format.md describes it, and prints what it found as JSON:
the mean KL over scored diff positions and the integrity hash recomputed from the bytes."""
import hashlib
import json
import sqlite3
import struct
import sys

TABLES = [("meta", "key"), ("chunks", "chunk"), ("tokens", "chunk, pos"), ("vocab", "token_id"),
          ("positions", "comparison, chunk, pos"), ("layers", "comparison, chunk, layer, pos"),
          ("transplants", "chunk, direction, step, pos"), ("residuals", "chunk, arm, layer")]
# After those: each plug-in analysis' table by name, then a sweep's tables, where the file has
# them, then every other table by name (a kind's own: a floor's, a recommendation's), its rows
# in primary-key order, then by every column.
KIND_TABLES = [("sweep_positions", "chunk, comparison, mask, pos"),
               ("sweep_flips", "chunk, comparison, mask")]


def quoted(name):
    return '"' + name.replace('"', '""') + '"'


def other_tables(db, present, known):
    out = []
    for name in sorted(n for n in present if n not in known and not n.startswith("sqlite_")):
        info = [r for r in db.execute(f"PRAGMA table_info({quoted(name)})")]
        key = [quoted(r[1]) for r in sorted((r for r in info if r[5] > 0), key=lambda r: r[5])]
        order = ", ".join(key + [quoted(r[1]) for r in info])
        out.append((name, quoted(name), order))
    return out


def integrity(db):
    h = hashlib.sha256()
    present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    analyses = [(n, n, "chunk, row") for n in sorted(present) if n.startswith("analysis_")]
    listed = [(n, n, o) for n, o in TABLES] + analyses + \
        [(n, n, o) for n, o in KIND_TABLES if n in present]
    known = {t[0] for t in listed}
    for name, sql_name, order in listed + other_tables(db, present, known):
        h.update(name.encode() + b"\n")
        where = " WHERE key != 'integrity_sha256'" if name == "meta" else ""
        cols = [quoted(r[1]) for r in db.execute(f"PRAGMA table_info({sql_name})")]
        typed = ", ".join(f"typeof({c}), {c}" for c in cols)
        for row in db.execute(f"SELECT {typed} FROM {sql_name}{where} ORDER BY {order}"):
            for kind, value in zip(row[0::2], row[1::2]):
                if kind == "null":
                    h.update(b"N")
                elif kind == "integer":
                    h.update(b"I" + struct.pack("<q", value))
                elif kind == "real":
                    h.update(b"R" + struct.pack("<d", value))
                elif kind == "text":
                    data = value.encode()
                    h.update(b"T" + struct.pack("<Q", len(data)) + data)
                else:
                    h.update(b"B" + struct.pack("<Q", len(value)) + value)
    return h.hexdigest()


def main(path):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    meta = dict(db.execute("SELECT key, value FROM meta"))
    config = json.loads(meta["config"])
    kl = [r[0] for r in db.execute(
        "SELECT kl FROM positions WHERE comparison = 'diff' AND scored = 1")]
    print(json.dumps({
        "format": meta["format"],
        "chunk": config["chunk"],
        "n_scored": len(kl),
        "kl_mean": sum(kl) / len(kl) if kl else None,
        "integrity_stored": meta.get("integrity_sha256"),
        "integrity_recomputed": integrity(db),
    }))


if __name__ == "__main__":
    main(sys.argv[1])
