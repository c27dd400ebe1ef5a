-- PostgreSQL twin of migrations/sqlite/0002. A value must be JSON (the cast fails otherwise).
create table system_setting (
    name text collate "C" primary key not null,
    value text collate "C" not null check (value::jsonb is not null),
    version bigint not null default 1,
    updated_by text collate "C",
    created_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
    updated_at text collate "C" not null default (to_char(now() at time zone 'utc', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
);
