-- PostgreSQL twin of migrations/sqlite/0005.
create table api_key (
    id bigserial primary key,
    name text collate "C" not null,
    prefix text collate "C" not null,
    key_hash text collate "C" not null unique,
    scopes text collate "C" not null check (scopes::jsonb is not null),
    created_by text collate "C" not null,
    last_used_at text collate "C",
    revoked_at text collate "C",
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
create unique index api_key_live_name on api_key (name) where revoked_at is null;
