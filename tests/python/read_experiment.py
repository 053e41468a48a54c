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
# After those: each plug-in analysis' table by name, then a sweep's or a floor's tables, where
# the file has them.
KIND_TABLES = [("sweep_positions", "chunk, comparison, mask, pos"),
               ("sweep_flips", "chunk, comparison, mask"),
               ("floor_patterns", "group_index"), ("floor_runs", "group_index, n_ubatch")]


def integrity(db):
    h = hashlib.sha256()
    present = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    analyses = [(n, "chunk, row") for n in sorted(present) if n.startswith("analysis_")]
    for name, order in TABLES + analyses + [t for t in KIND_TABLES if t[0] in present]:
        h.update(name.encode() + b"\n")
        where = " WHERE key != 'integrity_sha256'" if name == "meta" else ""
        cols = [r[1] for r in db.execute(f"PRAGMA table_info({name})")]
        typed = ", ".join(f"typeof({c}), {c}" for c in cols)
        for row in db.execute(f"SELECT {typed} FROM {name}{where} ORDER BY {order}"):
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
