-- PostgreSQL twin of migrations/sqlite/0010.
create table readiness (
    id bigint primary key check (id = 1),
    checked_at text collate "C" not null,
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
