-- PostgreSQL twin of migrations/sqlite/0006.
create table execution (
    id bigserial primary key,
    caller text collate "C" not null,
    caller_kind text collate "C" not null,
    source text collate "C" not null,
    provider text collate "C" not null,
    language text collate "C" not null,
    status text collate "C" not null,
    exit_code bigint,
    duration_ms bigint not null,
    code_sha256 text collate "C" not null,
    input_bytes bigint not null,
    output_bytes bigint not null,
    error text collate "C",
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
create index execution_created_at on execution (created_at);
