-- graft state, version 1 (SQLite). Times are Unix microseconds.
CREATE TABLE approvals (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    id           TEXT    NOT NULL UNIQUE,
    operation    TEXT    NOT NULL,
    input        TEXT    NOT NULL,
    input_digest TEXT    NOT NULL,
    requester    TEXT    NOT NULL,
    status       TEXT    NOT NULL,
    decider      TEXT    NOT NULL DEFAULT '',
    reason       TEXT    NOT NULL DEFAULT '',
    channel      TEXT    NOT NULL DEFAULT '',
    created_at   INTEGER NOT NULL,
    decided_at   INTEGER,
    consumed_at  INTEGER
);
CREATE INDEX approvals_by_status ON approvals (status, seq);

CREATE TABLE audit_log (
    id             INTEGER PRIMARY KEY AUTOINCREMENT,
    at             INTEGER NOT NULL,
    identity       TEXT    NOT NULL,
    operation      TEXT    NOT NULL,
    input_digest   TEXT    NOT NULL,
    result         TEXT    NOT NULL,
    correlation_id TEXT    NOT NULL,
    details        TEXT    NOT NULL DEFAULT '{}'
);
CREATE INDEX audit_log_by_time ON audit_log (at);

CREATE TABLE rate_counters (
    key          TEXT    PRIMARY KEY,
    window_start INTEGER NOT NULL,
    n            INTEGER NOT NULL
);

CREATE TABLE compilations (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    branch       TEXT    NOT NULL,
    commit_sha   TEXT    NOT NULL,
    added        INTEGER NOT NULL,
    changed      INTEGER NOT NULL,
    removed      INTEGER NOT NULL,
    unchanged    INTEGER NOT NULL,
    problems     INTEGER NOT NULL,
    full_rebuild INTEGER NOT NULL,
    took_ms      INTEGER NOT NULL,
    at           INTEGER NOT NULL
);
CREATE INDEX compilations_by_branch ON compilations (branch, id);

CREATE TABLE tokens (
    name       TEXT    PRIMARY KEY,
    hash       TEXT    NOT NULL UNIQUE,
    scopes     TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE db_rows (
    collection TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    data       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    PRIMARY KEY (collection, id)
);
