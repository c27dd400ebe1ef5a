-- API keys for agents and scripts (REST execute API, RAGFlow-compatible endpoints).
-- Only a SHA-256 of the key is stored: keys are 240-bit random strings, so a fast hash is
-- enough, and the key itself is shown once at creation. Revoked keys stay for the record.
create table api_key (
    id integer primary key autoincrement,
    name text not null,
    prefix text not null,
    key_hash text not null unique,
    scopes text not null check (json_valid(scopes)),
    created_by text not null,
    last_used_at text,
    revoked_at text,
    created_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')),
    updated_at text not null default (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
);
-- A name identifies a live key in history and audit: no two live keys share one.
create unique index api_key_live_name on api_key (name) where revoked_at is null;
